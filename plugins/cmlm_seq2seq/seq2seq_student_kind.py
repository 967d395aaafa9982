"""`Seq2SeqStudentKind`: what the sequence-to-sequence student kinds share."""

import dataclasses
from typing import ClassVar

import kdplug
from kdplug.errors import ConfigError


class Seq2SeqStudentKind(kdplug.StudentKind):
    """A student kind whose model is a sequence-to-sequence generator.

    `cmlm-seq2seq` builds it with `build_seq2seq` (a vocabulary and the
    method's lengths); `build`, which the classification methods call, is a
    `ConfigError` naming the method that trains it. A subclass names its
    Keras model in `model_class()` and keeps its sizes in `Config`.

    Examples:

    ```python
    class MyStudent(Seq2SeqStudentKind):
        name = "my-seq2seq"

        @dataclasses.dataclass
        class Config:
            units: int = 128

        def model_class(self):
            return MySeq2SeqModel   # (vocabulary_size, max_source_length,
                                    #  max_target_length, **config)
    ```
    """

    seq2seq: ClassVar[bool] = True
    table_variants = ()  # not a classifier: no row in docs/models.md

    def model_class(self):
        raise NotImplementedError

    def build(self, teacher, num_classes):
        raise ConfigError(f"student kind {self.name!r} is a sequence-to-sequence "
                          "model; only method cmlm-seq2seq trains it",
                          field="student.kind")

    def build_seq2seq(self, vocabulary_size, max_source_length, max_target_length):
        """The student for a vocabulary and the method's lengths."""
        return self.model_class()(
            vocabulary_size, max_source_length, max_target_length,
            name="student", **dataclasses.asdict(self.config))
