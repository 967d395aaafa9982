import json
import os
import time

import keras

from kdplug.finetune import TeacherFinetuner
from kdplug.fingerprint import fingerprint
from kdplug.schedules import make_optimizer
from kdplug_plugins.mtdnn.metrics import predict_outputs
from kdplug_plugins.mtdnn.metrics import task_metrics


class RegressionTeacherFinetuner(TeacherFinetuner):
    """`TeacherFinetuner` for a one-output regression teacher (squared error).

    Same cache as the classification fine-tuner (weights only, under
    `$KDPLUG_CACHE_DIR/teachers/<key>/`, reused by later runs); the key adds
    the objective, so a regression teacher never collides with a
    classification one on the same file.

    Args:
        config: the `ExperimentConfig` (its `data` the task's data section,
            its `seed` the ensemble member's seed).
        source: the resolved teacher source.
        log: a `print`-like function.

    Examples:

    ```python
    finetuner = RegressionTeacherFinetuner(member_config, source)
    info = finetuner.run(teacher, train_ds, val_ds)   # val Pearson / Spearman
    ```
    """

    def key(self):
        return fingerprint({"teacher": super().key(), "objective": "regression_mse"})

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
            loss=keras.losses.MeanSquaredError(),
            jit_compile=jit_compile,
        )
        self.log(f"teacher: fine-tuning (regression) for {ft.epochs} epoch(s), "
                 f"{steps} steps")
        start = time.perf_counter()
        history = teacher.fit(
            train_ds, epochs=ft.epochs, verbose=self.config.training.verbose,
            shuffle=False,
        )
        info = {
            "seconds": time.perf_counter() - start,
            "train_mse": float(history.history["loss"][-1]),
            "validation": None,
        }
        if val_ds is not None:
            outputs, labels = predict_outputs(teacher, val_ds)
            info["validation"] = task_metrics("regression", outputs, labels)
        os.makedirs(self.cache_dir, exist_ok=True)
        tmp = self.weights_path + ".tmp.weights.h5"
        teacher.save_weights(tmp)
        os.replace(tmp, self.weights_path)
        with open(info_path, "w") as f:
            json.dump(info, f)
        self.log(f"teacher: cached fine-tuned weights in {self.cache_dir}")
        return dict(info, cached=False)
