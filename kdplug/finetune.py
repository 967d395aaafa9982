"""Fine-tuning a teacher on the task, cached on disk by content."""

import json
import os
import time

import keras

from kdplug.fingerprint import cache_root
from kdplug.fingerprint import fingerprint
from kdplug.fingerprint import fingerprint_path
from kdplug.report import accuracy
from kdplug.schedules import make_optimizer


class TeacherFinetuner:
    """Fine-tunes a teacher once; later runs load the cached weights.

    The cache key hashes the teacher's source files, the data file, the data
    and fine-tuning settings and the seed, so any change retrains. Only
    weights are cached (never optimizer state), under
    `$KDPLUG_CACHE_DIR/teachers/<key>/`.

    Args:
        config: the `ExperimentConfig`.
        source: the resolved teacher source (folder, file or preset).

    Examples:

    ```python
    finetuner = TeacherFinetuner(config, source)
    info = finetuner.run(teacher, train_ds, val_ds)
    ```
    """

    def __init__(self, config, source, log=print):
        self.config = config
        self.source = source
        self.log = log
        ft = config.teacher.finetune
        root = ft.cache_dir and config.resolve_path(ft.cache_dir) or cache_root()
        self.cache_dir = os.path.join(root, "teachers", self.key())

    def key(self):
        cfg = self.config
        data_path = cfg.data.path
        if not data_path.startswith("tfds:"):
            data_path = fingerprint_path(cfg.resolve_path(data_path))
        ft = dict(vars(cfg.teacher.finetune))
        ft.pop("cache_dir")
        return fingerprint({
            "teacher": fingerprint_path(self.source),
            "dropout": cfg.teacher.dropout,
            "data": data_path,
            "data_config": vars(cfg.data),
            "finetune": ft,
            "seed": cfg.seed,
        })

    @property
    def weights_path(self):
        return os.path.join(self.cache_dir, "model.weights.h5")

    def run(self, teacher, train_ds, val_ds, jit_compile=True):
        """Fine-tunes (or loads) `teacher` in place; returns an info dict."""
        info_path = os.path.join(self.cache_dir, "info.json")
        if os.path.isfile(self.weights_path) and os.path.isfile(info_path):
            teacher.load_weights(self.weights_path)
            with open(info_path) as f:
                info = json.load(f)
            self.log(f"teacher: loaded fine-tuned weights from {self.cache_dir}")
            return dict(info, cached=True)
        ft = self.config.teacher.finetune
        steps = int(train_ds.cardinality()) * ft.epochs
        teacher.compile(
            optimizer=make_optimizer(
                "adamw", ft.learning_rate, steps, ft.warmup_ratio, 0.01
            ),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
            jit_compile=jit_compile,
        )
        self.log(f"teacher: fine-tuning for {ft.epochs} epoch(s), {steps} steps")
        start = time.perf_counter()
        history = teacher.fit(
            train_ds, epochs=ft.epochs, verbose=self.config.training.verbose,
            shuffle=False,  # the dataset reshuffles itself every epoch
        )
        info = {
            "seconds": time.perf_counter() - start,
            "train_accuracy": float(history.history["accuracy"][-1]),
            "validation_accuracy": accuracy(teacher, val_ds) if val_ds else None,
        }
        os.makedirs(self.cache_dir, exist_ok=True)
        tmp = self.weights_path + ".tmp.weights.h5"
        teacher.save_weights(tmp)
        os.replace(tmp, self.weights_path)
        with open(info_path, "w") as f:
            json.dump(info, f)
        self.log(f"teacher: cached fine-tuned weights in {self.cache_dir}")
        return dict(info, cached=False)
