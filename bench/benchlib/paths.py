"""Where the bench scripts read and write: the repository root, a
campaign's run folders, results file and doc page, and those of a script
that benchmarks one config."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
RESULTS_PAGE = os.path.join(ROOT, "docs", "results.md")
PERFORMANCE_PAGE = os.path.join(ROOT, "docs", "performance.md")


def campaign_paths(args, name):
    """The folders and files of the campaign `name` (`claims`, `quality`,
    `seq2seq`, `escape`), from its `--run-root`, `--results`,
    `--write-docs` and `--smoke`.

    Sets `args.run_root` (default `runs/<name>`, `runs/<name>-smoke` with
    `--smoke`) and `args.config_dir`, where the rows' configs are written:
    `runs/`, the depth of the bundled configs' folder, so their `../data/...`
    paths resolve and the teacher's fine-tuning cache key matches
    `configs/*.yaml`'s; the run root with `--smoke`. Returns `(results,
    page)`: the results store (`bench/results/<name>.json`) and the doc page
    (`docs/results.md`), both under the run root with `--smoke`.

    Args:
        args: the parsed options (`run_root`, `results`, `write_docs`,
            `smoke`).
        name: the campaign.

    Examples:

    ```python
    results, page = campaign_paths(args, "claims")
    ```
    """
    default = os.path.join(ROOT, "runs", f"{name}-smoke" if args.smoke else name)
    args.run_root = os.path.abspath(args.run_root or default)
    args.config_dir = args.run_root if args.smoke else os.path.join(ROOT, "runs")
    if args.smoke:
        results = os.path.join(args.run_root, f"{name}.json")
        page = os.path.join(args.run_root, "results.md")
    else:
        results = os.path.join(BENCH, "results", f"{name}.json")
        page = RESULTS_PAGE
    return args.results or results, args.write_docs or page


def add_single_run_arguments(parser, name, config):
    """`--smoke`, `--config`, `--output-dir` and `--write-docs` of a script
    that benchmarks one config; defaults filled in by `single_run_dirs`.

    Args:
        parser: the script's `argparse.ArgumentParser`.
        name: the script's name (`fastbert`), for the run folder.
        config: the config it runs by default (`configs/<name>.yaml`).
    """
    from .docs import add_write_docs_argument

    parser.add_argument("--smoke", action="store_true",
                        help="tiny preset and toy data (beside the run folder)")
    parser.add_argument("--config", default=config, help=f"the config to run ({name})")
    parser.add_argument("--output-dir", help=f"run folder (default runs/bench_{name}, "
                        f"or runs/bench_{name}_smoke with --smoke)")
    add_write_docs_argument(parser, always="docs/results.md, or <run folder>/docs/"
                            "results.md with --smoke; images beside it in img/")
    parser.add_argument("--results", help=f"results JSON (default bench/results/{name}"
                        ".json, the run folder's with --smoke)")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the section from the stored results, run nothing")


def single_run_dirs(args, name):
    """Fills in `args.output_dir` and `args.write_docs`
    (`add_single_run_arguments`): `runs/bench_<name>` and
    `docs/results.md`, or `runs/bench_<name>_smoke` and the run folder's
    `docs/results.md` with `--smoke`, so a smoke run never touches docs/.
    Also `args.smoke_inputs`, `<run folder>-inputs`: where a smoke run writes
    its tiny preset and toy data (beside the run folder: `kdplug run`
    refuses a folder holding files it did not write).

    Args:
        args: the parsed options.
        name: the script's name, as given to `add_single_run_arguments`.
    """
    if args.output_dir is None:
        folder = f"bench_{name}_smoke" if args.smoke else f"bench_{name}"
        args.output_dir = os.path.join(ROOT, "runs", folder)
    args.smoke_inputs = args.output_dir.rstrip(os.sep) + "-inputs"
    if args.write_docs is None:
        args.write_docs = (os.path.join(args.output_dir, "docs", "results.md")
                           if args.smoke else RESULTS_PAGE)
    return args
