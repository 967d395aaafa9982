"""Test helpers for `kdplug.models.EarlyExitBertClassifier` (FastBERT)."""

import numpy as np


def spread_branch_confidences(model, x, seed=0):
    """Sets every exit branch so its confidence varies between examples.

    Untrained branches are near-uniform and a random tiny BERT's [CLS]
    states barely differ between examples, so adaptive inference would exit
    every example at the same layer. Each branch's tanh layer is set to
    standardise layer `i`'s [CLS] states over `x` (random directions), its
    output layer to random weights of scale 2: confidences then vary and
    examples exit at different layers for thresholds in between.

    Args:
        model: an `EarlyExitBertClassifier`.
        x: a batch of its inputs.
        seed: int. Seeds the random weights.

    Returns:
        `model`, changed in place.

    Examples:

    ```python
    student = spread_branch_confidences(early_exit_bert(teacher, 2), x)
    logits, layers = student.predict_adaptive(x, speed=0.5)  # mixed layers
    ```
    """
    rng = np.random.default_rng(seed)
    names = [f"hidden/{i}" for i in range(1, model.num_layers)]
    hidden = model.taps(x, names)
    for branch, name in zip(model.branches, names):
        c = np.asarray(branch.pool(hidden[name], x["padding_mask"]))
        w = rng.normal(size=(c.shape[1], branch.hidden_dim))
        w /= c.std(0).mean() * np.sqrt(c.shape[1])
        branch.dense.set_weights([w.astype("float32"),
                                  (-c.mean(0) @ w).astype("float32")])
        k, b = branch.out.get_weights()
        branch.out.set_weights([rng.normal(0, 2.0, k.shape).astype("float32"), b])
    return model
