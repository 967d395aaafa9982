"""Building part-of-speech tagging as a text-to-text task.

The source is a sentence's words joined by single spaces, the target its
universal POS tags, one per word, lower-cased and joined by single spaces:

```
source   The Rock is destined to be the 21st Century 's new '' Conan '' ...
target   det propn aux verb part aux det adj propn part adj punct propn punct ...
```

Unlike punctuation restoration (`punct_restore.py`), copying the source
scores next to nothing here: a student must learn the task to score at
all. A tag depends on the words on both sides of it (`that` is a
subordinating conjunction or a determiner, `'s` a particle or an
auxiliary), which the bidirectional C-MLM teacher sees and a left-to-right
decoder does not.

`data/pos_tags.tsv` is built from the bundled silver-tagged sentences
(`data/movie_tokens.jsonl`: spaCy's words and UPOS tags of
`data/movie_snippets.tsv`, see `data/movie_tokens.md`), keeping their `id`
and their fixed `split`:

```
python -m kdplug_plugins.cmlm_seq2seq.pos_tags \
    data/movie_tokens.jsonl data/pos_tags.tsv
```

Input: JSON lines, one object per sentence with `id`, `split`, `words` (a
list of strings) and `pos` (one tag per word; `--tag-key` reads another
list, e.g. `ner`). A word or tag must be non-empty and hold no whitespace
(the texts are split on spaces again), `id` and `split` no tab or newline
(the TSV has no quoting); anything else is a `DataError` naming the file,
the line and the field. A sentence without words is left out.

Examples:

>>> pos_pair(["The", "film", "works", "."], ["DET", "NOUN", "VERB", "PUNCT"])
('The film works .', 'det noun verb punct')
"""

import argparse
import sys

from kdplug.data import read_rows
from kdplug.errors import DataError
from kdplug_plugins.cmlm_seq2seq.punct_restore import write_tsv

COLUMNS = ("id", "split", "source", "target")


def pos_pair(words, tags):
    """`(source, target)`: the words joined by spaces, the tags lower-cased
    and joined by spaces."""
    return " ".join(words), " ".join(tag.lower() for tag in tags)


def _text_field(record, key, where):
    value = record.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise DataError(f"{where}: field {key!r}: expected a non-empty string, "
                        f"got {value!r}")
    if any(c in value for c in "\t\r\n"):
        raise DataError(f"{where}: field {key!r}: {value!r} holds a tab or a newline "
                        "(the TSV has no quoting)")
    return value


def _token_list(record, key, where):
    value = record.get(key)
    if not isinstance(value, list):
        raise DataError(f"{where}: field {key!r}: expected a list of strings, "
                        f"got {value!r}")
    for i, token in enumerate(value):
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise DataError(f"{where}: field {key!r}, item {i}: expected a non-empty "
                            f"string without whitespace, got {token!r}")
    return value


def read_record(record, where, tag_key="pos"):
    """`(id, split, words, tags)` of one sentence's JSON object; DataError
    naming `where` (`file:line`) and the field when it is malformed."""
    missing = [k for k in ("id", "split", "words", tag_key) if k not in record]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(map(repr, missing))}")
    words = _token_list(record, "words", where)
    tags = _token_list(record, tag_key, where)
    if len(words) != len(tags):
        raise DataError(f"{where}: {len(words)} words but {len(tags)} "
                        f"{tag_key!r} tags: one tag per word")
    return (_text_field(record, "id", where), _text_field(record, "split", where),
            words, tags)


def build_rows(path, tag_key="pos"):
    """`(id, split, source, target)` for every sentence with words of a
    JSON-lines file (`pos_pair`), in the file's order; blank lines are
    skipped.

    Args:
        path: the JSON-lines file (`data/movie_tokens.jsonl`), read by
            `kdplug.data.read_rows` (its errors name the file and
            the line).
        tag_key: the list of per-word tags to write as the target.
    """
    rows = []
    for number, record in read_rows(path, fmt="jsonl", field="source"):
        id_, split, words, tags = read_record(record, f"{path}:{number}", tag_key)
        if words:
            rows.append((id_, split, *pos_pair(words, tags)))
    if not rows:
        raise DataError(f"{path}: no sentences with words")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build POS tagging as generation (words -> tags) from a "
                    "JSON-lines file of tagged sentences.")
    parser.add_argument("source", help="JSON lines with id, split, words and pos")
    parser.add_argument("output", help="the TSV to write (id, split, source, target)")
    parser.add_argument("--tag-key", default="pos",
                        help="the per-word tag list written as the target (default pos)")
    args = parser.parse_args(argv)
    try:
        rows = build_rows(args.source, args.tag_key)
    except DataError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_tsv(rows, args.output)
    print(f"{args.output}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
