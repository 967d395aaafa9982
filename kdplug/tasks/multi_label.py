from kdplug.tasks.task import Task


class MultiLabelTask(Task):
    """Multi-label classification: a set of labels per example (possibly
    empty), one sigmoid output per label.

    Labels are read as lists (JSONL, Parquet, datasets) or as one string
    split at `data.label_separator` (TSV / CSV: `PERSON|ORG`), names or ids,
    and become multi-hot vectors. The teacher is fine-tuned with binary
    cross-entropy. Soft term: per-label soft targets with temperature
    (`SoftTargetBinaryCrossEntropy`, `T^2 * mean_l BCE(sigma(t_l/T),
    sigma(s_l/T))`); hard term: binary cross-entropy against the gold set
    (`HardLabelBinaryCrossEntropy`). A label is predicted when its sigmoid
    is above 0.5. Metrics: micro F1 (primary), macro F1, exact match (the
    whole set right).

    Examples:

    ```yaml
    data:
      task: multi_label
      path: data/movie_entities.jsonl
      label_column: labels
      label_names: [DATE, GPE, NORP, ORG, PERSON, WORK_OF_ART]
    ```
    """

    name = "multi_label"
    label_kind = "multi"
    primary = "f1_micro"

    def objective(self):
        from kdplug.teacher.objectives import MultiLabelObjective

        return MultiLabelObjective()

    def soft_term(self, temperature, weight, class_mean=False, **options):
        from kdplug.terms import SoftTargetBinaryCrossEntropy

        return SoftTargetBinaryCrossEntropy(temperature, weight=weight, **options)

    def hard_term(self, weight, unlabelled=None, **options):
        from kdplug.terms import HardLabelBinaryCrossEntropy

        return HardLabelBinaryCrossEntropy(weight=weight, **options)

    def metrics(self, names, outputs, labels):
        from kdplug.evaluation.task_metrics import multi_label_metrics

        return multi_label_metrics(names, outputs, labels)
