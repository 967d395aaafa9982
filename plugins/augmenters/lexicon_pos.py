import os

from kdplug.errors import DataError
from kdplug.storage import fingerprint
from kdplug_plugins.augmenters.closed_class import CLOSED_CLASS
from kdplug_plugins.augmenters.pos_source import POSSource

# (ending, tag) guesses for words the lexicon lacks, longest endings first.
SUFFIX_GUESSES = (
    ("ations", "n-pl"), ("nesses", "n-pl"), ("ments", "n-pl"),
    ("tions", "n-pl"), ("sions", "n-pl"), ("ities", "n-pl"),
    ("ation", "n"), ("ness", "n"), ("ment", "n"), ("tion", "n"),
    ("sion", "n"), ("ity", "n"), ("ism", "n"), ("ship", "n"), ("hood", "n"),
    ("ously", "r"), ("fully", "r"), ("ly", "r"),
    ("ous", "a"), ("ful", "a"), ("ive", "a"), ("able", "a"), ("ible", "a"),
    ("less", "a"), ("ical", "a"), ("ish", "a"),
    ("ing", "v-ing"), ("ed", "v-ed"),
)


class LexiconPOS(POSSource):
    """POS classes from a word list, closed-class words and suffixes.

    The fallback when WordNet is not installed, and the way to bring a
    tagger's output or a domain dictionary: `lexicon` entries win, then
    closed-class words, then (optionally) suffix guesses (`-ness` -> `n`,
    `-ly` -> `r`, `-ing` -> `v-ing`, ...); any other word is a class of its
    own (`"=word"`) and is never replaced. Use the same tag names as
    `WordNetPOS` (`n`, `n-pl`, `v`, `v-ed`, `a`, `r`, ...) to mix them.

    Args:
        lexicon: `{word: tag}` (words are matched lower-cased).
        guess_suffixes: apply `SUFFIX_GUESSES` to unknown words.

    Examples:

    ```python
    pos = LexiconPOS({"movie": "n", "film": "n", "great": "a"})
    pos.tag("Movie"), pos.tag("the"), pos.tag("kindness"), pos.tag("xyz")
    # -> ("n", "det", "n", "=xyz")
    ```
    """

    def __init__(self, lexicon=None, guess_suffixes=True):
        self.lexicon = {k.lower(): str(v) for k, v in (lexicon or {}).items()}
        self.guess_suffixes = bool(guess_suffixes)

    @staticmethod
    def read(path):
        """Reads a `word<TAB>tag` file (`#` comments, blank lines allowed)."""
        if not os.path.isfile(path):
            raise DataError(f"{path}: POS lexicon not found (augment[].lexicon)")
        table = {}
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, start=1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                fields = line.split("\t") if "\t" in line else line.split()
                if len(fields) != 2:
                    raise DataError(
                        f"{path}:{line_no}: expected 'word<TAB>tag', got {line!r}")
                table[fields[0].lower()] = fields[1]
        return table

    def tag(self, word):
        word = word.lower()
        if word in self.lexicon:
            return self.lexicon[word]
        if word in CLOSED_CLASS:
            return CLOSED_CLASS[word]
        if word.isdigit():
            return "num"
        if self.guess_suffixes:
            for ending, tag in SUFFIX_GUESSES:
                if word.endswith(ending) and len(word) > len(ending) + 2:
                    return tag
        return "=" + word

    def fingerprint(self):
        return "LexiconPOS:" + fingerprint(
            {"lexicon": self.lexicon, "suffixes": self.guess_suffixes})
