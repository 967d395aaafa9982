"""Files of a run folder that floors below `kdplug.run` read, named once.

`kdplug.run` writes them; `kdplug.analysis` (`kdplug analyze`, reloading a
finished run) reads them and sits below `kdplug.run`, so their names live
here, beside the other floor-0 modules (docs/architecture.md, "Floors").
"""

# The trained student (what `load_run` and `kdplug predict` read).
STUDENT_FILE = "student.keras"
# Where the run's config came from: its relative paths resolve against
# that file's folder (`Experiment` writes it, `kdplug analyze` reads it).
SOURCE = "source.json"
