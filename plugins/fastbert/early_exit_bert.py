from kdplug.errors import KdplugError
from kdplug.students import force_trainable
from kdplug.students import truncated_bert
from kdplug_plugins.fastbert.early_exit_classifier import EarlyExitBertClassifier


def early_exit_bert(teacher, num_classes, branch_dim=None, branch_dropout=0.1,
                    dropout=0.1, branch_pooling="attention", branch_heads=2,
                    branch_form="paper"):
    """A FastBERT model initialised from a fine-tuned `BertClassifier`.

    The backbone (every layer), pooler and final classifier are copied from
    `teacher` into a freshly built `BertClassifier` (explicit arguments, never
    the frozen teacher's `get_config()`), and new exit branches are added
    after layers `1 .. L-1`. Every weight is trainable on return; the
    `fastbert` method's stage freezes the copied part.

    Args:
        teacher: a fine-tuned `BertClassifier`.
        num_classes: int. Must equal the teacher's (its head is reused).
        branch_dim: int. Width of the branches (default hidden).
        branch_dropout: float.
        branch_pooling: `"attention"` (the paper's branch), `"cls"` or
            `"mean"` (see `ExitBranch`). The copied classifier pools as the
            teacher does (`BertClassifier`'s `pooling`).
        branch_heads: int. Attention heads per branch.
        branch_form: `"paper"` (tanh after the projection, no residual) or
            `"residual"` (kdplug 0.1), see `ExitBranch`.
        dropout: float. Dropout of the copied classifier.

    Examples:

    ```python
    student = early_exit_bert(teacher, num_classes=2)
    ```
    """
    if teacher.num_classes != num_classes:
        raise KdplugError(
            f"fastbert reuses the teacher's classifier: it has "
            f"{teacher.num_classes} classes, the data {num_classes}"
        )
    bert = truncated_bert(teacher, list(range(teacher.num_layers)), num_classes,
                          copy_head=True, dropout=dropout)
    student = EarlyExitBertClassifier(bert, branch_dim=branch_dim,
                                      branch_dropout=branch_dropout,
                                      branch_pooling=branch_pooling,
                                      branch_heads=branch_heads,
                                      branch_form=branch_form)
    return force_trainable(student)
