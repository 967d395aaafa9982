"""Declared list constraints (`Items`), checked by the schema parser like
ranges: the message names the file, the dotted field and the value."""

import dataclasses
from typing import Annotated
from typing import List

import pytest

from kdplug.config import Items
from kdplug.config import parse
from kdplug.errors import ConfigError


@dataclasses.dataclass
class Task:
    name: str


@dataclasses.dataclass
class Config:
    stages: Annotated[List[str], Items(min=1, distinct=True, noun="stage")] = \
        dataclasses.field(default_factory=lambda: ["a"])
    tasks: Annotated[List[Task], Items(distinct=True, key="name", noun="task")] = \
        dataclasses.field(default_factory=list)
    pairs: Annotated[List[int], Items(min=2, noun="pair")] = \
        dataclasses.field(default_factory=lambda: [1, 2])


@pytest.mark.parametrize("doc,message", [
    ({"stages": []}, "x.yaml: method.stages: must list at least one stage (got [])"),
    ({"stages": ["a", "b", "a"]},
     "x.yaml: method.stages: must not list a stage twice (a) (got ['a', 'b', 'a'])"),
    ({"tasks": [{"name": "t"}, {"name": "u"}, {"name": "t"}]},
     "x.yaml: method.tasks: must not list a task twice (t) (got ['t', 'u', 't'])"),
    ({"pairs": [1]}, "x.yaml: method.pairs: must list at least 2 pairs (got [1])"),
])
def test_a_list_breaking_its_items_names_field_and_value(doc, message):
    with pytest.raises(ConfigError) as caught:
        parse(Config, doc, "method", "x.yaml")
    assert str(caught.value) == message


def test_lists_within_their_items_pass():
    config = parse(Config, {"stages": ["a", "b"], "tasks": [{"name": "t"}, {"name": "u"}],
                            "pairs": [1, 1]}, "method", "x.yaml")
    assert config.stages == ["a", "b"] and [t.name for t in config.tasks] == ["t", "u"]
    assert config.pairs == [1, 1]  # not `distinct`: repeats are fine
