import keras

from kdplug.terms.projected_hidden_mse import ProjectedHiddenMSE


@keras.saving.register_keras_serializable(package="kdplug")
class EmbeddingMSE(ProjectedHiddenMSE):
    """TinyBERT's embedding-layer loss `MSE(E_S W_e, E_T)` (Jiao et al. 2020).

    `ProjectedHiddenMSE` on the single pair `("embeddings", "embeddings")`:
    the student's embedding-layer output is mapped to the teacher's width by
    a learned `Projection` `W_e` (only when the widths differ), and the
    squared error is averaged over the teacher's units and the example's
    valid tokens:

    `loss_i = sum_l m_il mean_n ((E_S,il W_e)_n - E_T,iln)^2 / sum_l m_il`

    With `shared_projection`, `W_e` is that layer: the TinyBERT reference
    code applies the same `fit_dense` to the embeddings and to every
    layer's hidden states (give the same `Projection` to the
    `ProjectedHiddenMSE`).

    Args:
        teacher_width: int. The teacher's embedding width.
        student_width: int. The student's embedding width.
        weight: float. Weight in the total loss.
        use_bias: bool. Whether `W_e` has a bias (own projection only).
        shared_projection: None (an own `W_e`) or a `Projection` shared
            with other terms; see `ProjectedHiddenMSE`.
        teacher_tap, student_tap: str. The taps compared
            (`"embeddings"` by default).
        name: str. Defaults to `"embedding_mse"`.

    Examples:

    ```python
    term = EmbeddingMSE(teacher_width=16, student_width=8)
    per_example = term({"embeddings": t}, {"embeddings": s},
                       {"padding_mask": mask})
    fit_dense = Projection(output_dim=16, input_dim=8, name="fit_dense")
    term = EmbeddingMSE(teacher_width=16, student_width=8,
                        shared_projection=fit_dense)
    ```
    """

    default_name = "embedding_mse"

    def __init__(self, teacher_width, student_width, weight=1.0, use_bias=True,
                 teacher_tap="embeddings", student_tap="embeddings", name=None,
                 **kwargs):
        kwargs.pop("pairs", None)
        kwargs.pop("widths", None)
        super().__init__(
            [(teacher_tap, student_tap)], [(teacher_width, student_width)],
            weight=weight, use_bias=use_bias, name=name, **kwargs,
        )
        self.teacher_width = int(teacher_width)
        self.student_width = int(student_width)

    @classmethod
    def from_models(cls, teacher, student, teacher_tap="embeddings",
                    student_tap="embeddings", **kwargs):
        """Builds the term with widths read from `tap_width()` of both models."""
        return cls(teacher.tap_width(teacher_tap), student.tap_width(student_tap),
                   teacher_tap=teacher_tap, student_tap=student_tap, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.pop("pairs")
        config.pop("widths")
        (t_tap, s_tap), = self.pairs
        config.update(
            {
                "teacher_width": self.teacher_width,
                "student_width": self.student_width,
                "teacher_tap": t_tap,
                "student_tap": s_tap,
            }
        )
        return config
