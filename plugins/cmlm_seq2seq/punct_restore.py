"""Building the punctuation-and-casing restoration task from English text.

A text-to-text task that needs no labels: the source is a sentence
lower-cased with its punctuation removed, the target the sentence as
written. Restoring it needs the whole sentence (a comma or a question
mark depends on what follows), which is what a bidirectional C-MLM
teacher sees and a left-to-right decoder does not.

`data/punct_restore.tsv` is built from the bundled movie-review snippets
(`data/movie_snippets.tsv`, MIT, see `data/LICENSE-vader.txt`), keeping
their `id` and their fixed `split`:

```
python -m kdplug_plugins.cmlm_seq2seq.punct_restore \
    data/movie_snippets.tsv data/punct_restore.tsv
```

Rule, per sentence (`strip_punctuation`): delete every character whose
Unicode category is punctuation (`P*`: `. , ; : ! ? ' " - ( ) ...`),
lower-case, collapse runs of whitespace; rows whose source ends up empty
are left out. So `The Rock's ''Conan'' is co-written.` becomes `the rocks
conan is cowritten`.

Examples:

>>> strip_punctuation("Well, it's a co-production -- isn't it?")
'well its a coproduction isnt it'
"""

import argparse
import sys
import unicodedata

from kdplug import storage
from kdplug.data import read_rows

COLUMNS = ("id", "split", "source", "target")


def strip_punctuation(text):
    """`text` lower-cased, without punctuation, whitespace collapsed."""
    kept = "".join(c for c in text if not unicodedata.category(c).startswith("P"))
    return " ".join(kept.lower().split())


def build_rows(path, text_column="text", id_column="id", split_column="split"):
    """`(id, split, source, target)` for every row of a text file kdplug
    reads (its texts must hold no tabs or newlines)."""
    rows = []
    for _, row in read_rows(path):
        target = " ".join(row[text_column].split())
        source = strip_punctuation(target)
        if source:
            rows.append((row[id_column], row[split_column], source, target))
    return rows


def write_tsv(rows, path):
    """Writes the rows with a header line (atomically)."""
    lines = ["\t".join(COLUMNS)] + ["\t".join(row) for row in rows]
    return storage.write_text(path, "\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build the punctuation/casing restoration task from a text TSV.")
    parser.add_argument("source", help="input file with id, split and text columns")
    parser.add_argument("output", help="the TSV to write (id, split, source, target)")
    parser.add_argument("--text-column", default="text")
    args = parser.parse_args(argv)
    rows = build_rows(args.source, args.text_column)
    write_tsv(rows, args.output)
    print(f"{args.output}: {len(rows)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
