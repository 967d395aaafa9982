import keras

from kdplug.terms.soft_target_cross_entropy import SoftTargetCrossEntropy
from kdplug.terms.token_positions import mean_over_labelled


@keras.saving.register_keras_serializable(package="kdplug")
class TokenSoftCrossEntropy(SoftTargetCrossEntropy):
    """Soft-target cross-entropy of per-token logits (token classification).

    Reads `(batch, seq, C)` logits of both models (a
    `BertClassifier(per_token=True)`) and the batch's `(batch, seq)` labels,
    which mark the positions to compare: `>= 0` on the first word piece of
    every word, `-1` elsewhere (padding, [CLS]/[SEP], continuation pieces;
    `kdplug.data.token_alignment`). Per example, with `P` its labelled
    positions:

    ```
    loss = T^2 / |P| * sum_{j in P} sum_c softmax(t_j/T)_c * -log softmax(s_j/T)_c
    ```

    and 0 for an example with no labelled position. Each example weighs the
    same whatever its number of words. The label's value is not read (only
    whether it is `>= 0`), so transfer-set examples need their positions
    marked with any id `>= 0`. The temperature is a non-trainable variable
    (schedulable), as in `SoftTargetCrossEntropy`.

    Args:
        temperature: float. Softmax temperature `T` (> 0).
        weight: float. Weight in the total loss.
        tap: str. The per-token logits tap to compare.
        class_mean: bool. Divide by the number of classes `C` too.

    Examples:

    ```python
    term = TokenSoftCrossEntropy(temperature=2.0, weight=0.5)
    per_example = term({"logits": t}, {"logits": s}, {"labels": labels})
    # t, s: (batch, seq, C); labels: (batch, seq), -1 where not compared
    ```
    """

    def __init__(self, temperature=1.0, weight=1.0, tap="logits", name=None,
                 class_mean=False, **kwargs):
        super().__init__(temperature=temperature, weight=weight, tap=tap,
                         name=name or "token_soft_ce", class_mean=class_mean,
                         **kwargs)

    def call(self, teacher, student, batch):
        per_position = super().call(teacher, student, batch)
        return mean_over_labelled(per_position, batch)
