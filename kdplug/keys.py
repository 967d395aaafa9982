"""Every wire key: the names of the features that travel in a batch.

A batch is `(features, labels)`; `features` is a dict of tensors. Readers,
encoders, the teacher-output cache, the teacher pipeline, the Distiller and
the models meet at these names, so they are spelled once, here. (A user's
own Keras model may read other features: one tensor, a tuple of tensors;
those carry no teacher outputs, see `teacher_taps`.)

- Token inputs of BERT-family models: `TOKEN_INPUTS` (`token_ids`,
  `segment_ids`, `padding_mask`).
- Each sentence of a pair encoded on its own (siamese students):
  `PAIR_INPUTS` (`token_ids_a`, `padding_mask_a`, `token_ids_b`,
  `padding_mask_b`).
- Word ids of students with their own vocabulary: `WORD_INPUTS`
  (`word_ids`, `word_padding_mask`; `_b` suffixed for a pair's second text).
- A student with its own subword tokenizer (another family than the
  teacher's, `student.kind: hub`) reads its token inputs under
  `student/` (`student_key("token_ids")`), beside the teacher's.
- Teacher outputs computed outside the train step (the teacher-output cache,
  the teacher pipeline, a method's own targets): `teacher/<tap>`, built by
  `teacher_key()` and read back by `teacher_taps()`.
- `PADDED_GROUPS`: each padding mask with the ids it marks (what trimming
  a batch to its longest sequence cuts together).
- `LABELS`: the key the loss terms read the batch's labels under.
- `TEXT`, `PAIR`: the raw text columns of a dataset before encoding.

Examples:

>>> teacher_key("logits")
'teacher/logits'
>>> sorted(teacher_taps({"token_ids": 1, "teacher/logits": 2, "teacher/hidden/2": 3}))
['hidden/2', 'logits']
>>> teacher_taps((1, 2))  # not a dict: no cached teacher outputs
{}
"""

__all__ = [
    "LABELS", "PADDED_GROUPS", "PADDING_MASK", "PAIR", "PAIR_INPUTS", "SEGMENT_IDS",
    "STUDENT_PREFIX", "TEACHER_PREFIX", "TEXT", "TOKEN_IDS", "TOKEN_INPUTS",
    "WORD_IDS", "WORD_INPUTS", "WORD_PADDING_MASK", "WORD_PAIR_SUFFIX",
    "is_teacher_key", "model_inputs", "student_key", "teacher_key", "teacher_taps",
]

TOKEN_IDS = "token_ids"
SEGMENT_IDS = "segment_ids"
PADDING_MASK = "padding_mask"
TOKEN_INPUTS = (TOKEN_IDS, SEGMENT_IDS, PADDING_MASK)

PAIR_INPUTS = ("token_ids_a", "padding_mask_a", "token_ids_b", "padding_mask_b")

WORD_IDS = "word_ids"
WORD_PADDING_MASK = "word_padding_mask"
WORD_INPUTS = (WORD_IDS, WORD_PADDING_MASK)
WORD_PAIR_SUFFIX = "_b"

STUDENT_PREFIX = "student/"


def student_key(name):
    """The feature key of an input the student encodes with its own
    tokenizer: `student/<name>`."""
    return STUDENT_PREFIX + name

# Every padded input by the mask of its real positions: a batch's inputs can
# be cut to their longest sequence group by group (`kdplug.data.trimming`).
PADDED_GROUPS = {
    PADDING_MASK: (TOKEN_IDS, SEGMENT_IDS),
    PAIR_INPUTS[1]: (PAIR_INPUTS[0],),
    PAIR_INPUTS[3]: (PAIR_INPUTS[2],),
    WORD_PADDING_MASK: (WORD_IDS,),
    WORD_PADDING_MASK + WORD_PAIR_SUFFIX: (WORD_IDS + WORD_PAIR_SUFFIX,),
    STUDENT_PREFIX + PADDING_MASK: (STUDENT_PREFIX + TOKEN_IDS, STUDENT_PREFIX + SEGMENT_IDS),
}

TEACHER_PREFIX = "teacher/"
LABELS = "labels"
TEXT = "text"
PAIR = "pair"


def teacher_key(tap):
    """The feature key of a precomputed teacher tap: `teacher/<tap>`."""
    return TEACHER_PREFIX + tap


def is_teacher_key(key):
    return key.startswith(TEACHER_PREFIX)


def teacher_taps(features):
    """`{tap: value}` of the precomputed teacher outputs in `features`:
    none unless `features` is a dict (one tensor or a tuple of a model's
    inputs has no place for them)."""
    if not isinstance(features, dict):
        return {}
    return {k[len(TEACHER_PREFIX):]: v for k, v in features.items() if is_teacher_key(k)}


def model_inputs(features):
    """`features` without precomputed teacher outputs (what a model reads);
    anything but a dict as it is."""
    if not isinstance(features, dict):
        return features
    return {k: v for k, v in features.items() if not is_teacher_key(k)}
