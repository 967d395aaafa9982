"""The `kdplug` command line."""

import argparse
import os
import sys

from kdplug.errors import KdplugError

# The models of a run that predict and evaluate (`kdplug.run.trained_run.ROLES`).
ROLES = ("student", "teacher")


class _Parser(argparse.ArgumentParser):
    """Usage errors end in the same one `kdplug: error:` line as every other
    error (`kdplug: error: run: argument --log-every: ...`), exit status 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        where = self.prog[len("kdplug"):].strip()
        self.exit(2, f"kdplug: error: {where + ': ' if where else ''}{message}\n")


def build_parser():
    parser = _Parser(
        prog="kdplug",
        description="Knowledge distillation for Keras 3, driven by YAML configs.",
    )
    verbose_help = "debug messages, and TensorFlow's own start-up and C++ log output"
    parser.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    # `--verbose` after the command too (`kdplug run x.yaml -v`)
    common = _Parser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true",
                        default=argparse.SUPPRESS, help=verbose_help)
    sub = parser.add_subparsers(dest="command", required=True)
    add = lambda name, **kw: sub.add_parser(name, parents=[common], **kw)  # noqa: E731
    p = add("validate", help="check a config and print it resolved")
    p.add_argument("config")
    p.add_argument(
        "--build", action="store_true",
        help="also build the teacher, the student and the method's stages as "
             "the run will (no training; imports TensorFlow): taps the teacher's "
             "family lacks, layer mappings, untrained heads")
    p = add("run", help="run a config: train, evaluate, report")
    p.add_argument("config")
    p.add_argument("--output-dir", help="override the config's output_dir")
    p.add_argument(
        "--fresh", action="store_true",
        help="move an existing run folder aside (<folder>.old-<time>) and start over")
    p.add_argument(
        "--log-every", type=_positive_int, default=10, metavar="N",
        help="per-step scalars (TensorBoard, loss curves, report) every N "
             "optimizer steps (default 10)")
    p = add("finetune-teacher", help="fine-tune and cache the teacher only")
    p.add_argument("config")
    p = add("analyze", help="probe the layers of a run's teacher and student and "
                            "compare their behaviour (docs/analysis.md)")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--output", metavar="DIR",
                   help="comparison folder for several runs (default "
                        "<parent of the first run>/analysis-comparison)")
    p.add_argument("--config", action="append", metavar="FILE",
                   help="the config file a run was started from, once per run in "
                        "order (only for runs without source.json)")
    p.add_argument("--tasks", type=_comma_list, metavar="A,B",
                   help="probing tasks (names or SentEval files)")
    p.add_argument("--seeds", type=_comma_ints, metavar="0,1,2", help="probe seeds")
    p.add_argument("--max-examples", type=int, metavar="N",
                   help="examples per built probing task")
    p.add_argument("--probe", help="logistic or mlp")
    p.add_argument("--no-probing", action="store_true", help="behaviour only")
    p.add_argument("--no-behaviour", action="store_true", help="probing only")
    p = add("predict", help="label texts with a finished run's student (or "
                            "teacher): one JSON line per text")
    p.add_argument("run_dir", metavar="RUN_DIR")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--text", action="append", metavar="TEXT",
                       help="a text to label (repeat for several)")
    given.add_argument("--input", metavar="FILE",
                       help="a text file (one text per line) or a TSV / CSV / JSONL "
                            "/ Parquet file with the run's text column")
    p.add_argument("--pair", action="append", metavar="TEXT",
                   help="the second text of each --text, for a run on pairs")
    p.add_argument("--model", choices=ROLES, default="student",
                   help="the model that predicts (default student)")
    p.add_argument("--output", metavar="FILE", help="write the JSON lines here "
                                                    "instead of stdout")
    p.add_argument("--batch-size", type=_positive_int, metavar="N",
                   help="texts per forward pass (default the run's evaluation "
                        "batch, max(training.batch_size, 64))")
    p = add("evaluate", help="measure a finished run's student (and teacher) on "
                             "a labelled file, with the run's metrics")
    p.add_argument("run_dir", metavar="RUN_DIR")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", metavar="FILE",
                        help="a labelled TSV / CSV / JSONL / Parquet file (or saved "
                             "Dataset) with the run's columns and classes")
    source.add_argument("--split", choices=("train", "dev", "test"),
                        help="a split of the run's own data, read as the run read it")
    p.add_argument("--model", choices=(*ROLES, "both"), default="student",
                   help="the model(s) measured (default student)")
    p.add_argument("--output", metavar="FILE", help="also write the metrics as JSON")
    p.add_argument("--batch-size", type=_positive_int, metavar="N",
                   help="examples per forward pass")
    p = add("export", help="export a finished run's student in more formats "
                           "(docs/export.md)")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--format", action="append", required=True, metavar="FORMAT",
                   dest="formats",
                   help="an export format, e.g. keras or tflite_int8 (repeat for "
                        "several; docs/export.md lists them)")
    p.add_argument("--output", metavar="DIR",
                   help="the export folder (default RUN_DIR/export); a format "
                        "already there is kept")
    add("plugins", help="list plugins and what they register")
    p = add("cache", help="list or remove cache entries (teacher outputs, "
                          "fine-tuned teachers, transfer sets)")
    cache_sub = p.add_subparsers(dest="cache_command", required=True)
    cache_sub.add_parser("ls", help="list entries, state and size")
    rm = cache_sub.add_parser("rm", help="remove KEY (or a unique prefix) or --all")
    group = rm.add_mutually_exclusive_group(required=True)
    group.add_argument("key", nargs="?")
    group.add_argument("--all", action="store_true")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    from kdplug.run.console import configure_logging
    from kdplug.run.console import warnings_as_messages

    configure_logging(verbose=args.verbose)
    if args.command in NEEDS_MODELS or getattr(args, "build", False):
        # Training imports TensorFlow: without its start-up noise.
        from kdplug.run.console import import_tensorflow_quietly

        import_tensorflow_quietly(verbose=args.verbose)
    try:
        with warnings_as_messages():
            return COMMANDS[args.command](args)
    except KdplugError as e:
        print(f"kdplug: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a full disk met by a writer outside kdplug.storage
        from kdplug.storage import OUT_OF_ROOM
        from kdplug.storage import write_failure

        if e.errno not in OUT_OF_ROOM:
            raise
        print(f"kdplug: error: {write_failure(e.filename or 'a file', e, cleaned=False)}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kdplug: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _comma_list(text):
    return [part.strip() for part in text.split(",") if part.strip()]


def _comma_ints(text):
    try:
        return [int(part) for part in _comma_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}") from None


def _load(args):
    from kdplug.config import load_config
    from kdplug.config.loading import check_output_dir

    config = load_config(args.config)
    if getattr(args, "output_dir", None):
        check_output_dir(args.output_dir, "--output-dir")
        config.output_dir = args.output_dir
    return config


def _experiment(args, **kwargs):
    from kdplug.run.experiment import Experiment

    return Experiment(_load(args), **kwargs)


def cmd_validate(args):
    import yaml

    from kdplug.run.preflight import check_build
    from kdplug.run.preflight import check_inputs

    config = _load(args)
    # checked first: an error is the one thing printed, not after the config
    lines = list(check_inputs(config))
    if args.build:  # teacher, student and stages, untrained
        lines += check_build(config)
    print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
    for line in lines:
        print(line)
    print(f"{args.config}: OK")
    return 0


def cmd_run(args):
    report = _experiment(args, log_every_steps=args.log_every).run(fresh=args.fresh)
    t, s = report["teacher"], report["student"]
    name = report.get("primary_metric", "accuracy")
    print(f"teacher {name} {t[name]:.4f}, student {name} {s[name]:.4f}")
    return 0


def cmd_finetune_teacher(args):
    experiment = _experiment(args)
    if experiment.config.teacher.finetune is None:
        raise KdplugError(f"{args.config}: teacher.finetune is not set")
    info = experiment.finetune_teacher()
    if isinstance(info, dict) and "validation_accuracy" in info:
        print(f"teacher validation accuracy {info['validation_accuracy']}")
    else:
        print(f"teacher fine-tuned: {info}")
    return 0


def cmd_analyze(args):
    from kdplug.analysis.run_models import analyze_runs

    if args.config and len(args.config) != len(args.run_dirs):
        raise KdplugError(f"--config: given {len(args.config)} time(s) for "
                          f"{len(args.run_dirs)} run folder(s); give it once per run")
    probing = {key: value for key, value in (
        ("tasks", args.tasks), ("seeds", args.seeds),
        ("max_examples", args.max_examples), ("probe", args.probe)) if value is not None}
    overrides = {"probing": False if args.no_probing else probing,
                 "behaviour": False if args.no_behaviour else {}}
    written = analyze_runs(args.run_dirs, output_dir=args.output,
                           config_files=args.config, overrides=overrides)
    for path in written["runs"].values():
        print(path)
    if written["comparison"]:
        print(written["comparison"])
    return 0


def cmd_predict(args):
    import json

    from kdplug.data.text_files import read_texts
    from kdplug.run.run_inputs import check_texts
    from kdplug.run.trained_run import TrainedRun

    run = TrainedRun(args.run_dir, roles=(args.model,))
    data = run.config.data
    if args.input is not None:
        if args.pair and data.text_pair_column:
            raise KdplugError(
                "--pair goes with --text; with --input the second texts come from "
                f"the file's column {data.text_pair_column!r} (data.text_pair_column)")
        _pairs(args, run)  # --pair for a run on single texts: an error
        texts, pairs = read_texts(args.input, data, run.task.label_kind)
    else:
        texts, pairs = check_texts(args.text), _pairs(args, run)
    if args.output:
        _check_output_file(args.output)
    records = run.predict(texts, pairs, role=args.model, batch_size=args.batch_size)
    lines = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    if args.output:
        from kdplug import storage

        storage.write_text(args.output, lines)
        print(f"{len(records)} prediction(s): {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(lines)
    return 0


def _pairs(args, run):
    """The `--pair` texts, one per `--text` for a run on pairs, none else."""
    from kdplug.run.run_inputs import check_texts

    column = run.config.data.text_pair_column
    if column is None or args.text is None:
        if args.pair and column is None:
            raise KdplugError(
                f"--pair: run {run.name!r} reads single texts (its "
                "data.text_pair_column is null); leave --pair out")
        return None
    if len(args.pair or ()) != len(args.text):
        raise KdplugError(
            f"--pair: run {run.name!r} reads text pairs (data.text_pair_column "
            f"{column!r}): give one --pair per --text ({len(args.text)} --text, "
            f"{len(args.pair or ())} --pair)")
    return check_texts(args.pair, "--pair")


def _check_output_file(path, flag="--output"):
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise KdplugError(f"{path}: a folder ({flag}); name a file")
    if not os.path.isdir(folder):
        raise KdplugError(f"{path}: no folder {folder} ({flag})")


def cmd_evaluate(args):
    from kdplug import storage
    from kdplug.run.trained_run import TrainedRun

    wanted = ROLES if args.model == "both" else (args.model,)
    run = TrainedRun(args.run_dir, roles=wanted)
    if args.output:
        _check_output_file(args.output)
    examples = (run.read_split(args.split) if args.split
                else run.read_labelled(args.data))
    where = f"its {args.split} split" if args.split else args.data
    metrics = run.evaluate(examples, batch_size=args.batch_size)
    names = run.metric_names()
    rows = [("metric", *wanted)] + [
        (name, *(f"{metrics[role][name]:.4f}" for role in wanted)) for name in names]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    print(f"{run.name}: {where} ({len(examples)} examples)")
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if args.output:
        storage.write_json(args.output, {
            "run": run.run_dir,
            **({"split": args.split} if args.split
               else {"data": os.path.abspath(args.data)}),
            "task": run.task.name, "examples": len(examples),
            "primary_metric": run.task.primary, **metrics})
        print(f"metrics: {args.output}")
    return 0


def cmd_export(args):
    from kdplug.run.run_export import check_formats
    from kdplug.run.run_export import export_run
    from kdplug.run_files import EXPORT
    from kdplug.run.trained_run import TrainedRun
    from kdplug.storage import format_size
    from kdplug.storage import tree_size

    run = TrainedRun(args.run_dir)
    output = args.output or os.path.join(args.run_dir, EXPORT)
    formats = check_formats(args.formats)
    result = export_run(run, formats, output)
    for fmt in formats:
        if fmt in result["kept"]:
            print(f"{fmt}: {result['kept'][fmt]} (already there, kept)")
        elif fmt in result["written"]:
            path = result["written"][fmt]
            print(f"{fmt}: {path} ({format_size(tree_size(path))})")
    for name in ("labels", "vocab"):
        if result[name]:
            print(f"{name}: {result[name]}")
    for note in result["notes"]:
        print(f"note: {note}")
    return 0


def cmd_plugins(args):
    from kdplug.plugin.manager import get_plugin_manager

    pm = get_plugin_manager()
    rows = [("plugin", "source", "status", "registers / error")]
    for r in pm.records:
        rows.append((r.name, r.source, r.status,
                     ", ".join(r.registered) if r.status == "ok" else r.error))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row[:3], widths)) + "  " + row[3])
    return 1 if pm.failed() else 0


def cmd_cache(args):
    from kdplug.teacher import cache_admin

    if args.cache_command == "ls":
        print(cache_admin.format_entries(cache_admin.list_entries()))
        return 0
    if args.all:
        removed, foreign = cache_admin.remove_all()
    else:
        removed, foreign = [cache_admin.remove(args.key)], []
    for entry in removed:
        print(f"removed {entry['kind']} {entry['key']} "
              f"({cache_admin.format_size(entry['bytes'])})")
    for entry in foreign:
        print(f"left {entry['path']} alone ({entry['status']}: not created by kdplug)")
    if not removed and not foreign:
        print(f"no cache entries in {cache_admin.cache_root()}")
    return 0


# validate, plugins, cache: no TensorFlow
NEEDS_MODELS = ("run", "finetune-teacher", "analyze", "predict", "evaluate", "export")

COMMANDS = {
    "validate": cmd_validate,
    "run": cmd_run,
    "finetune-teacher": cmd_finetune_teacher,
    "analyze": cmd_analyze,
    "predict": cmd_predict,
    "evaluate": cmd_evaluate,
    "export": cmd_export,
    "plugins": cmd_plugins,
    "cache": cmd_cache,
}

if __name__ == "__main__":
    sys.exit(main())
