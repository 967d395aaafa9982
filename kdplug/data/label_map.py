"""Class labels as integer ids or as names: a run's label map.

A label column holds either class ids (`1`, `"1"`, `1.0`) or class names
(`"pos"`). `LabelMap.resolve` decides which from the config and the train
split, and `class_id` turns each value into an id `0..num_classes-1`, with
an error naming the row and the known names otherwise. A run with names
writes the map into its folder (`label_map.json`) and beside the exported
student (`export/labels.json`).
"""

import dataclasses
from typing import Optional

from kdplug.errors import DataError
from kdplug.errors import did_you_mean


def is_class_id(value):
    """Whether a label value reads as an integer class id: an int, a string
    holding one (`"1"`, `" 1"`), or a whole float (`1.0`, as JSON may write
    it); not a bool, `"1.0"` or `"+1"` (what kdplug always accepted).

    Examples:

    >>> [is_class_id(v) for v in (1, "2", 3.0, "3.0", 1.5, "pos", True, None)]
    [True, True, True, False, False, False, False, False]
    """
    try:
        label = int(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return str(value).strip() in (str(label), f"{label}.0")


@dataclasses.dataclass
class LabelMap:
    """How label values become class ids `0..num_classes-1`.

    Args:
        num_classes: int.
        names: the class names in id order, or None (ids without names).
        values: `"ids"` (the column holds class ids) or `"names"` (it holds
            names, looked up in `names`).
        origin: where the names come from, for messages and the saved map
            (`data.label_names`, `inferred from the train split`, a
            `datasets` `ClassLabel` feature).
        column: the label column, for messages.

    Examples:

    >>> m = LabelMap(2, ["neg", "pos"], "names", "data.label_names")
    >>> m.class_id("pos", "d.tsv:3")
    1
    >>> m.to_json()["ids"]
    {'neg': 0, 'pos': 1}
    """

    num_classes: int
    names: Optional[list] = None
    values: str = "ids"
    origin: Optional[str] = None
    column: str = "label"

    def __post_init__(self):
        self._index = {name: i for i, name in enumerate(self.names or [])}

    @classmethod
    def resolve(cls, cfg, train_values, source, class_names=None):
        """The label map of a `DataConfig` whose train split holds
        `train_values`.

        - `cfg.label_names` set: the values are those names; or, when no
          train value is one of them and every one is a class id, ids (the
          names then only label them).
        - else a `datasets` `ClassLabel` column (`class_names`): ids, named.
        - else: ids when any train value is a class id (kdplug's behaviour
          before names; other values are then bad rows), else names: the
          sorted distinct train values, which must be `cfg.num_classes`.

        Raises `DataError` (naming `source`) when the names found do not
        match `num_classes`.
        """
        column = cfg.label_column
        present = [v for v in train_values if v is not None and str(v).strip()]
        if cfg.label_names is not None:
            names = list(cfg.label_names)
            known = set(names)
            ids = present and all(is_class_id(v) for v in present) and not any(
                _name(v) in known for v in present)
            return cls(cfg.num_classes, names, "ids" if ids else "names",
                       "data.label_names", column)
        if class_names is not None:
            if len(class_names) != cfg.num_classes:
                raise DataError(
                    f"{source}: column {column!r} is a ClassLabel with "
                    f"{len(class_names)} names {list(class_names)}, and "
                    f"data.num_classes is {cfg.num_classes}; set data.num_classes: "
                    f"{len(class_names)}")
            return cls(cfg.num_classes, list(class_names), "ids",
                       "the dataset's ClassLabel feature", column)
        if not present or any(is_class_id(v) for v in present):
            return cls(cfg.num_classes, None, "ids", None, column)
        names = sorted({_name(v) for v in present})
        if len(names) != cfg.num_classes:
            shown = names if len(names) <= 20 else names[:20] + ["..."]
            raise DataError(
                f"{source}: the train split's labels are {len(names)} names "
                f"({', '.join(shown)}), and data.num_classes is {cfg.num_classes}; "
                f"list the names in data.label_names (their order gives the class "
                f"ids), or set data.num_classes: {len(names)}")
        return cls(cfg.num_classes, names, "names", "inferred from the train split",
                   column)

    @property
    def named(self):
        """Whether the classes have names (a map worth saving)."""
        return self.names is not None

    def class_id(self, value, where):
        """The class id of one label value; `where` (`file:row`) prefixes
        the error."""
        if self.values == "names":
            index = self._index.get(_name(value))
            if index is None:
                raise DataError(
                    f"{where}: label {value!r} in column {self.column!r} is not "
                    f"a known class name{did_you_mean(_name(value), self.names)}; "
                    f"known: {', '.join(self.names)} ({self.origin})")
            return index
        if not is_class_id(value):
            raise DataError(
                f"{where}: label {value!r} in column {self.column!r} is not an "
                "integer class id" + (
                    "" if self.named else
                    " (a column of class names needs every train label to be a "
                    "name, or data.label_names)"))
        label = int(value)
        if not 0 <= label < self.num_classes:
            raise DataError(
                f"{where}: label {label} is outside the declared classes "
                f"0..{self.num_classes - 1} (data.num_classes)")
        return label

    def describe(self):
        """`"0 neg, 1 pos (inferred from the train split)"`; None without names."""
        if not self.named:
            return None
        shown = ", ".join(f"{i} {n}" for i, n in enumerate(self.names[:20]))
        more = f", ... ({len(self.names)} classes)" if len(self.names) > 20 else ""
        return f"{shown}{more} ({self.origin})"

    def to_json(self):
        """What `label_map.json` and `export/labels.json` hold."""
        return {"names": list(self.names or []),
                "ids": {name: i for i, name in enumerate(self.names or [])},
                "label_column": self.column,
                "origin": self.origin}


def _name(value):
    """A label value as a name: its text, without surrounding spaces."""
    return str(value).strip()
