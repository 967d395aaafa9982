import functools
import os

from kdplug.errors import KdplugError
from kdplug.storage import fingerprint_path
from kdplug_plugins.augmenters.closed_class import CLOSED_CLASS
from kdplug_plugins.augmenters.pos_source import POSSource

_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}

# WordNet's morphological detachment rules (see `morphy(7WN)`):
# (pos, ending, replacement, inflection class of the surface form).
_RULES = (
    ("n", "ses", "s", "pl"), ("n", "xes", "x", "pl"), ("n", "zes", "z", "pl"),
    ("n", "ches", "ch", "pl"), ("n", "shes", "sh", "pl"),
    ("n", "men", "man", "pl"), ("n", "ies", "y", "pl"), ("n", "s", "", "pl"),
    ("v", "ies", "y", "s"), ("v", "es", "e", "s"), ("v", "es", "", "s"),
    ("v", "s", "", "s"), ("v", "ed", "e", "ed"), ("v", "ed", "", "ed"),
    ("v", "ing", "e", "ing"), ("v", "ing", "", "ing"),
    ("a", "er", "", "er"), ("a", "est", "", "est"), ("a", "er", "e", "er"),
    ("a", "est", "e", "est"),
)
# Exception-list forms get their inflection class from their ending
# (verb.exc also lists regular forms with doubled consonants: "running").
_EXCEPTION_ENDINGS = {
    "n": (),
    "v": (("ing", "ing"), ("ed", "ed"), ("s", "s")),
    "a": (("est", "est"), ("er", "er")),
    "r": (("est", "est"), ("er", "er")),
}
_PRIORITY = {"n": 0, "v": 1, "a": 2, "r": 3}


def _exception_class(pos, word):
    if pos == "n":
        return "pl"
    for ending, inflection in _EXCEPTION_ENDINGS[pos]:
        if word.endswith(ending):
            return inflection
    return "irr"


class WordNetPOS(POSSource):
    """POS classes from the WordNet 3.0 database files, read directly.

    A word's class is its most frequent part of speech in WordNet (noun,
    verb, adjective, adverb; ranked by the SemCor sense-tag counts in the
    index files) plus its inflection, found with WordNet's own exception
    lists and detachment rules: `"film" -> "n"`, `"films" -> "n-pl"`,
    `"running" -> "v-ing"`, `"went" -> "v-irr"`, `"better" -> "a-irr"`.
    Inflection in the class keeps replacements grammatical, much like the
    fine-grained tags of the tagger Tang et al. used.

    Closed-class words (`closed_class.CLOSED_CLASS`) come first; a word that
    is in neither gets a class of its own (`"=word"`) and is never replaced;
    digits are `"num"`.

    Only the `index.*` and `*.exc` files are read (no nltk needed; nltk's
    `WordNetCorpusReader` also wants a `lexnames` file that Debian's
    `wordnet-base` does not ship).

    Args:
        path: a WordNet database folder (with `index.noun` etc.).
        overrides: optional `{word: tag}` that wins over every other rule.

    Examples:

    ```python
    pos = WordNetPOS("/usr/share/wordnet")
    pos.tag("movies")  # -> "n-pl"
    ```
    """

    def __init__(self, path, overrides=None):
        if not os.path.isfile(os.path.join(path, "index.noun")):
            raise KdplugError(f"{path}: not a WordNet database folder (no index.noun)")
        self.path = path
        self.overrides = {k.lower(): v for k, v in (overrides or {}).items()}
        self.lemmas, self.exceptions = _load(os.path.abspath(path))

    def tag(self, word):
        word = word.lower()
        if word in self.overrides:
            return self.overrides[word]
        if word in CLOSED_CLASS:
            return CLOSED_CLASS[word]
        if word.isdigit():
            return "num"
        # Most frequent reading; ties go to noun, then verb, adj, adverb.
        readings = sorted(self._analyses(word),
                          key=lambda r: (-r[0], _PRIORITY[r[1][0]]))
        return readings[0][1] if readings else "=" + word

    def fingerprint(self):
        return f"WordNetPOS:{fingerprint_path(os.path.join(self.path, 'index.noun'))}"

    def _analyses(self, word):
        """Yields `(score, tag)` for every reading of `word`."""
        for pos, lemmas in self.lemmas.items():
            if word in lemmas:
                yield lemmas[word], pos
            for base in self.exceptions[pos].get(word, ()):
                if base in lemmas:
                    yield lemmas[base], f"{pos}-{_exception_class(pos, word)}"
        for pos, ending, replacement, inflection in _RULES:
            if word.endswith(ending) and len(word) > len(ending) + 1:
                base = word[:-len(ending)] + replacement
                if base in self.lemmas[pos]:
                    yield self.lemmas[pos][base], f"{pos}-{inflection}"


@functools.lru_cache(maxsize=4)
def _load(path):
    """`({pos: {lemma: score}}, {pos: {inflected: [bases]}})` of a database.

    The score is 1 + the lemma's tagged-sense count, so that frequent
    readings win and every reading counts.
    """
    lemmas, exceptions = {}, {}
    for pos, name in _POS_FILES.items():
        table = {}
        with open(os.path.join(path, f"index.{name}"), encoding="utf-8",
                  errors="replace") as f:
            for line in f:
                if line.startswith(" "):
                    continue  # licence header
                fields = line.split()
                if len(fields) < 6 or "_" in fields[0]:
                    continue  # multi-word expressions are never one token
                pointers = int(fields[3])
                tagged = int(fields[5 + pointers])
                table[fields[0]] = 1 + tagged
        lemmas[pos] = table
        table = {}
        exc = os.path.join(path, f"{name}.exc")
        if os.path.isfile(exc):
            with open(exc, encoding="utf-8", errors="replace") as f:
                for line in f:
                    fields = line.split()
                    if len(fields) >= 2 and "_" not in fields[0]:
                        table[fields[0]] = fields[1:]
        exceptions[pos] = table
    return lemmas, exceptions
