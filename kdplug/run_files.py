"""The files and folders of a run folder, named once.

`kdplug.run` writes them; `kdplug.analysis` (`kdplug analyze`, reloading a
finished run), `kdplug.evaluation` (the report, the export) and
`kdplug.finished_run` read or write some of them from lower floors, so
their names live here, beside the other floor-1 modules
(docs/architecture.md, "Floors"). `tests/test_architecture.py` holds every
other module of kdplug/, plugins/ and bench/ to these names: none spells
one as a string. A plugin imports them from here (a face of the plugin
API, like `kdplug.keys`).

A run folder (`<output_dir>/<name>/`):

```
config.yaml            CONFIG: the run's resolved config
source.json            SOURCE: the config file it was started from
settings.json          SETTINGS: what resuming the run must agree with
student.keras          STUDENT_FILE: the trained student
word_vocabulary.json   WORD_VOCABULARY: a word-id student's vocabulary
student_tokenizer/     STUDENT_TOKENIZER: a student's own tokenizer
label_map.json         LABEL_MAP: the class names, in id order
metrics.json           METRICS: the report
predictions.npz        PREDICTIONS: teacher and student outputs on the evaluated split
summary.md             SUMMARY: the report, for people
stages/                STAGES: each finished stage (STAGE_* files)
backup/                BACKUP: the stage in progress (resuming)
tensorboard/           TENSORBOARD: TensorBoard logs, a folder a stage
export/                EXPORT: the exported student (and EXPORT_LABELS)
analysis/              ANALYSIS: `kdplug analyze`'s report
```
"""

CONFIG = "config.yaml"
# Where the run's config came from: its relative paths resolve against
# that file's folder (`Experiment` writes it, `kdplug analyze` reads it).
SOURCE = "source.json"
SETTINGS = "settings.json"
# The trained student (what `load_run` and `kdplug predict` read).
STUDENT_FILE = "student.keras"
WORD_VOCABULARY = "word_vocabulary.json"
STUDENT_TOKENIZER = "student_tokenizer"
LABEL_MAP = "label_map.json"
METRICS = "metrics.json"
# The evaluated split's outputs (`labels`, `teacher`, `student`: the models'
# logits or predictions in the split's order), for error analysis and the
# benches' paired tests.
PREDICTIONS = "predictions.npz"
SUMMARY = "summary.md"

STAGES = "stages"
BACKUP = "backup"
TENSORBOARD = "tensorboard"
# What a run leaves to resume from (its settings must match to reuse it).
TRAINING_STATE = (STAGES, BACKUP)
# A stage's files, `{tag}` its number and name (`01-distill`, see
# `kdplug.run.stage_runner.stage_tag`): the finished stage's weights, the
# pointer to the file that holds them once the run is finished, its
# history, its terms' own weights (under STAGES); the best epoch's backup
# and the step history while it trains (under BACKUP).
STAGE_WEIGHTS = "{tag}.weights.h5"
STAGE_POINTER = "{tag}.weights.json"
STAGE_HISTORY = "{tag}.history.json"
STAGE_TERMS = "{tag}.terms.npz"
STAGE_BEST = "{tag}.best"
# A stage's per-step TensorBoard logs (under TENSORBOARD/{tag}).
TENSORBOARD_STEPS = "steps"

EXPORT = "export"
# Class names beside the exported files (keras-hub ignores it in a preset):
# output `i` of the model is class `names[i]`.
EXPORT_LABELS = "labels.json"
ANALYSIS = "analysis"

# The plugin API: every name above (a new one joins it by being written).
__all__ = sorted(name for name in dir() if name.isupper())
