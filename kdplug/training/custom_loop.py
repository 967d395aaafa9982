"""A training loop without `fit`, for strategies where Keras 3 `fit` fails."""

import contextlib
import shutil
import tempfile

import keras
import tensorflow as tf

from kdplug.errors import KdplugError
from kdplug.training.clipping import clip_across_replicas
from kdplug.training.clipping import clipping_settings
from kdplug.training.metrics import update_step_metrics


class CustomLoopTrainer:
    """Trains a `Distiller` with `strategy.run` inside a `tf.function`.

    Keras 3 `fit` fails under `MultiWorkerMirroredStrategy` (keras-team/keras
    #20585); this loop does what `fit` does with the Distiller's own
    `compute_terms`, so the loss is the same weighted sum divided by the
    *global* batch size, and works under any `tf.distribute` strategy
    (default, one-device, mirrored, multi-worker, TPU).

    Per step, on every replica: `compute_terms` on the replica's slice of the
    global batch, gradients of the (loss-scaled) total, then
    `optimizer.apply`, whose TF backend all-reduces (sums) the gradients
    across replicas and workers. Logged values are `keras.metrics.Mean`s:
    `loss` and one per term, plus `metrics` on the student's logits, read
    across all replicas at the end of each epoch; the history has the same
    keys as `Distiller.fit`'s.

    Gradient clipping (`clipnorm`, `global_clipnorm`, `clipvalue` on the
    optimizer): Keras clips each replica's *partial* gradient before the
    all-reduce, so a clipped step differs from one device's. With
    `exact_clipping=True` (the default) and more than one replica, the trainer
    all-reduces the gradients itself, clips the global gradient as Keras on
    one device would (including its way of measuring embedding gradients,
    `IndexedSlices`, by their slices), and hands the optimizer `clipped / num_replicas` with its own
    clipping turned off for the duration of `fit`/`train_steps` (the optimizer's
    sum over replicas then restores the clipped gradient). Loss-scale
    optimizers and gradient accumulation keep Keras' behaviour.

    The distiller (student, teacher, term projections) and the optimizer must
    be created under `strategy.scope()`; the trainer builds the optimizer and
    its metrics there. Batches should split evenly over the replicas
    (`compute_terms` divides each replica's sum by `local_batch *
    num_replicas`): use a global batch size divisible by the number of
    replicas, and `drop_remainder=True` when the last batch is smaller.

    Args:
        distiller: a `kdplug.Distiller`.
        optimizer: a Keras optimizer; defaults to `distiller.optimizer` (set
            by `distiller.compile`).
        strategy: a `tf.distribute.Strategy`; defaults to the current one.
        metrics: Keras metrics `(labels, logits, mask)`, created under
            `strategy.scope()`; default: `SparseCategoricalAccuracy("accuracy")`.
            Examples with label `< 0` are masked out, as in `Distiller`.
        jit_compile: bool. XLA-compile each replica's forward and backward
            pass (the all-reduce and the update stay outside XLA).
        exact_clipping: bool. See above.

    Examples:

    ```python
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # reads TF_CONFIG
    with strategy.scope():
        teacher, student = load_teacher(...), build_student(...)
        distiller = Distiller(student, teacher, terms)
        optimizer = keras.optimizers.AdamW(5e-5)
    trainer = CustomLoopTrainer(distiller, optimizer, strategy)
    history = trainer.fit(train_ds, epochs=3, validation_data=val_ds)
    history["loss"], history["val_accuracy"]
    ```
    """

    def __init__(self, distiller, optimizer=None, strategy=None, metrics=None,
                 jit_compile=False, exact_clipping=True):
        self.strategy = strategy or tf.distribute.get_strategy()
        self.distiller = distiller
        self.optimizer = optimizer or getattr(distiller, "optimizer", None)
        if self.optimizer is None:
            raise KdplugError("CustomLoopTrainer needs an optimizer (or a compiled distiller)")
        self.resumed_epoch = None  # set by `fit`: the epochs a killed run had finished
        self.variables = list(distiller.trainable_variables)
        if not self.variables:
            raise KdplugError("the distiller has no trainable weights")
        self._check_created_in_scope()
        with self.strategy.scope():
            self.loss_metric = keras.metrics.Mean(name="loss")
            self.term_metrics = [keras.metrics.Mean(name=t.name) for t in distiller.terms]
            self.metrics = list(metrics) if metrics is not None else [
                keras.metrics.SparseCategoricalAccuracy(name="accuracy")
            ]
            if not self.optimizer.built:
                self.optimizer.build(self.variables)
        self.clipping = self._clipping_settings() if exact_clipping else None
        self._grads_fn = tf.function(self._replica_grads, jit_compile=True, autograph=False) \
            if jit_compile else self._replica_grads
        self._train_fn = tf.function(self._distributed_train_step, reduce_retracing=True,
                                     autograph=False)
        self._test_fn = tf.function(self._distributed_test_step, reduce_retracing=True,
                                    autograph=False)
        self.stop_training = False

    # ----------------------------------------------------------------- public

    def fit(self, dataset, epochs=1, steps_per_epoch=None, validation_data=None,
            callbacks=None, backup_dir=None, remove_backup=True, verbose=0):
        """Trains; returns `{key: [value per epoch]}` like `History.history`.

        Args:
            dataset: a `tf.data.Dataset` of `(features, labels)` batches of the
                *global* batch size (each replica gets its slice; each worker
                its share, auto-shard policy DATA).
            epochs: int.
            steps_per_epoch: int or None. None: one pass over `dataset` per
                epoch. Else that many batches per epoch from `dataset.repeat()`.
            validation_data: a dataset, evaluated after every epoch (`val_*`).
            callbacks: Keras callbacks; they receive `on_train_begin/end`,
                `on_epoch_begin/end` and `on_train_batch_begin/end` with the
                running metric means (e.g. `kdplug.training.callbacks.StopOnNaN`).
                `Callback.model` is the distiller; setting its
                `stop_training` ends training after the current step.
            backup_dir: a folder for per-epoch checkpoints (student, term
                weights, optimizer, epoch): an interrupted `fit` resumes
                from the last finished epoch (none is written after the
                epoch training ends with), and the folder is removed when
                `fit` returns (see `remove_backup`). Under multi-worker, the
                chief writes it and the other workers write to a temporary
                folder; all of them resume from it, so it must be a path
                every worker can read (a shared file system). Workers that
                would resume from different epochs raise a `KdplugError`
                instead of hanging.
            remove_backup: False keeps `backup_dir` when `fit` returns, for
                the caller to remove once it has stored what `fit` trained
                (a kill in between then resumes at the last epoch).
                `resumed_epoch` then holds the epochs a killed `fit` had
                finished (None when training started at the first epoch).
            verbose: 0 silent, else a progress bar per epoch.
        """
        dist = self._distribute(dataset.repeat() if steps_per_epoch else dataset)
        iterator = iter(dist) if steps_per_epoch else None
        checkpoint, start = self._restore(backup_dir)
        self.resumed_epoch = start or None
        batch_logs = bool(callbacks) or bool(verbose)
        callbacks = keras.callbacks.CallbackList(
            callbacks or [], add_history=False, add_progbar=bool(verbose),
            model=self.distiller, verbose=verbose, epochs=epochs,
            steps=steps_per_epoch,
        )
        history = {}
        self.stop_training = self.distiller.stop_training = False
        with self._optimizer_clipping_off():
            callbacks.on_train_begin()
            for epoch in range(start, epochs):
                self._reset()
                callbacks.on_epoch_begin(epoch)
                batches = (next(iterator) for _ in range(steps_per_epoch)) \
                    if steps_per_epoch else dist
                for step, batch in enumerate(batches):
                    callbacks.on_train_batch_begin(step)
                    self._train_fn(batch)
                    callbacks.on_train_batch_end(step, self._results() if batch_logs else {})
                    if self._stopping():
                        break
                logs = self._results()
                if validation_data is not None:
                    logs.update({f"val_{k}": v
                                 for k, v in self.evaluate(validation_data).items()})
                callbacks.on_epoch_end(epoch, logs)
                for key, value in logs.items():
                    history.setdefault(key, []).append(value)
                # none after the epoch training ends with: removed below
                if checkpoint is not None and epoch + 1 < epochs and not self._stopping():
                    checkpoint.epoch.assign(epoch + 1)
                    self._save(checkpoint, backup_dir)
                if self._stopping():
                    break
            callbacks.on_train_end(logs=None)
        if backup_dir and remove_backup and self._is_chief():
            shutil.rmtree(backup_dir, ignore_errors=True)
        return history

    def evaluate(self, dataset):
        """Loss, per-term losses and metrics on a dataset (training=False),
        as `{name: float}` over all replicas and workers."""
        self._reset()
        for batch in self._distribute(dataset):
            self._test_fn(batch)
        return self._results()

    # ------------------------------------------------------------- the steps

    def _replica_grads(self, x, y, sample_weight):
        with tf.GradientTape() as tape:
            total, per_term, weighted, taps = self.distiller.compute_terms(
                x, y, sample_weight, training=True
            )
            scaled = self.optimizer.scale_loss(total)
        grads = tape.gradient(scaled, self.variables)
        return grads, per_term, weighted, taps["logits"]

    def _replica_train_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        grads, per_term, weighted, logits = self._grads_fn(x, y, sample_weight)
        pairs = [(g, v) for g, v in zip(grads, self.variables) if g is not None]
        if not pairs:
            raise KdplugError("no trainable weight receives a gradient")
        grads = [g for g, _ in pairs]
        if self.clipping is not None:
            grads = clip_across_replicas(self.optimizer, grads, self.clipping)
        self.optimizer.apply(grads, [v for _, v in pairs])
        self._update_metrics(y, sample_weight, per_term, weighted, logits)

    def _replica_test_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        _, per_term, weighted, taps = self.distiller.compute_terms(
            x, y, sample_weight, training=False
        )
        self._update_metrics(y, sample_weight, per_term, weighted, taps["logits"])

    def _distributed_train_step(self, data):
        self.strategy.run(self._replica_train_step, args=(data,))

    def _distributed_test_step(self, data):
        self.strategy.run(self._replica_test_step, args=(data,))

    def _update_metrics(self, y, sample_weight, per_term, weighted, logits):
        # The same logged values as Distiller._update_metrics.
        update_step_metrics(self.loss_metric, self.term_metrics, self.metrics, y,
                            sample_weight, per_term, weighted, logits)

    # --------------------------------------------------------------- clipping

    def _clipping_settings(self):
        if self.strategy.num_replicas_in_sync == 1:
            return None  # the optimizer's own clipping is already global
        if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
            return None  # left to Keras (see the class docstring)
        return clipping_settings(self.optimizer)

    @contextlib.contextmanager
    def _optimizer_clipping_off(self):
        """The optimizer's own clipping is off while the trainer clips (the
        attributes are read when the step is traced)."""
        if self.clipping is None:
            yield
            return
        for key in self.clipping:
            setattr(self.optimizer, key, None)
        try:
            yield
        finally:
            for key, value in self.clipping.items():
                setattr(self.optimizer, key, value)

    # ---------------------------------------------------------------- helpers

    def _distribute(self, dataset):
        if isinstance(dataset, tf.distribute.DistributedDataset):
            return dataset
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA)
        return self.strategy.experimental_distribute_dataset(dataset.with_options(options))

    def _all_metrics(self):
        return [self.loss_metric, *self.term_metrics, *self.metrics]

    def _reset(self):
        for metric in self._all_metrics():
            metric.reset_state()

    def _results(self):
        return {m.name: float(m.result()) for m in self._all_metrics()}

    def _stopping(self):
        return bool(self.stop_training or self.distiller.stop_training)

    def _check_created_in_scope(self):
        outside = [
            v.path for v in self.variables
            if not self.strategy.extended.variable_created_in_scope(getattr(v, "value", v))
        ]
        if outside:
            raise KdplugError(
                f"{len(outside)} trainable weight(s) were not created under "
                f"strategy.scope() (e.g. {outside[0]}): build the student, the "
                "distiller and its terms inside `with strategy.scope():`"
            )

    def _is_chief(self):
        return is_chief(self.strategy)

    def _restore(self, backup_dir):
        if not backup_dir:
            return None, 0
        # The student, the terms (weights, projections) and the optimizer;
        # not the frozen teacher.
        terms = tf.train.Checkpoint(
            **{f"term_{i}": t for i, t in enumerate(self.distiller.terms)})
        with self.strategy.scope():
            epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
        checkpoint = tf.train.Checkpoint(
            student=self.distiller.student, terms=terms, optimizer=self.optimizer,
            epoch=epoch,
        )
        latest = tf.train.latest_checkpoint(backup_dir)
        if latest:
            checkpoint.restore(latest).expect_partial()
        start = int(checkpoint.epoch.numpy())
        if getattr(self.strategy.extended, "_in_multi_worker_mode", lambda: False)():
            # Every replica reports its epoch; they must agree.
            report = tf.function(lambda: self.strategy.run(
                lambda: tf.constant(start, tf.int64)))
            total = int(self.strategy.reduce("SUM", report(), axis=None))
            if total != start * self.strategy.num_replicas_in_sync:
                raise KdplugError(
                    f"workers would resume from different epochs (this one: "
                    f"{start}, from {backup_dir!r}): backup_dir must be on a "
                    "file system that every worker reads"
                )
        return checkpoint, start

    def _save(self, checkpoint, backup_dir):
        if self._is_chief():
            tf.train.CheckpointManager(checkpoint, backup_dir, max_to_keep=1).save()
            return
        # Other workers take part in the save (it may read distributed
        # variables collectively) but write to a throwaway folder.
        scratch = tempfile.mkdtemp(prefix="kdplug-worker-ckpt-")
        try:
            tf.train.CheckpointManager(checkpoint, scratch, max_to_keep=1).save()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def is_chief(strategy=None):
    """Whether this process is the one that writes a run's files: always
    true but under a multi-worker strategy, where it is the `chief` task, or
    worker 0 when the cluster has no chief.

    Examples:

    ```python
    if is_chief(strategy):
        write_report(run_dir, report)
    ```
    """
    strategy = strategy or tf.distribute.get_strategy()
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    return (resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict())
