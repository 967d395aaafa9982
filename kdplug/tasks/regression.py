from kdplug.tasks.task import Task


class RegressionTask(Task):
    """Regression: a float target per example, a one-output head (e.g. the
    bundled data's `score`, STS-B-like).

    The teacher is fine-tuned with mean squared error. Soft term: squared
    error between the student's and the teacher's predictions (`LogitMSE`
    on the one output; a temperature has no meaning for a number and is
    ignored), as PKD's and TinyBERT's reference code distil STS-B; hard
    term: squared error against the gold target (`HardLabelMSE`). Metrics:
    Pearson (primary), Spearman, MSE.

    Examples:

    ```yaml
    data:
      task: regression
      label_column: score
    evaluation: {metrics: [pearson, spearman]}
    ```
    """

    name = "regression"
    label_kind = "float"
    primary = "pearson"

    def num_outputs(self, data):
        return 1

    def objective(self):
        from kdplug.teacher.objectives import RegressionObjective

        return RegressionObjective()

    def soft_term(self, temperature, weight, class_mean=False, **options):
        from kdplug.terms import LogitMSE

        options.setdefault("name", "soft_mse")
        return LogitMSE(weight=weight, **options)

    def hard_term(self, weight, unlabelled=None, **options):
        from kdplug.terms import HardLabelMSE

        return HardLabelMSE(weight=weight, **options)

    def metrics(self, names, outputs, labels):
        from kdplug.evaluation.task_metrics import regression_metrics

        return regression_metrics(names, outputs, labels)
