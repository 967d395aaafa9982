import dataclasses

from kdplug.mapping.layer_mapping import LayerMapping


class CustomMapping(LayerMapping):
    """Explicit `[teacher_layer, student_layer]` pairs (1-based, 0 =
    embeddings); checked against both models by `resolve()`.

    Config:
        pairs: list of two-element lists.

    Examples:

    ```yaml
    mapping:
      name: custom
      pairs: [[2, 1], [5, 2], [6, 3]]
    ```

    >>> CustomMapping(CustomMapping.Config(pairs=[[2, 1], [6, 3]])).layer_pairs(6, 3)
    [(2, 1), (6, 3)]
    """

    name = "custom"
    description = "explicit (teacher layer, student layer) pairs"

    @dataclasses.dataclass
    class Config:
        pairs: list

        def __post_init__(self):
            if not self.pairs:
                raise ValueError("pairs must list at least one "
                                 "[teacher_layer, student_layer] pair")
            for pair in self.pairs:
                if (
                    not isinstance(pair, (list, tuple))
                    or len(pair) != 2
                    or not all(isinstance(i, int) and not isinstance(i, bool)
                               for i in pair)
                ):
                    raise ValueError(
                        f"pairs must be [teacher_layer, student_layer] integer "
                        f"pairs, got {pair!r}"
                    )
                if min(pair) < 0:
                    raise ValueError(
                        f"layer indexes are 1-based (0 = embeddings), got {pair!r}")

    def layer_pairs(self, num_teacher_layers, num_student_layers):
        return [tuple(p) for p in self.config.pairs]
