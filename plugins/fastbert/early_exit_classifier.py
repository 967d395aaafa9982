import math

import keras
import tensorflow as tf
from keras import ops

from kdplug import keys
from kdplug.errors import KdplugError
from kdplug.models import TappedClassifier
from kdplug.models import check_tap_names
from kdplug.models import embed_inputs
from kdplug.models import transformer_offers
from kdplug_plugins.fastbert.exit_branch import ExitBranch

# Normalised entropy never exceeds 1 analytically; float rounding can push it
# a hair above, so it is clipped below 1 and `speed >= 1` exits every example.
_MAX_UNCERTAINTY = 1.0 - 1e-6


def normalized_entropy(logits):
    """`H(softmax(logits)) / log(num_classes)`, in `[0, 1]`, per example."""
    logits = ops.cast(logits, "float32")
    log_p = ops.log_softmax(logits, axis=-1)
    entropy = -ops.sum(ops.exp(log_p) * log_p, axis=-1)
    num_classes = int(logits.shape[-1])
    return ops.minimum(entropy / math.log(num_classes), _MAX_UNCERTAINTY)


def _from_bert(name):
    return property(lambda self: getattr(self.bert, name),
                    doc=f"The wrapped classifier's `{name}`.")


@keras.saving.register_keras_serializable(package="kdplug")
class EarlyExitBertClassifier(TappedClassifier):
    """FastBERT (Liu et al., 2020): a BERT classifier with an exit branch
    after every transformer layer but the last.

    Wraps a fine-tuned `BertClassifier` (backbone, pooler and final
    classifier, the paper's "teacher classifier") and adds one `ExitBranch`
    ("student classifier") on the output of layers `1 .. L-1`: by default
    the paper's (a projection with tanh, one self-attention layer read at
    [CLS], and a tanh layer; `branch_pooling="attention"`,
    `branch_form="paper"`), kdplug 0.1's residual variant of it
    (`branch_form="residual"`), or a head on the [CLS] state only
    (`branch_pooling="cls"`) or on the mean of the layer's real positions
    (`branch_pooling="mean"`, see `ExitBranch`). The final classifier
    pools as the wrapped classifier does (its `pooling`).
    `call()` returns the final classifier's logits (the full model), so
    evaluating it measures the full-depth accuracy.

    While the wrapped classifier is frozen (`model.bert.trainable = False`,
    what the `fastbert` method's self-distillation stage does) it runs in
    inference mode even under `training=True` (no dropout): its logits are
    then the fixed soft targets of the branches, exactly like a frozen
    teacher's, and are read from the student's own taps.

    Taps (1-based layer indices):
    - `branch_logits/<i>`, `i = 1 .. L-1`: branch `i`'s logits.
    - `logits`: the final classifier's logits.
    - every tap of the wrapped `BertClassifier` (`hidden/<i>`, `cls/<i>`, ...).

    Adaptive inference (`adaptive()`, `predict_adaptive()`,
    `adaptive_function()`, `export_adaptive()`): the layers run one at a
    time; after layer `i` every example whose branch has normalised entropy
    `H(p) / log(C)` below `speed` exits with that branch's logits and leaves
    the batch (`tf.boolean_mask`), so deeper layers only process the
    examples still undecided. Results are scattered back to the original
    order together with the number of layers each example ran. `speed = 0`
    never exits early (the final classifier's logits for every example);
    `speed >= 1` exits every example at layer 1.

    Args:
        bert: a `BertClassifier` (its backbone and final classifier).
        branch_dim: int. Width of each branch; default the backbone's
            hidden size (the paper: 128).
        branch_dropout: float. Dropout inside the branches.
        branch_pooling: `"attention"` (default), `"cls"` or `"mean"`.
        branch_heads: int. Attention heads of each branch.
        branch_form: `"paper"` (default) or `"residual"` (kdplug 0.1), see
            `ExitBranch`. A model saved before this argument existed has no
            `branch_form` in its config and loads as `"residual"`, the
            branch it was trained with.

    Examples:

    ```python
    model = EarlyExitBertClassifier(fine_tuned_bert_classifier)
    taps = model.taps(inputs, ["branch_logits/1", "logits"])
    logits, layers = model.predict_adaptive(inputs, speed=0.3)
    model.export_adaptive("fastbert_saved_model")
    ```
    """

    input_keys = keys.TOKEN_INPUTS
    nested_key = "bert"
    config_attributes = ("branch_dim", "branch_dropout", "branch_pooling", "branch_heads",
                         "branch_form")
    num_layers = _from_bert("num_layers")
    hidden_dim = _from_bert("hidden_dim")
    num_heads = _from_bert("num_heads")
    backbone = _from_bert("backbone")
    pooling = _from_bert("pooling")

    def __init__(self, bert, branch_dim=None, branch_dropout=0.0,
                 branch_pooling="attention", branch_heads=2, branch_form="paper",
                 **kwargs):
        super().__init__(**kwargs)
        if bert.num_classes < 2:
            raise KdplugError(
                "EarlyExitBertClassifier needs a classifier with >= 2 classes "
                f"(entropy-based exits), got num_classes={bert.num_classes}"
            )
        if bert.num_layers < 2:
            raise KdplugError("EarlyExitBertClassifier needs >= 2 layers")
        self.bert = bert
        self.num_classes = bert.num_classes
        self.branch_dim = int(branch_dim or bert.hidden_dim)
        self.branch_dropout = float(branch_dropout)
        self.branch_pooling = branch_pooling
        self.branch_heads = int(branch_heads)
        self.branch_form = branch_form
        self.branches = [
            ExitBranch(
                bert.hidden_dim, self.branch_dim, self.num_classes,
                dropout=self.branch_dropout, pooling=branch_pooling,
                num_heads=self.branch_heads, form=branch_form, name=f"branch_{i}",
            )
            for i in range(1, bert.num_layers)
        ]
        self._adaptive_fn = None
        self.built = True

    @classmethod
    def from_config(cls, config):
        # Saved before `branch_form` existed: the residual branch (kdplug 0.1).
        return super().from_config({"branch_form": "residual", **config})

    def branch_tap_names(self):
        return [f"branch_logits/{i}" for i in range(1, self.num_layers)]

    def available_taps(self):
        return self.bert.available_taps() + self.branch_tap_names()

    def tap_width(self, name):
        if name.startswith("branch_logits/"):
            return self.num_classes
        return self.bert.tap_width(name)

    def flops_per_example(self, sequence_length):
        """The full model's FLOPs: the wrapped classifier plus every branch."""
        return (self.bert.flops_per_example(sequence_length)
                + sum(b.flops_per_example(sequence_length) for b in self.branches))

    def taps(self, inputs, names=("logits",), training=False):
        names = check_tap_names(
            self, names, f"branch_logits/1..{self.num_layers - 1}, "
            + transformer_offers(self.num_layers))
        branch_names = names & set(self.branch_tap_names())
        layers = sorted(int(n.split("/")[1]) for n in branch_names)
        source = "cls" if self.branch_pooling == "cls" else "hidden"  # mean: hidden
        bert_names = (names - branch_names) | {f"{source}/{i}" for i in layers}
        # A frozen wrapped classifier is the self-distillation teacher: it
        # always runs in inference mode.
        bert_training = bool(training) and self.bert.trainable
        out = self.bert.taps(inputs, bert_names, training=bert_training)
        for i in layers:
            out[f"branch_logits/{i}"] = self.branches[i - 1](
                out[f"{source}/{i}"], padding_mask=inputs["padding_mask"],
                training=training,
            )
        return {n: out[n] for n in names}

    # ----------------------------------------------------------- adaptive

    def _embed(self, inputs):
        return embed_inputs(self.backbone, inputs)

    def _final_logits(self, x, padding_mask):
        return self.bert.classifier(self.bert.pooled_output(x, padding_mask))

    def adaptive(self, inputs, speed):
        """Layer-by-layer inference with per-example early exits (TF ops).

        Args:
            inputs: dict with int `token_ids`, `padding_mask` (and optionally
                `segment_ids`), `(batch, seq)`.
            speed: float scalar in `[0, 1]`, the normalised-entropy threshold.

        Returns:
            `(logits, layers)`: `(batch, num_classes)` float32 logits of the
            branch (or final classifier) each example exited at, and int32
            `(batch,)` the number of transformer layers it ran.
        """
        speed = tf.cast(speed, "float32")
        padding_mask = inputs["padding_mask"]
        x = self._embed(inputs)
        batch = tf.shape(padding_mask)[0]
        index = tf.range(batch)
        logits_out = tf.zeros([batch, self.num_classes], "float32")
        layers_out = tf.zeros([batch], "int32")
        blocks = self.backbone.transformer_layers
        for i, block in enumerate(blocks, start=1):
            x = block(x, padding_mask=padding_mask, training=False)
            if i < len(blocks):
                logits = tf.cast(self.branches[i - 1](
                    x, padding_mask=padding_mask), "float32")
                done = normalized_entropy(logits) < speed
            else:
                logits = tf.cast(self._final_logits(x, padding_mask), "float32")
                done = tf.ones_like(index, dtype="bool")
            where = tf.boolean_mask(index, done)[:, None]
            logits_out = tf.tensor_scatter_nd_update(
                logits_out, where, tf.boolean_mask(logits, done)
            )
            layers_out = tf.tensor_scatter_nd_update(
                layers_out, where, tf.fill(tf.shape(where)[:1], i)
            )
            if i < len(blocks):
                keep = tf.logical_not(done)
                x = tf.boolean_mask(x, keep)
                padding_mask = tf.boolean_mask(padding_mask, keep)
                index = tf.boolean_mask(index, keep)
        return logits_out, layers_out

    def adaptive_function(self):
        """A `tf.function` `(inputs, speed) -> {"logits", "layers"}` with an
        input signature (int32 `(None, None)` inputs, float32 scalar speed),
        traced once; what `export_adaptive` saves as `serving_default`."""
        if self._adaptive_fn is None:
            spec = {
                k: tf.TensorSpec([None, None], tf.int32, name=k)
                for k in keys.TOKEN_INPUTS
            }

            @tf.function(input_signature=[spec, tf.TensorSpec([], tf.float32,
                                                               name="speed")])
            def serve(inputs, speed):
                logits, layers = self.adaptive(inputs, speed)
                return {"logits": logits, "layers": layers}

            self._adaptive_fn = serve
        return self._adaptive_fn

    def predict_adaptive(self, inputs, speed):
        """`adaptive()` on numpy or tensor inputs; returns numpy
        `(logits, layers)`."""
        inputs = {
            k: tf.cast(inputs[k] if k in inputs else tf.zeros_like(
                inputs["token_ids"]), tf.int32)
            for k in keys.TOKEN_INPUTS
        }
        out = self.adaptive_function()(inputs, tf.constant(speed, tf.float32))
        return out["logits"].numpy(), out["layers"].numpy()

    def export_adaptive(self, path):
        """Saves the adaptive inference as a TF SavedModel.

        The `serving_default` signature takes `token_ids`, `segment_ids`,
        `padding_mask` (int32 `(batch, seq)`) and `speed` (float32 scalar)
        and returns `logits` and `layers`. Reload with
        `tf.saved_model.load(path).signatures["serving_default"]`.
        """
        module = tf.Module()
        module.model = self
        module.serve = self.adaptive_function()
        tf.saved_model.save(module, path,
                            signatures={"serving_default": module.serve})
        return path
