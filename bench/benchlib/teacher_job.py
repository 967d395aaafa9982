"""The teacher row of a campaign (`quality`, `claims`): the teacher
fine-tuned (cached) and measured alone, a `.keras` copy kept for the rows
of other seeds.

`run_config(..., teacher=True)` runs it in a fresh process:

    python -m benchlib.teacher_job CONFIG REPORT     # bench/ on PYTHONPATH
"""

import os
import sys
import time


def teacher_job(config_path, report_path):
    """Fine-tunes (cached) and evaluates the teacher of the config at
    `config_path` alone, saves a `.keras` copy of it (weights only, no
    optimizer) for the runs with other seeds, and writes a report shaped
    like `kdplug run`'s `metrics.json` to `report_path`. Returns the report.

    Args:
        config_path: the row's config.
        report_path: where the report goes.
    """
    from kdplug.config import load_config

    cfg = load_config(config_path)  # a bad config fails before TensorFlow loads
    import keras

    from kdplug import storage
    from kdplug.data import read_splits
    from kdplug.run import RunContext
    from kdplug.run import SingleTaskRunner

    keras.utils.set_random_seed(cfg.seed)
    context = RunContext.create(cfg)
    splits = read_splits(cfg.data, cfg.resolve_path, seed=cfg.seed)
    teacher, tokenizer, info = SingleTaskRunner(context.method(), context).prepare_teacher(
        splits)
    start = time.perf_counter()
    measured = _measure(context, teacher, tokenizer, splits["test"])
    shared = shared_copy(cfg)
    report = {
        "name": cfg.name, "method": "teacher", "test_examples": len(splits["test"]),
        "teacher": dict(measured, finetune=info), "student": measured,
        "seconds": {"teacher fine-tuning": (info or {}).get("seconds", 0.0),
                    "evaluation": time.perf_counter() - start},
        "shared_teacher": shared,
    }
    storage.write_json(report_path, report)
    return report


def _measure(context, teacher, tokenizer, test):
    """The teacher's test accuracy, parameters and batch-1 latency.

    Args:
        context: the run's `RunContext`.
        teacher: the fine-tuned teacher.
        tokenizer: its tokenizer.
        test: the test split.
    """
    from kdplug.evaluation.measure import accuracy
    from kdplug.evaluation.measure import count_params
    from kdplug.evaluation.measure import first_examples
    from kdplug.evaluation.measure import latency_ms
    from kdplug.run import TeacherSetup
    from kdplug.run.teacher_setup import EVAL_BATCH_SIZE

    cfg = context.config
    test_ds = TeacherSetup(context).encoder(tokenizer).dataset(
        test, max(cfg.training.batch_size, EVAL_BATCH_SIZE))
    return {
        "accuracy": accuracy(teacher, test_ds),
        "params": count_params(teacher),
        "latency_ms": latency_ms(teacher, first_examples(test_ds, 1),
                                 runs=cfg.evaluation.latency_runs),
    }


def shared_copy(cfg):
    """The `.keras` copy of `cfg`'s fine-tuned teacher that the rows of other
    seeds read (`$KDPLUG_CACHE_DIR/bench/teacher-<key>.keras`), saved when
    missing. Returns its path.

    Args:
        cfg: the row's loaded config (its teacher fine-tuned already).
    """
    from kdplug import storage
    from kdplug.storage import cache_root
    from kdplug.teacher.finetune import TeacherFinetuner
    from kdplug.teacher.loading import load_teacher
    from kdplug.teacher.sources import resolve_source

    finetuner = TeacherFinetuner(cfg, resolve_source(cfg.teacher.source, cfg.resolve_path))
    shared = os.path.join(cache_root(), "bench", f"teacher-{finetuner.key()}.keras")
    if not os.path.isfile(shared):
        fresh, _, _ = load_teacher(cfg.teacher, cfg.data.num_classes, cfg.resolve_path)
        fresh.load_weights(finetuner.weights_path)
        storage.save_model(fresh, shared)
    return shared


def main(argv=None):
    """`python -m benchlib.teacher_job CONFIG REPORT`.

    Args:
        argv: `[CONFIG, REPORT]` (default: the command line's).
    """
    config_path, report_path = sys.argv[1:] if argv is None else argv
    teacher_job(config_path, report_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
