import keras_hub
import numpy as np
import pytest

from kdplug import testing

from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder

from cmlm_helpers import tokenizer  # noqa: F401  (a fixture)


def test_teacher_and_student_layouts_line_up(tokenizer):
    encoder = Seq2SeqEncoder(tokenizer, max_source_length=3, max_target_length=4,
                             teacher_length=12)
    cls, sep, pad = tokenizer.cls_token_id, tokenizer.sep_token_id, 0
    src = encoder.tokenize(["good movie"])[0]
    tgt = encoder.tokenize(["the movie was very good"])[0][:4]  # cut to 4
    teacher = encoder.teacher_arrays(["good movie"], ["the movie was very good"])
    row = [cls] + src + [sep] + tgt + [sep]
    assert teacher["token_ids"][0].tolist() == row + [pad] * (12 - len(row))
    assert teacher["segment_ids"][0].tolist() == [0] * 4 + [1] * 5 + [0] * 3
    assert teacher["target_mask"][0].tolist() == [0] * 4 + [1] * 5 + [0] * 3
    assert teacher["padding_mask"][0].tolist() == [1] * 9 + [0] * 3
    x, y = encoder.student_arrays(["good movie"], ["the movie was very good"])
    assert x["encoder_token_ids"][0].tolist() == src + [pad]
    assert x["encoder_padding_mask"][0].tolist() == [1, 1, 0]
    assert x["decoder_token_ids"][0].tolist() == [cls] + tgt
    assert y[0].tolist() == tgt + [sep]
    # label j is the teacher's target position (source + 2) + j
    start = teacher["target_mask"][0].argmax()
    assert teacher["token_ids"][0, start:start + 5].tolist() == y[0].tolist()
    short_x, short_y = encoder.student_arrays(["fun"], ["fun"])
    assert short_y[0].tolist() == encoder.tokenize(["fun"])[0] + [sep, -1, -1, -1]
    assert short_x["decoder_padding_mask"][0].tolist() == [1, 1, 0, 0, 0]


def test_detokenize_and_normalize():
    tokenizer = keras_hub.tokenizers.BertTokenizer(
        vocabulary=testing.toy_vocabulary(), lowercase=True)
    encoder = Seq2SeqEncoder(tokenizer, 4, 4, 11)
    ids = encoder.tokenize(["The movie was GOOD"])[0]
    assert encoder.detokenize([[tokenizer.cls_token_id] + ids
                               + [tokenizer.sep_token_id, 0]]) == ["the movie was good"]
    assert encoder.normalize(["The  Movie"]) == ["the movie"]
    with pytest.raises(ValueError, match="teacher_length"):
        Seq2SeqEncoder(tokenizer, 4, 4, 10)
    assert np.asarray(encoder.source_arrays([])["encoder_token_ids"]).shape == (0, 4)
