import keras_hub
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from kdplug_plugins.cmlm_seq2seq.row_beam_sampler import RowBeamSampler

VOCABULARY, LENGTH, STOP = 7, 6, 1
# logits of the next token from (the cached state mod 5, the last token)
TABLE = np.random.default_rng(0).normal(0.0, 2.0, (5, VOCABULARY, VOCABULARY)).astype(
    "float32")


def next_token_logits(prompt, cache, index):
    """A toy decoder whose logits depend on a per-row state carried in the
    cache (the running sum of the row's tokens): a sampler that reorders
    prompts and cache rows differently gives other tokens."""
    (state,) = cache
    last = ops.take(prompt, index - 1, axis=1)
    state = state + ops.cast(last, "int32")
    logits = tf.gather_nd(TABLE, ops.stack([state % 5, last], axis=1))
    return logits, None, (state,)


def decode(sampler, batch=4, stop=(STOP,)):
    """`sampler`'s tokens for `batch` toy prompts (`stop`: None for none)."""
    prompt = np.zeros((batch, LENGTH), "int32")
    prompt[:, 0] = np.arange(batch) % VOCABULARY  # different first tokens
    mask = np.zeros((batch, LENGTH), bool)
    mask[:, 0] = True
    mask[0, 2] = True  # a prompt token inside the generated part is kept
    prompt[0, 2] = 4
    cache = (tf.zeros([batch], "int32"),)
    return np.asarray(tf.function(lambda p, c: sampler(
        next_token_logits, p, cache=c, index=1, mask=mask,
        stop_token_ids=stop and list(stop)))(prompt, cache))


@pytest.mark.slow
@pytest.mark.parametrize("beams", [2, 3, 5])
def test_same_tokens_as_keras_hubs_beam_sampler(beams):
    ours = decode(RowBeamSampler(num_beams=beams))
    theirs = decode(keras_hub.samplers.BeamSampler(num_beams=beams))
    np.testing.assert_array_equal(ours, theirs)
    assert ours[0, 2] == 4  # the masked position kept its token
    # without stop tokens every row runs to the end; still the same search
    np.testing.assert_array_equal(decode(RowBeamSampler(num_beams=beams), stop=None),
                                  decode(keras_hub.samplers.BeamSampler(num_beams=beams),
                                         stop=None))


def test_one_beam_is_greedy():
    np.testing.assert_array_equal(decode(RowBeamSampler(num_beams=1)),
                                  decode(keras_hub.samplers.GreedySampler()))


def test_beams_beat_greedy_on_summed_log_probability():
    """A hand-made case where the greedy first step loses: token 2 (p 0.6)
    leads to a flat next step, token 3 (p 0.4) to a certain one."""
    first = np.log([1e-6, 1e-6, 0.6, 0.4, 1e-6]).astype("float32")
    flat = np.log([0.2] * 5).astype("float32")
    sure = np.log([1e-6, 1 - 4e-6, 1e-6, 1e-6, 1e-6]).astype("float32")

    def next(prompt, cache, index):
        last = ops.take(prompt, index - 1, axis=1)
        logits = tf.where(index == 1, first[None, :], tf.where(
            (last == 3)[:, None], sure[None, :], flat[None, :]))
        return logits, None, cache

    prompt = np.zeros((1, 3), "int32")
    mask = np.array([[True, False, False]])
    out = RowBeamSampler(num_beams=2)(next, prompt, index=1, mask=mask)
    greedy = keras_hub.samplers.GreedySampler()(next, prompt, index=1, mask=mask)
    assert np.asarray(out).tolist() == [[0, 3, 1]]  # 0.4 * 1.0 > 0.6 * 0.2
    assert np.asarray(greedy)[0, 1] == 2


def test_length_penalty_picks_the_longer_beam_by_hand():
    """Two beams: A stops at once (p 0.4), B runs 2, 2, 2, 2, [stop] (p 0.55,
    0.85, 0.85, 0.85, 1). Summed log probabilities favour A; GNMT's
    penalty with alpha 0.6 divides A's by ((5 + 2) / 6) ** 0.6 and B's by
    ((5 + 6) / 6) ** 0.6 (|Y| counts the start and the stop token) and
    favours B."""
    pad, stop, start, length = 0, 1, 4, 6
    step_one = np.log([1e-9, 0.4, 0.55, 0.05 - 2e-9, 1e-9]).astype("float32")
    again = np.log([1e-9, 0.15, 0.85, 1e-9, 1e-9]).astype("float32")
    ending = np.log([1e-9, 1.0 - 4e-9, 1e-9, 1e-9, 1e-9]).astype("float32")
    finished = np.log([1.0 - 4e-9, 1e-9, 1e-9, 1e-9, 1e-9]).astype("float32")

    def next(prompt, cache, index):
        last = ops.take(prompt, index - 1, axis=1)
        done = ops.any(prompt[:, 1:] == stop, axis=1)  # then [PAD] only
        logits = tf.where(index == 1, step_one[None, :], tf.where(
            index == length - 1, ending[None, :], again[None, :]))
        logits = tf.where(done[:, None] | (last == pad)[:, None], finished[None, :], logits)
        return logits, None, cache

    prompt = np.zeros((1, length), "int32")
    prompt[0, 0] = start
    mask = np.zeros((1, length), bool)
    mask[0, 0] = True
    a = np.log(0.4)
    b = np.log(0.55) + 3 * np.log(0.85)
    assert a > b  # A wins on the plain sum ...
    assert b / ((5 + 6) / 6) ** 0.6 > a / ((5 + 2) / 6) ** 0.6  # ... B with the penalty

    def best(alpha):
        return np.asarray(RowBeamSampler(num_beams=2, length_penalty=alpha)(
            next, prompt, index=1, mask=mask, stop_token_ids=[stop])).tolist()

    assert best(0.0) == [[start, stop, pad, pad, pad, pad]]
    assert best(0.6) == [[start, 2, 2, 2, 2, stop]]


def test_config_and_bad_arguments():
    sampler = RowBeamSampler(num_beams=3, length_penalty=0.6, temperature=2.0)
    config = sampler.get_config()
    assert (config["num_beams"], config["length_penalty"], config["temperature"]) == (
        3, 0.6, 2.0)
    with pytest.raises(ValueError, match="num_beams must be an integer >= 1, got 0"):
        RowBeamSampler(num_beams=0)
    with pytest.raises(ValueError, match="length_penalty must be >= 0, got -1"):
        RowBeamSampler(length_penalty=-1)
