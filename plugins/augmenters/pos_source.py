"""The POS-source contract and the factory the augmenters' configs use."""

import os
import warnings

from kdplug.errors import KdplugError

WORDNET_DIRS = (
    "/usr/share/wordnet",  # Debian / Ubuntu: apt-get install wordnet-base
    "~/nltk_data/corpora/wordnet",  # nltk.download("wordnet")
    "/usr/share/nltk_data/corpora/wordnet",
    "/usr/local/share/wordnet",
)


class POSSource:
    """Maps a word to a part-of-speech class.

    Words with equal tags may replace each other. A tag is any string: a
    coarse POS (`"n"`, `"v-ing"`, `"det"`) or, for a word the source cannot
    place, a class of its own (`"=word"`), which makes it irreplaceable.
    Implement `tag(word)` (the word arrives lower-cased) to plug in another
    tagger or dictionary.

    Examples:

    ```python
    class Suffixes(POSSource):
        def tag(self, word):
            return "r" if word.endswith("ly") else "=" + word
    ```
    """

    def tag(self, word):
        raise NotImplementedError(f"{type(self).__name__}.tag()")

    def fingerprint(self):
        """Identifies the source's data (for cached transfer sets)."""
        return type(self).__name__


def find_wordnet(path=None):
    """The first WordNet database folder found, or None.

    Looks at `path`, `$WNSEARCHDIR` (WordNet's own variable), then the
    folders Debian's `wordnet-base` and nltk's downloader use.
    """
    candidates = [path] if path else [os.environ.get("WNSEARCHDIR"), *WORDNET_DIRS]
    for candidate in candidates:
        if not candidate:
            continue
        candidate = os.path.expanduser(candidate)
        if os.path.isfile(os.path.join(candidate, "index.noun")):
            return candidate
    return None


def make_pos_source(kind="auto", lexicon=None, wordnet_dir=None):
    """Builds the POS source an augmenter config names.

    Args:
        kind: `"wordnet"` (WordNet database files), `"lexicon"` (closed
            class words + a word->tag file + suffix guesses) or `"auto"`
            (WordNet when installed, else the lexicon source, with a warning).
        lexicon: optional path of a `word<TAB>tag` file; its entries win over
            every other rule, in both sources.
        wordnet_dir: a WordNet database folder (default: searched).
    """
    from kdplug_plugins.augmenters.lexicon_pos import LexiconPOS
    from kdplug_plugins.augmenters.wordnet_pos import WordNetPOS

    entries = LexiconPOS.read(lexicon) if lexicon else {}
    if kind not in ("auto", "wordnet", "lexicon"):
        raise KdplugError(
            f"unknown pos_source {kind!r}; use auto, wordnet or lexicon")
    if kind == "lexicon":
        return LexiconPOS(entries)
    found = find_wordnet(wordnet_dir)
    if found is None:
        hint = ("install WordNet (Debian/Ubuntu: apt-get install wordnet-base), "
                "set $WNSEARCHDIR, or use pos_source: lexicon")
        if kind == "wordnet":
            raise KdplugError(f"no WordNet database found; {hint}")
        warnings.warn(f"no WordNet database found, POS classes are guessed "
                      f"from closed-class words and suffixes; {hint}")
        return LexiconPOS(entries)
    return WordNetPOS(found, overrides=entries)
