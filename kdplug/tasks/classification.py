from kdplug.tasks.task import Task


class ClassificationTask(Task):
    """Single-label classification (sentences or sentence pairs): a class
    id per example, a softmax head.

    Soft term: Hinton et al.'s temperature-scaled soft-target cross-entropy
    (`SoftTargetCrossEntropy`, `T^2 * sum_c p_c * -log q_c`; `class_mean`
    divides by the classes, PKD's reference scale); hard term: cross-entropy
    with the gold class (`HardLabelCrossEntropy`; `unlabelled` decides what
    augmented examples without a label contribute). Metrics: accuracy,
    F1 (macro / micro), Matthews correlation.

    Examples:

    ```yaml
    data:
      task: classification   # the default
      label_column: label
    ```
    """

    name = "classification"
    label_kind = "class"
    primary = "accuracy"
    compiled_metrics = ("accuracy",)

    def objective(self):
        from kdplug.teacher.objectives import ClassificationObjective

        return ClassificationObjective()

    def soft_term(self, temperature, weight, class_mean=False, **options):
        from kdplug.terms import SoftTargetCrossEntropy

        return SoftTargetCrossEntropy(temperature, weight=weight,
                                      class_mean=class_mean, **options)

    def hard_term(self, weight, **options):
        from kdplug.terms import HardLabelCrossEntropy

        return HardLabelCrossEntropy(weight=weight, **options)

    def metrics(self, names, outputs, labels):
        from kdplug.evaluation.task_metrics import classification_metrics

        return classification_metrics(names, outputs, labels)

    def keras_metrics(self):
        import keras

        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
