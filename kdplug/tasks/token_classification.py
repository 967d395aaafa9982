import numpy as np

from kdplug.data.examples import Examples
from kdplug.errors import DataError
from kdplug.tasks.task import Task
from kdplug.tasks.task import require_per_token_student


class TokenClassificationTask(Task):
    """Token classification (NER, POS tagging): one tag per word, a head on
    every word piece (`BertClassifier(per_token=True)`).

    Words and their tags are read as lists (JSONL, Parquet, datasets) or as
    space-separated strings (TSV / CSV). Once the teacher's tokenizer is
    known (`prepare`), each word is split into word pieces and its tag put
    on its first piece (`kdplug.data.token_alignment`); every other
    position is `-1` and ignored by the terms and the metrics. The teacher
    is fine-tuned with per-token cross-entropy. Soft term: per-token soft
    targets with temperature on the labelled positions
    (`TokenSoftCrossEntropy`, `T^2 * mean_positions sum_c p_c * -log q_c`,
    as TextBrewer's NER recipe); hard term: per-token cross-entropy
    (`TokenHardCrossEntropy`). Intermediate-layer terms (hidden states,
    attention) are the same as for sentence tasks. Metrics: entity-level F1
    over BIO tags (seqeval, primary) and per-word accuracy (the metric of
    POS tagging).

    Examples:

    ```yaml
    data:
      task: token_classification
      path: data/movie_tokens.jsonl      # {"words": [...], "ner": ["B-PERSON", ...]}
      text_column: words
      label_column: ner
      num_classes: 37                    # or label_names: [O, B-PERSON, ...]
    ```
    """

    name = "token_classification"
    label_kind = "tags"
    primary = "entity_f1"
    label_names = None  # the tags in id order, set by `prepare`

    def head_options(self):
        return {"per_token": True}

    def check_student(self, student, kind):
        require_per_token_student(student, kind, "token classification needs "
                                  "one per word piece")

    def objective(self):
        from kdplug.teacher.objectives import TokenClassificationObjective

        return TokenClassificationObjective(self.label_names)

    def soft_term(self, temperature, weight, class_mean=False, **options):
        from kdplug.terms import TokenSoftCrossEntropy

        return TokenSoftCrossEntropy(temperature, weight=weight,
                                     class_mean=class_mean, **options)

    def hard_term(self, weight, unlabelled=None, **options):
        from kdplug.terms import TokenHardCrossEntropy

        return TokenHardCrossEntropy(weight=weight, **options)

    def metrics(self, names, outputs, labels):
        from kdplug.evaluation.token_metrics import token_metrics

        return token_metrics(names, outputs, labels, self.label_names)

    def prepare(self, splits, encoder, log=None):
        """Aligns every split's word tags to `encoder`'s word pieces, in
        place: labels become `(n, sequence_length)` int32 (the tag on each
        word's first piece, `-1` elsewhere). The pieces are checked against
        the encoder's own encoding of the texts, which every other part of
        the run uses."""
        from kdplug.data.token_alignment import align_word_label_batch

        if splits.label_map is not None:
            self.label_names = splits.label_map.names
        for name, examples in splits.items():
            if examples is None or np.asarray(examples.labels).dtype != object:
                continue  # none, or aligned already
            aligned = align_word_label_batch(
                encoder.tokenizer, [text.split(" ") for text in examples.texts],
                list(examples.labels), encoder.sequence_length)
            check = min(len(examples), 64)
            expected = encoder.encode_examples(examples.take(check))["token_ids"]
            if not np.array_equal(expected, aligned.features["token_ids"][:check]):
                raise DataError(
                    f"{examples.source}: the teacher's tokenizer splits these words "
                    "differently one by one than in a sentence; token "
                    "classification needs a WordPiece (BERT-family) tokenizer")
            if aligned.dropped_words and log is not None:
                log.info("%s split: %d of %d words have no labelled position "
                         "(%d beyond data.sequence_length, %d with no word piece)",
                         name, aligned.dropped_words,
                         sum(len(labels) for labels in examples.labels),
                         aligned.truncated_words, aligned.empty_words)
            splits[name] = Examples(examples.texts, aligned.labels, examples.pairs,
                                    examples.source)
        return splits
