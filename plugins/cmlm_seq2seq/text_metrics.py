"""Corpus BLEU and exact match of generated text.

BLEU is keras-hub's `keras_hub.metrics.Bleu` (a maintained reimplementation
of SacreBLEU's corpus BLEU with its default `13a` tokenizer, 4-grams, no
smoothing), reported on SacreBLEU's 0-100 scale.

Examples:

>>> corpus_bleu(["the cat sat on the mat"], ["the cat sat on the mat"])
100.0
>>> exact_match(["a b", "c"], ["a b", "d"])
0.5
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
