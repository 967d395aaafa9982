"""bench/quickstart.py: what it keeps of a run and the README block it
writes, on hand-made reports (the runs themselves are the bench's)."""

from conftest import load_bench_script

quickstart = load_bench_script("quickstart")

MACHINE = {"cpu": "AMD EPYC", "cpus": 2, "gpu_hidden": True, "keras": "3",
           "keras_hub": "0", "python": "3", "tensorflow": "2"}


def report(student):
    return {
        "seconds": {"reading data": 0.1, "teacher fine-tuning": 275.0,
                    "teacher outputs": 56.0, "stage general": 10.0, "stage distill": 134.0,
                    "evaluation": 13.0, "export": 11.0},
        "teacher": {"accuracy": 0.85, "latency_ms": {"median": 13.7}},
        "student": {"accuracy": student, "latency_ms": {"median": 7.6}},
        "export": {"accuracy": {"tflite_int8": 0.84},
                   "latency_ms": {"tflite_int8": {"batch_1": {"median": 1.4}}}},
    }


def entry(tree, cache, seed, student, wall, load=0.1):
    e = quickstart.summarise(report(student), wall, 2969.6, tree, "abc1234", cache, seed, load)
    e["machine"] = MACHINE
    return e


def test_summarise_sums_every_stage_into_distillation():
    e = entry("current", "cold", 0, 0.8434, 510.0)
    assert e["phases_s"] == {"teacher fine-tuning": 275.0, "teacher outputs": 56.0,
                             "distill": 144.0, "evaluation": 13.0, "export": 11.0}
    assert e["int8_accuracy"] == 0.84 and e["latency_ms"] == {
        "teacher": 13.7, "student": 7.6, "int8": 1.4}


def test_render_shows_the_trees_side_by_side():
    results = {"results": {
        "current/cold/seed0": entry("current", "cold", 0, 0.84, 510.0),
        "current/warm/seed0": entry("current", "warm", 0, 0.84, 162.0),
        "current/warm/seed1": entry("current", "warm", 1, 0.86, 170.0),
        "v0.2/cold/seed0": entry("v0.2", "cold", 0, 0.83, 690.0, load=1.9),
    }}
    text = quickstart.render(results)
    assert "| | `current` (abc1234) | `v0.2` (abc1234) |" in text
    assert "| cold start, wall (peak RSS) | 8 min 30 s (2.9 GB) | 11 min 30 s (2.9 GB) |" in text
    assert "| - distill | 144 s | 144 s |" in text
    assert "| warm cache, wall | 2 min 42 s, 2 min 50 s | – |" in text
    # seed 0's warm run is the same seed as its cold one: counted once
    assert "| student test accuracy | 0.8500 ± 0.0141 (seeds 0, 1) | 0.8300 (seeds 0) |" in text
    assert "1 run(s) started on a busy machine" in text


def test_another_revision_imports_its_own_plugins(tmp_path):
    """The built-in plugins install as `kdplug_plugins` (this checkout's,
    through its editable install): a revision's run puts a link of that
    name to the revision's plugins/ on its path, after the tree itself."""
    tree = tmp_path / "tree-abc"
    (tree / "plugins").mkdir(parents=True)
    paths = quickstart.import_path(str(tree))
    assert paths[0] == str(tree)
    link = tmp_path / "tree-abc-imports" / "kdplug_plugins"
    assert paths[1] == str(link.parent) and link.resolve() == (tree / "plugins").resolve()
    assert quickstart.import_path(str(tree)) == paths  # a second run reuses the link
    assert quickstart.import_path(quickstart.ROOT) == [quickstart.ROOT]
