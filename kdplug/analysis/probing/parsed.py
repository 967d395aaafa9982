"""Parser-neutral dependency parses: what the syntactic probing builders read.

The syntactic probing tasks (`tree_depth`, `tense`, ...) are computed from
`ParsedSentence` objects, never from a parser's own classes, so they can be
tested on parses written by hand and any dependency parser can feed them
(`kdplug.analysis.probing.SpacyParser` converts spaCy's `Doc`s).
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class ParsedToken:
    """One token of a dependency parse.

    Args:
        text: str. The token as it appears in the sentence.
        pos: str. Universal part of speech (`"VERB"`, `"NOUN"`, `"PUNCT"`).
        tag: str. Fine-grained (Penn Treebank) tag (`"VBD"`, `"NNS"`).
        dep: str. Dependency label to the head (`"nsubj"`, `"dobj"`; the
            root's label is `"ROOT"` in spaCy's English models).
        head: int. Index of the head token in the sentence; a root's head
            is its own index.
        morph: dict. Morphological features, e.g.
            `{"Tense": "Past", "VerbForm": "Fin"}` or `{"Number": "Plur"}`.

    Examples:

    ```python
    ParsedToken("dogs", "NOUN", "NNS", "nsubj", 2, {"Number": "Plur"})
    ```
    """

    text: str
    pos: str
    tag: str
    dep: str
    head: int
    morph: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ParsedSentence:
    """A sentence (or a short text) with its dependency parse.

    A text a parser splits into several sentences is one `ParsedSentence`
    whose tokens are those of all its sentences (heads index into the whole
    text): it then has several roots, and `root()` is the first one.

    Args:
        text: str. The original text.
        tokens: tuple of `ParsedToken`, in text order.

    Examples:

    >>> t = ParsedSentence("She left .", (
    ...     ParsedToken("She", "PRON", "PRP", "nsubj", 1, {"Number": "Sing"}),
    ...     ParsedToken("left", "VERB", "VBD", "ROOT", 1, {"Tense": "Past"}),
    ...     ParsedToken(".", "PUNCT", ".", "punct", 1, {})))
    >>> t.root(), t.children(1), t.depth()
    (1, [0, 2], 2)
    """

    text: str
    tokens: tuple

    def __post_init__(self):
        n = len(self.tokens)
        for i, token in enumerate(self.tokens):
            if not 0 <= token.head < n:
                raise ValueError(
                    f"{self.text!r}: token {i} ({token.text!r}) has head "
                    f"{token.head}, outside 0..{n - 1}")

    def roots(self):
        """Indices of the tokens that are their own head, in text order."""
        return [i for i, t in enumerate(self.tokens) if t.head == i]

    def root(self):
        """Index of the first token that is its own head.

        Raises `ValueError` when no token is (an empty or broken parse).
        """
        for i, t in enumerate(self.tokens):
            if t.head == i:
                return i
        raise ValueError(f"{self.text!r}: the parse has no root")

    def children(self, i):
        """Indices of the tokens whose head is token `i` (not `i` itself),
        in text order."""
        return [j for j, t in enumerate(self.tokens) if t.head == i and j != i]

    def subtree(self, i):
        """Sorted indices of token `i` and all the tokens below it."""
        found = {i}
        frontier = [i]
        while frontier:
            nxt = []
            for k in frontier:
                nxt.extend(j for j in self.children(k) if j not in found)
            found.update(nxt)
            frontier = nxt
        return sorted(found)

    def depth(self):
        """Nodes on the longest root-to-leaf path (a root alone is 1).

        Every token counts, punctuation included; with several roots (several
        sentences) it is the deepest of their trees. A cycle (a broken parse)
        raises `ValueError`.
        """
        n = len(self.tokens)
        depths = [0] * n
        for i in range(n):
            path = []
            k = i
            while depths[k] == 0 and self.tokens[k].head != k:
                path.append(k)
                if len(path) > n:
                    raise ValueError(f"{self.text!r}: the parse has a cycle")
                k = self.tokens[k].head
            if depths[k] == 0:  # a root
                depths[k] = 1
            d = depths[k]
            for k in reversed(path):
                d += 1
                depths[k] = d
        return max(depths, default=0)
