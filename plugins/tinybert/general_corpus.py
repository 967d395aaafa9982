"""Building `data/general_english.txt`, the general corpus of TinyBERT's
general distillation stage (`method.general_corpus`).

TinyBERT distils its general student from the pre-trained teacher on a
general-domain corpus (English Wikipedia in the paper). Nothing of that
size ships offline; the nearest real, redistributable English text is the
rest of the ground truth that `vaderSentiment` 3.3.2's source distribution
on PyPI carries (MIT, `data/LICENSE-vader.txt`; Hutto & Gilbert, ICWSM
2014), of which kdplug's task data (movie snippets, tweets) is a part:
5,190 sentences from 500 New York Times opinion articles and 3,708
sentences of Amazon product reviews. Neither is a task's domain, and
neither carries labels here (their sentiment ratings are dropped).

```
pip download --no-deps --no-binary :all: vaderSentiment==3.3.2
python -m kdplug_plugins.tinybert.general_corpus \
    vaderSentiment-3.3.2.tar.gz data/general_english.txt
```

Rule (`corpus_lines`): the text column (third) of each ground-truth file,
whitespace collapsed, in file order (news first); empty texts and exact
repeats are left out. The output holds one text per line (UTF-8), as
`TextCorpus` reads it.

Examples:

>>> corpus_lines(["1_1\\t0.4\\tOn Dec. 19,  around noon.\\r", "1_2\\t0.1\\t \\r",
...               "1_3\\t0.2\\tOn Dec. 19, around noon."])
['On Dec. 19, around noon.']
"""

import argparse
import io
import sys
import tarfile

from kdplug import storage

# The members of `hutto_ICWSM_2014.tar.gz` (inside the sdist), in order.
SOURCES = ("nytEditorialSnippets_GroundTruth.txt",
           "amazonReviewSnippets_GroundTruth.txt")
INNER_ARCHIVE = "additional_resources/hutto_ICWSM_2014.tar.gz"


def corpus_lines(lines):
    """The texts of ground-truth lines (`id <tab> rating <tab> text`),
    whitespace collapsed, empty ones and repeats dropped, in order."""
    seen, texts = set(), []
    for line in lines:
        parts = line.rstrip("\r\n").split("\t")
        text = " ".join(parts[2].split()) if len(parts) >= 3 else ""
        if text and text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def read_sdist(path):
    """`{name: lines}` of `SOURCES` from the vaderSentiment sdist at `path`."""
    with tarfile.open(path) as sdist:
        inner = next((m for m in sdist.getmembers()
                      if m.name.endswith(INNER_ARCHIVE)), None)
        if inner is None:
            raise SystemExit(f"{path}: no {INNER_ARCHIVE}; give the "
                             "vaderSentiment 3.3.2 source distribution")
        data = sdist.extractfile(inner).read()
    found = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive.getmembers():
            name = member.name.rsplit("/", 1)[-1]
            if name in SOURCES:
                found[name] = archive.extractfile(member).read().decode("utf-8")
    missing = [name for name in SOURCES if name not in found]
    if missing:
        raise SystemExit(f"{path}: {INNER_ARCHIVE} has no {', '.join(missing)}")
    return {name: found[name].splitlines() for name in SOURCES}


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build TinyBERT's general corpus from the vaderSentiment sdist.")
    parser.add_argument("sdist", help="vaderSentiment-3.3.2.tar.gz")
    parser.add_argument("output", help="the text file to write (one text a line)")
    args = parser.parse_args(argv)
    files = read_sdist(args.sdist)
    texts = corpus_lines(line for name in SOURCES for line in files[name])
    storage.write_text(args.output, "\n".join(texts) + "\n")
    print(f"{args.output}: {len(texts)} texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
