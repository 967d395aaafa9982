"""The results file of a script that benchmarks one config
(`bench/fastbert.py`, `bench/mtdnn.py`): each run's resolved config, its
report, wall time and machine, so the script's section is rendered from the
file (`--render-only`) and every number in it has a stored source.

Examples:

```python
entry = store_run(args, "fastbert", cfg, report, wall)   # after the run
entry = stored_run(args, "fastbert", TITLE)              # --render-only (None: not run)
cfg = entry_config(entry)                                # as the run read it
```
"""

import json
import os

from kdplug.run_files import CONFIG

from .docs import write_marked_section
from .paths import BENCH
from .paths import ROOT
from .results import load_results
from .results import machine
from .results import now
from .results import save_results


def results_path(args, name):
    """`--results`, else `bench/results/<name>.json` (the run folder's
    `<name>.json` with `--smoke`)."""
    if getattr(args, "results", None):
        return args.results
    if args.smoke:
        return os.path.join(args.output_dir, f"{name}.json")
    return os.path.join(BENCH, "results", f"{name}.json")


def resumes(args):
    """Whether the run folder holds stages, finished or interrupted, that
    the run will reuse (`RunFolder.has_training_state`; then its wall time
    is no timing: `store_run`'s `resumed`)."""
    from kdplug.run.run_folder import RunFolder

    return RunFolder(args.output_dir).has_training_state()


def wall_text(entry):
    """`Wall time 596 s`, or what a resumed run's time is."""
    if entry.get("resumed"):
        return (f"Wall time {entry['wall_s']:.0f} s of a resumed run (its finished "
                "stages reused, not timed)")
    return f"Wall time {entry['wall_s']:.0f} s"


def store_run(args, name, cfg, report, wall_s, resumed=False):
    """Stores one finished run under `seed<seed>` (a later run of the seed
    replaces it) and returns its entry: `config` (the resolved config as a
    document), `config_file` (the file it came from, relative to the
    repository), `report` (its `metrics.json`), `wall_s`, `machine`,
    `finished`, `smoke`, `resumed` (`resumes`: its wall time is then no
    timing) (returned as the file keeps it: keys sorted)."""
    entry = {"config": cfg.to_dict(), "config_file": _relative(cfg.file),
             "report": report, "wall_s": wall_s,
             "machine": machine(gpu_hidden=not getattr(args, "gpu", False)),
             "finished": now(), "smoke": bool(args.smoke), "resumed": bool(resumed)}
    path = results_path(args, name)
    results = load_results(path)
    results["results"][f"seed{cfg.seed}"] = entry
    save_results(path, results)
    return json.loads(json.dumps(entry, sort_keys=True))  # as `--render-only` reads it


def latest_run(args, name):
    """The stored run that finished last (smoke runs only with `--smoke`),
    None when there is none."""
    path = results_path(args, name)
    entries = [e for e in load_results(path)["results"].values()
               if e.get("finished") and bool(e.get("smoke")) == bool(args.smoke)]
    return max(entries, key=lambda e: e["finished"]) if entries else None


def stored_run(args, name, title):
    """`--render-only`: the stored run that finished last, or None after
    writing the section of a script with no stored run (what runs it) into
    `args.write_docs`."""
    entry = latest_run(args, name)
    if entry is None:
        section = (f"{title}\n\nNot measured with the current defaults yet: `python "
                   f"bench/{name}.py` runs it and stores the run in "
                   f"`bench/results/{name}.json`, from which this section is "
                   "written.\n")
        path = write_marked_section(args.write_docs, name, section)
        print(f"bench/{name}.py: no stored run; wrote {path}")
    return entry



def entry_config(entry):
    """The run's config object, from its stored document (paths as the run
    resolved them; nothing is read from disk)."""
    from kdplug.config.loading import config_from_dict

    return config_from_dict(entry["config"],
                            file=os.path.join(ROOT, entry["config_file"] or CONFIG))


def _relative(path):
    if not path:
        return None
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return os.path.basename(path) if rel.startswith("..") else rel
