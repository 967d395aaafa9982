"""Corpus BLEU and exact match of generated text.

BLEU is keras-hub's `keras_hub.metrics.Bleu` (a maintained reimplementation
of SacreBLEU's corpus BLEU with its default `13a` tokenizer, 4-grams, no
smoothing), reported on SacreBLEU's 0-100 scale.

Examples:

>>> corpus_bleu(["the cat sat on the mat"], ["the cat sat on the mat"])
100.0
>>> exact_match(["a b", "c"], ["a b", "d"])
0.5
>>> copy_source_scores(["a b c d"], ["a b c d"], normalize=list)
{'bleu': 100.0, 'exact_match': 1.0}
"""


def corpus_bleu(hypotheses, references):
    """Corpus BLEU (0-100) of `hypotheses` against one reference each."""
    import keras_hub

    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if not any(h.strip() for h in hypotheses):
        return 0.0  # nothing generated (keras-hub would divide by zero)
    metric = keras_hub.metrics.Bleu()
    metric.update_state([[r] for r in references], hypotheses)
    return round(float(metric.result()) * 100.0, 4)


def exact_match(hypotheses, references):
    """The share of hypotheses equal to their reference (whitespace
    collapsed)."""
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if not hypotheses:
        return 0.0
    same = sum(" ".join(h.split()) == " ".join(r.split())
               for h, r in zip(hypotheses, references))
    return same / len(hypotheses)


def copy_source_scores(sources, targets, normalize):
    """BLEU and exact match of emitting every source unchanged: the
    copy-the-source baseline a student must beat to have learnt more than
    copying its input (on punctuation restoration, most of the target's
    words are the source's).

    Scored as the students are: `normalize` is applied to the references
    (what `Seq2SeqEncoder.normalize` writes: lower-cased for an uncased
    vocabulary, punctuation split off) and to the sources, which are then
    what a student copying its input word piece by word piece would emit.

    Args:
        sources: the source texts of the evaluated split.
        targets: their reference texts.
        normalize: `fn(texts) -> texts` (`Seq2SeqEncoder.normalize`).

    Returns:
        `{"bleu": 0-100, "exact_match": 0-1}`.

    Examples:

    ```python
    copy_source_scores(*data.splits["test"], encoder.normalize)
    # {"bleu": 70.27, "exact_match": 0.0047} on data/punct_restore.tsv's test split
    ```
    """
    hypotheses, references = normalize(list(sources)), normalize(list(targets))
    return {"bleu": corpus_bleu(hypotheses, references),
            "exact_match": exact_match(hypotheses, references)}
