"""One worker of a tiny multi-worker distillation run (for tests).

Run as `python -m kdplug.testing.multi_worker_script OUT.npz` in each worker
process with `TF_CONFIG` set: it builds a tiny teacher and student under
`MultiWorkerMirroredStrategy`, trains them with `CustomLoopTrainer` on the
toy task (global batch `GLOBAL_BATCH`) and writes the student's final weights
and the per-epoch history to `OUT.npz`. `train(strategy=None, use_fit=True)`
is the single-process reference (`Distiller.fit` on one device, same data,
same global batch).

Examples:

```python
# in a test: launch two workers with TF_CONFIG pointing at two local ports,
# wait (with a timeout), then compare their weights with
weights, history = train(use_fit=True)
```
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from kdplug import Distiller  # noqa: E402
from kdplug import testing  # noqa: E402
from kdplug.terms import HardLabelCrossEntropy  # noqa: E402
from kdplug.terms import SoftTargetCrossEntropy  # noqa: E402
from kdplug.training.custom_loop import CustomLoopTrainer  # noqa: E402
from kdplug.training.custom_loop import is_chief  # noqa: E402

NUM_EXAMPLES = 64
GLOBAL_BATCH = 16
EPOCHS = 2
LEARNING_RATE = 1e-2
CLIPNORM = 0.01  # below the gradient norm (~0.05): every step is clipped


def build(strategy):
    """A tiny trained-from-scratch teacher/student pair and its optimizer,
    created under `strategy.scope()`."""
    with strategy.scope():
        teacher = testing.tiny_bert_classifier(num_layers=1, seed=1)
        student = testing.tiny_bert_classifier(num_layers=1, seed=2)
        distiller = Distiller(student, teacher, [
            SoftTargetCrossEntropy(2.0, weight=0.5), HardLabelCrossEntropy(weight=0.5)])
        optimizer = keras.optimizers.Adam(LEARNING_RATE, global_clipnorm=CLIPNORM)
    return distiller, optimizer


def dataset():
    return testing.toy_dataset(NUM_EXAMPLES, GLOBAL_BATCH, seed=3)


def train(strategy=None, use_fit=False, backup_dir=None):
    """Trains; returns `(student weights, history)`."""
    strategy = strategy or tf.distribute.get_strategy()
    distiller, optimizer = build(strategy)
    if use_fit:
        distiller.compile(
            optimizer=optimizer, jit_compile=False,
            metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
        history = distiller.fit(dataset(), epochs=EPOCHS, verbose=0).history
    else:
        trainer = CustomLoopTrainer(distiller, optimizer, strategy)
        history = trainer.fit(dataset(), epochs=EPOCHS, backup_dir=backup_dir)
    weights = [w.numpy() for w in distiller.student.weights]
    return weights, {k: [float(v) for v in vals] for k, vals in history.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the .npz to write")
    parser.add_argument("--backup-dir", default=None)
    args = parser.parse_args(argv)

    # The strategy first: it must exist before other TensorFlow work.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    weights, history = train(strategy, backup_dir=args.backup_dir)
    np.savez(args.out, history=json.dumps(history),
             replicas=strategy.num_replicas_in_sync, chief=is_chief(strategy),
             **{f"w{i}": w for i, w in enumerate(weights)})
    # A last collective so that no worker leaves while another still needs
    # it, then exit without TensorFlow's teardown, which can keep a
    # multi-worker process alive for tens of seconds after its work is done.
    barrier = tf.function(lambda: strategy.run(lambda: tf.constant(1.0)))
    strategy.reduce("SUM", barrier(), axis=None)
    time.sleep(0.5)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
