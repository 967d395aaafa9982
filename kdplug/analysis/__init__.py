"""Analysing what students learn: probing and behaviour.

Following the "Analysing the students" chapter of Sučík's thesis ("Distilling
BERT into small students"): beyond one accuracy number, what does each layer
of the teacher and of each student know (probing, Conneau et al. 2018), and
where do the student's mistakes differ from the teacher's (agreement, the
2x2 error table, accuracy by sentence length and teacher confidence,
calibration, the examples they disagree on most)?

- `kdplug.analysis.probing`: probing sets (SentEval files, or built from any
  corpus: SentLen, WC, BShift and, with spaCy, syntactic tasks).
- `sentence_representations(model, dataset)`: each layer's [CLS] and
  mean-pooled sentence vectors (a BiLSTM's pooled state).
- `train_probe`, `probe_layers`: seeded logistic-regression / MLP probes.
- `behaviour_report`: teacher vs student on the same labelled examples.
- `analyze_models(...)`: all of it for a teacher and students, from Python.
- `analyze_runs(run_dirs)`: what `kdplug analyze RUN_DIR ...` does.

Importing this package does not import TensorFlow; the names that need it
load on first use.

Examples:

```python
from kdplug.analysis import analyze_runs
analyze_runs(["runs/quickstart", "runs/bilstm"], output_dir="runs/comparison")
```
"""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

if TYPE_CHECKING:  # loaded on first use (`lazy_exports`)
    from kdplug.analysis.analyzer import AnalysedModel
    from kdplug.analysis.analyzer import Analyzer
    from kdplug.analysis.analyzer import analyze_models
    from kdplug.analysis.behaviour import behaviour_report
    from kdplug.analysis.probe import ProbeResult
    from kdplug.analysis.probe import probe_layers
    from kdplug.analysis.probe import train_probe
    from kdplug.analysis.representations import representation_layers
    from kdplug.analysis.representations import sentence_representations
    from kdplug.analysis.run_models import RunModels
    from kdplug.analysis.run_models import analyze_runs
    from kdplug.analysis.run_models import load_run

__getattr__, __dir__, __all__ = lazy_exports(__name__)
