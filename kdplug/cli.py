"""The `kdplug` command line."""

import argparse
import sys

from kdplug.errors import KdplugError


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="kdplug",
        description="Knowledge distillation for Keras 3, driven by YAML configs.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="check a config and print it resolved")
    p.add_argument("config")
    p = sub.add_parser("run", help="run a config: train, evaluate, report")
    p.add_argument("config")
    p.add_argument("--output-dir", help="override the config's output_dir")
    p = sub.add_parser("finetune-teacher", help="fine-tune and cache the teacher only")
    p.add_argument("config")
    sub.add_parser("plugins", help="list plugins and what they register")
    p = sub.add_parser("cache", help="list or remove cached teacher outputs")
    cache_sub = p.add_subparsers(dest="cache_command", required=True)
    cache_sub.add_parser("ls", help="list entries, state and size")
    rm = cache_sub.add_parser("rm", help="remove KEY (or a unique prefix) or --all")
    group = rm.add_mutually_exclusive_group(required=True)
    group.add_argument("key", nargs="?")
    group.add_argument("--all", action="store_true")
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KdplugError as e:
        print(f"kdplug: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kdplug: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


def _load(args):
    from kdplug.config import load_config

    config = load_config(args.config)
    if getattr(args, "output_dir", None):
        config.output_dir = args.output_dir
    return config


def cmd_validate(args):
    import yaml

    config = _load(args)
    print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
    print(f"{args.config}: OK")
    return 0


def cmd_run(args):
    from kdplug.train import Experiment

    report = Experiment(_load(args)).run()
    t, s = report["teacher"], report["student"]
    print(f"teacher accuracy {t['accuracy']:.4f}, student accuracy {s['accuracy']:.4f}")
    return 0


def cmd_finetune_teacher(args):
    from kdplug.train import Experiment

    config = _load(args)
    if config.teacher.finetune is None:
        raise KdplugError(f"{args.config}: teacher.finetune is not set")
    experiment = Experiment(config)
    from kdplug.data import read_splits
    from kdplug.strategy import make_strategy

    experiment.strategy = make_strategy(config.training.strategy)
    _, _, info = experiment.prepare_teacher(read_splits(config.data, config.resolve_path))
    print(f"teacher validation accuracy {info['validation_accuracy']}")
    return 0


def cmd_plugins(args):
    from kdplug.plugins import get_plugin_manager

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
    from kdplug import cache

    if args.cache_command == "ls":
        print(cache.format_entries(cache.list_entries()))
        return 0
    removed = cache.remove_all() if args.all else [cache.remove(args.key)]
    for entry in removed:
        print(f"removed {entry['key']} ({cache.format_size(entry['bytes'])})")
    return 0


COMMANDS = {
    "validate": cmd_validate,
    "run": cmd_run,
    "finetune-teacher": cmd_finetune_teacher,
    "plugins": cmd_plugins,
    "cache": cmd_cache,
}

if __name__ == "__main__":
    sys.exit(main())
