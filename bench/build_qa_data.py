"""An offline extractive QA set (SQuAD v2.0 form) from the bundled movie
sentences: cloze questions whose answer is a word of the context.

    python bench/build_qa_data.py            # data/movie_qa.jsonl and data/movie_qa.md

No QA data ships offline, and nothing may be downloaded, so this builds one
from `data/movie_snippets.tsv` (id, split, score, label, text), keeping its
fixed train / dev / test split:

- each context is `--sentences` (3) sentences of one split, in a seeded
  shuffled order, joined by single spaces;
- each context gets one question: one of its sentences with one word
  replaced by `what` (a word of at least 4 letters, not a stop word, found
  once in the context); the answer is that word where the context holds it;
- with probability `--unanswerable` (0.2) the question is built from a
  sentence of the next context instead, so the context does not answer it
  (SQuAD v2.0's unanswerable questions, `is_impossible`).

Rows are Hugging Face `squad`'s flat form plus the split: `{"id", "split",
"question", "context", "answers": {"text", "answer_start"},
"is_impossible"}`. A data card (`movie_qa.md`) beside the file says how it
was built and what it can and cannot show.
"""

import argparse
import csv
import json
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")
SPLITS = ("train", "dev", "test")
WORD = re.compile(r"\S+")
# Words never asked for: too common to make a question with one answer.
STOP_WORDS = frozenset(
    "about after again also been before being could does doing down each from "
    "have having here into just more most much only other over same should "
    "some such than that their them then there these they this those through "
    "very what when where which while will with would your film films movie "
    "movies".split())


def read_sentences(path):
    """`{split: [text, ...]}` of the bundled TSV (no quoting, one header)."""
    by_split = {split: [] for split in SPLITS}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            by_split[row["split"]].append(row["text"].strip())
    return by_split


def candidates(sentence, context):
    """`(start, end)` in `sentence` of the words a question may ask for: at
    least 4 letters, not a stop word, found exactly once in `context`
    (case-insensitive, whole whitespace words)."""
    counts = {}
    for match in WORD.finditer(context):
        counts[match.group().lower()] = counts.get(match.group().lower(), 0) + 1
    return [(m.start(), m.end()) for m in WORD.finditer(sentence)
            if m.group().isalpha() and len(m.group()) >= 4
            and m.group().lower() not in STOP_WORDS and counts[m.group().lower()] == 1]


def answerable(sentence, start, end, context):
    """Whether some sentence of `context` is `sentence` with another word
    at `start:end` (the question would have an answer there)."""
    pattern = re.escape(sentence[:start]) + r"\S+" + re.escape(sentence[end:])
    return re.search(pattern, context) is not None


def build_split(sentences, split, rng, per_context, unanswerable):
    """The rows of one split."""
    order = list(range(len(sentences)))
    rng.shuffle(order)
    contexts = [[sentences[i] for i in order[k:k + per_context]]
                for k in range(0, len(order) - per_context + 1, per_context)]
    rows = []
    for index, parts in enumerate(contexts):
        context = " ".join(parts)
        impossible = rng.random() < unanswerable
        pool = contexts[(index + 1) % len(contexts)] if impossible else parts
        source = " ".join(pool)
        choices = [(s, span) for s in pool for span in candidates(s, source)]
        if impossible:  # nothing in this context may answer it
            words = {w.lower() for w in WORD.findall(context)}
            choices = [(s, (a, b)) for s, (a, b) in choices
                       if s[a:b].lower() not in words and not answerable(s, a, b, context)]
        if not choices:
            continue
        sentence, (start, end) = choices[rng.randrange(len(choices))]
        word = sentence[start:end]
        question = sentence[:start] + "what" + sentence[end:]
        answers = {"text": [], "answer_start": []}
        if not impossible:
            offset = context.index(sentence)
            answers = {"text": [word], "answer_start": [offset + start]}
        rows.append({"id": f"{split}-{index}", "split": split, "question": question,
                     "context": context, "answers": answers,
                     "is_impossible": impossible})
    return rows


CARD = """# movie_qa.jsonl: cloze questions over movie sentences (extractive QA, built)

Extractive question answering data in SQuAD v2.0's form, **built by a script
from `movie_snippets.tsv`** (same folder): no QA data ships offline. Every
context is {sentences} sentences of one split joined by spaces; its one
question is one of those sentences with one word (at least 4 letters, not a
stop word, found once in the context) replaced by `what`, and the answer is
that word in the context. A share of {unanswerable:.0%} of the questions are
built from a sentence of another context and have no answer in theirs
(`is_impossible`, SQuAD v2.0).

| split | questions | answerable | unanswerable |
|---|---|---|---|
{table}

One JSON object per line: `id`, `split`, `question`, `context`, `answers`
(`text` and `answer_start` lists, Hugging Face `squad`'s form),
`is_impossible`.

**What it can show**: that a run reads SQuAD-form data, cuts contexts into
windows, fine-tunes a teacher and distils a student on span extraction from
real English text, and how a distilled student compares with the same
student fine-tuned on the answers alone, measured with SQuAD's exact match
and F1 (v2.0: answerable and unanswerable questions).
**What it cannot show**: SQuAD numbers. A question here is a copy of a
context sentence with one word missing, so it is answered by lexical
matching (find the sentence, take the word the copy lacks), which is easier
than SQuAD's paraphrased questions; the papers' EM/F1 are not comparable.

Built by

```
python bench/build_qa_data.py
```

(seed {seed}). Licence: the sentences are the movie-review snippets of the
`vaderSentiment` 3.3.2 ground-truth files (Hutto & Gilbert, ICWSM 2014), MIT
licence, see `LICENSE-vader.txt` in this folder, which applies to this file too.
"""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="bench/build_qa_data.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=3)
    parser.add_argument("--unanswerable", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--source", default=os.path.join(DATA, "movie_snippets.tsv"))
    parser.add_argument("--out", default=os.path.join(DATA, "movie_qa.jsonl"))
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    sentences = read_sentences(args.source)
    rows = [row for split in SPLITS for row in build_split(
        sentences[split], split, rng, args.sentences, args.unanswerable)]
    with open(args.out, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    table = "\n".join(
        f"| {split} | {sum(r['split'] == split for r in rows):,} | "
        f"{sum(r['split'] == split and not r['is_impossible'] for r in rows):,} | "
        f"{sum(r['split'] == split and r['is_impossible'] for r in rows):,} |"
        for split in SPLITS)
    card = os.path.splitext(args.out)[0] + ".md"
    with open(card, "w", encoding="utf-8") as f:
        f.write(CARD.format(sentences=args.sentences, unanswerable=args.unanswerable,
                            table=table, seed=args.seed))
    print(f"{len(rows)} questions: {args.out}\ndata card: {card}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
