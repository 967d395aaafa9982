import keras

from kdplug.storage import fingerprint


class CmlmObjective:
    """Conditional masked language modelling as a teacher fine-tuning
    objective, for kdplug's `TeacherFinetuner` (which caches the result).

    The teacher is a keras-hub `BertMaskedLM` (the loaded BERT backbone and
    a masked-LM head) fed by `cmlm_dataset`: its loss is the cross-entropy
    of the masked target word pieces (labels `-1`, unused mask positions,
    are ignored), averaged over the masked positions of the batch, as the
    reference code's `CrossEntropyLoss(ignore_index=-1)`. Its metric is the
    accuracy on the masked positions (`accuracy`, so that
    `teacher.finetune.early_stopping`'s `val_accuracy` watches it). The
    cache key adds `settings` (columns, lengths, masking rate, tokenizer)
    to the fine-tuning key, so a C-MLM teacher never shares an entry with a
    classifier fine-tuned on the same file.

    Args:
        settings: dict. What the C-MLM data depends on beyond the
            `data:` and `teacher.finetune` sections.

    Examples:

    ```python
    objective = CmlmObjective({"mask_rate": 0.15, ...})
    info = TeacherFinetuner(config, source, objective).run(mlm, train_ds, val_ds)
    ```
    """

    name = "cmlm"

    def __init__(self, settings):
        self.settings = dict(settings)

    def key(self, base_key):
        return fingerprint({"teacher": base_key, "objective": "cmlm",
                            "settings": self.settings})

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                          ignore_class=-1)

    def metrics(self):
        from kdplug_plugins.cmlm_seq2seq.masked_token_accuracy import MaskedTokenAccuracy

        return [MaskedTokenAccuracy()]

    def info(self, history, teacher, val_ds):
        info = {"train_accuracy": float(history["accuracy"][-1]),
                "train_loss": float(history["loss"][-1]),
                "validation_accuracy": None}
        if val_ds is not None:
            result = teacher.evaluate(val_ds, verbose=0, return_dict=True)
            info["validation_accuracy"] = float(result["accuracy"])
            info["validation_loss"] = float(result["loss"])
        return info
