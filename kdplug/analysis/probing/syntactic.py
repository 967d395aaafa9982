"""Syntactic and semantic probing tasks (Conneau et al. 2018), computed from
dependency parses (`ParsedSentence`): their labels are silver."""

import collections

from kdplug.analysis.probing.builder import ProbingBuilder

SUBJECT_DEPS = ("nsubj", "nsubjpass", "nsubj:pass")
OBJECT_DEPS = ("dobj", "obj")
AUX_DEPS = ("aux", "auxpass", "aux:pass")
VERB_POS = ("VERB", "AUX")
NUMBERS = ("Sing", "Plur")
TENSES = ("Past", "Pres")


def is_punct(token):
    return token.dep == "punct" or token.pos in ("PUNCT", "SPACE")


class TreeDepth(ProbingBuilder):
    """TreeDepth: the depth of the sentence's dependency tree.

    Conneau et al. (2018) used the depth of the constituency tree; we have a
    dependency parser, so the label is `ParsedSentence.depth()`: the number
    of tokens on the longest root-to-leaf path (a root alone is 1,
    punctuation counts; a text of several sentences takes its deepest tree).
    Depths below `min_depth` are dropped; depths of `max_depth` and more
    are clipped into the last class (`"9+"` by default).

    Args:
        min_depth: int. Shallowest depth kept (default 3).
        max_depth: int. Trees this deep or deeper are labelled
            `f"{max_depth}+"` (default 9).
        min_class_size: int. A depth with fewer sentences is dropped instead
            of shrinking every class to its size.

    Examples:

    ```python
    texts, labels = TreeDepth().build(sentences, rng, parsed=parser.parse(sentences))
    ```
    """

    name = "tree_depth"
    needs_parser = True
    description = (
        "**TreeDepth** (Conneau et al. 2018, silver): the label is the depth of "
        "the sentence's *dependency* tree (Conneau used the constituency "
        "tree): the number of tokens on the longest root-to-leaf path, a root "
        "alone being 1 and punctuation counting; a text the parser splits "
        "into several sentences takes its deepest tree. Depths 3 to 8 are "
        "classes of their own, deeper trees are clipped into `9+`, shallower "
        "ones are dropped. Classes are balanced by downsampling to the "
        "smallest; a depth with fewer than 10 sentences is dropped instead. "
        "The text is the sentence as given.")

    def __init__(self, min_depth=3, max_depth=9, min_class_size=10):
        if not 1 <= min_depth < max_depth:
            raise ValueError(f"need 1 <= min_depth < max_depth, got "
                             f"{min_depth}, {max_depth}")
        self.min_depth = min_depth
        self.max_depth = max_depth
        self.min_class_size = min_class_size

    def details(self):
        return (f"Depths {self.min_depth}..{self.max_depth - 1}, deeper clipped "
                f"into `{self.max_depth}+`.")

    def examples(self, sentences, rng, parsed=None):
        texts, labels = [], []
        for sentence, parse in zip(sentences, parsed):
            depth = parse.depth()
            if depth < self.min_depth:
                continue
            texts.append(sentence)
            labels.append(f"{self.max_depth}+" if depth >= self.max_depth else str(depth))
        return texts, labels


class TopConstituents(ProbingBuilder):
    """TopConst: the sequence of the root's dependents.

    Conneau et al. (2018) classified the sequence of top constituents below
    the sentence node (19 frequent sequences plus "other"). The dependency
    equivalent: the labels of the root's children and `ROOT` for the root
    itself, in sentence order, punctuation left out, e.g.
    `"nsubj ROOT dobj"`. The `num_classes` most frequent sequences (ties
    alphabetically) are the classes; other sentences are dropped (no
    "other" class).

    Args:
        num_classes: int. Number of sequences kept (default 10).
        min_class_size: int. A sequence with fewer sentences is dropped.

    Examples:

    ```python
    TopConstituents.sequence(parse)  # 'nsubj ROOT dobj'
    ```
    """

    name = "top_constituents"
    needs_parser = True
    description = (
        "**TopConst** (Conneau et al. 2018, silver), dependency version: the "
        "label is the sequence of the dependency labels of the root's "
        "children, with `ROOT` for the root itself, in sentence order and "
        "without punctuation (e.g. `nsubj ROOT dobj`); with several sentences, "
        "the first one's root. The 10 most frequent sequences (ties "
        "alphabetically) are the classes and the other sentences are dropped "
        "(Conneau kept 19 sequences plus an \"other\" class). Classes are "
        "balanced by downsampling to the smallest. The text is the sentence "
        "as given.")

    def __init__(self, num_classes=10, min_class_size=10):
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {num_classes}")
        self.num_classes = num_classes
        self.min_class_size = min_class_size

    def details(self):
        return f"Classes: the {self.num_classes} most frequent sequences."

    @staticmethod
    def sequence(parse):
        """The root's children's labels and `ROOT`, in order, no punctuation."""
        root = parse.root()
        items = [root] + [i for i in parse.children(root)
                          if not is_punct(parse.tokens[i])]
        return " ".join("ROOT" if i == root else parse.tokens[i].dep
                        for i in sorted(items))

    def examples(self, sentences, rng, parsed=None):
        sequences = [self.sequence(p) if p.tokens else None for p in parsed]
        counts = collections.Counter(s for s in sequences if s is not None)
        top = set(sorted(counts, key=lambda s: (-counts[s], s))[:self.num_classes])
        pairs = [(t, s) for t, s in zip(sentences, sequences) if s in top]
        return [t for t, _ in pairs], [s for _, s in pairs]


def main_tense(parse):
    """`"Past"` or `"Pres"`: the tense of the main clause's finite verb.

    The root's `Tense` when the root is finite (`VerbForm=Fin`, or no
    `VerbForm`); otherwise (a participle or infinitive root, as in "has
    eaten", "will go") the `Tense` of its first finite `aux`/`auxpass`
    child; None when there is none ("will go": `will` has no tense) or the
    tense is not Past/Pres.

    Examples:

    ```python
    main_tense(parse_of("He has eaten ."))  # 'Pres' (from "has")
    ```
    """
    if not parse.tokens:
        return None
    root = parse.root()
    token = parse.tokens[root]
    if token.morph.get("VerbForm", "Fin") == "Fin" and "Tense" in token.morph:
        tense = token.morph["Tense"]
    else:
        tense = None
        for i in parse.children(root):
            child = parse.tokens[i]
            if (child.dep in AUX_DEPS and "Tense" in child.morph
                    and child.morph.get("VerbForm", "Fin") == "Fin"):
                tense = child.morph["Tense"]
                break
    return tense if tense in TENSES else None


class Tense(ProbingBuilder):
    """Tense: whether the main clause is in the past or the present.

    Conneau et al. (2018) used the tense of the main-clause verb (VBD vs
    VBP/VBZ). The label is `main_tense(parse)`: the root's morphological
    `Tense` when the root is a finite verb, else that of its first finite
    auxiliary ("has eaten" is `Pres`, "was eaten" `Past`); sentences without
    one ("will go", fragments) are dropped.

    Examples:

    ```python
    texts, labels = Tense().build(sentences, rng, parsed=parses)  # labels: Past / Pres
    ```
    """

    name = "tense"
    needs_parser = True
    description = (
        "**Tense** (Conneau et al. 2018, silver): `Past` or `Pres`, the "
        "morphological tense of the main clause's finite verb: the root's "
        "`Tense` when the root is finite, otherwise that of its first finite "
        "`aux`/`auxpass` child (*has eaten* is `Pres`, *was eaten* `Past`); "
        "with several sentences, the first one's root. Sentences with neither "
        "(*will go*, verbless fragments) are dropped. Classes are balanced by "
        "downsampling. The text is the sentence as given.")

    def examples(self, sentences, rng, parsed=None):
        texts, labels = [], []
        for sentence, parse in zip(sentences, parsed):
            tense = main_tense(parse)
            if tense is not None:
                texts.append(sentence)
                labels.append(tense)
        return texts, labels


class _ArgumentNumber(ProbingBuilder):
    deps = ()

    def __init__(self, pos=("NOUN",)):
        self.pos = tuple(pos)

    def details(self):
        return f"Parts of speech: {', '.join(self.pos)}."

    def argument(self, parse):
        """Index of the root's first child with one of `deps`, or None."""
        if not parse.tokens:
            return None
        for i in parse.children(parse.root()):
            if parse.tokens[i].dep in self.deps:
                return i
        return None

    def examples(self, sentences, rng, parsed=None):
        texts, labels = [], []
        for sentence, parse in zip(sentences, parsed):
            i = self.argument(parse)
            if i is None:
                continue
            token = parse.tokens[i]
            number = token.morph.get("Number")
            if token.pos in self.pos and number in NUMBERS:
                texts.append(sentence)
                labels.append(number)
        return texts, labels


class SubjectNumber(_ArgumentNumber):
    """SubjNum: the grammatical number of the main clause's subject.

    The label is the `Number` (`Sing` / `Plur`) of the root's first
    `nsubj`/`nsubjpass` child, kept when that child is a common noun
    (Conneau et al. 2018 used NN vs NNS, so pronouns, which would make it a
    word lookup, are left out by default). Sentences without such a subject
    are dropped.

    Args:
        pos: tuple of str. Parts of speech the subject may have (default
            `("NOUN",)`; add `"PROPN"`, `"PRON"` to keep more sentences).

    Examples:

    ```python
    texts, labels = SubjectNumber().build(sentences, rng, parsed=parses)  # Sing / Plur
    ```
    """

    name = "subject_number"
    needs_parser = True
    deps = SUBJECT_DEPS
    description = (
        "**SubjNum** (Conneau et al. 2018, silver): `Sing` or `Plur`, the "
        "morphological `Number` of the root's first `nsubj`/`nsubjpass` "
        "child, when that child is a common noun (`NOUN`; Conneau used NN vs "
        "NNS, and pronouns would make it a word lookup); with several "
        "sentences, the first one's root. Sentences without one are dropped. "
        "Classes are balanced by downsampling. The text is the sentence as "
        "given.")


class ObjectNumber(_ArgumentNumber):
    """ObjNum: the grammatical number of the main clause's direct object.

    The label is the `Number` (`Sing` / `Plur`) of the root's first `dobj`
    (spaCy's English label; UD's `obj` is accepted too) child, kept when it
    is a common noun. Sentences without one are dropped.

    Args:
        pos: tuple of str. Parts of speech the object may have (default
            `("NOUN",)`).

    Examples:

    ```python
    texts, labels = ObjectNumber().build(sentences, rng, parsed=parses)  # Sing / Plur
    ```
    """

    name = "object_number"
    needs_parser = True
    deps = OBJECT_DEPS
    description = (
        "**ObjNum** (Conneau et al. 2018, silver): `Sing` or `Plur`, the "
        "morphological `Number` of the root's first direct object (`dobj`, "
        "or UD's `obj`), when it is a common noun (`NOUN`, as Conneau's NN vs "
        "NNS); with several sentences, the first one's root. Sentences "
        "without one are dropped. Classes are balanced by downsampling. The "
        "text is the sentence as given.")


def clause_spans(parse):
    """The two coordinated clauses of a sentence, or None.

    A sentence of the text (the subtree of one of its roots, contiguous)
    qualifies when its root is a verb (`VERB`/`AUX`) with a subject
    (`nsubj`/`nsubjpass`) before it, and has exactly one `conj` child, a
    verb with a subject of its own, preceded by a `cc` token (a child of the
    root or of the `conj`). Then, with `a .. b-1` the root's subtree, `k` the
    last such `cc` before the `conj` and `e` the end of the `conj`'s
    subtree:

    - the second clause is tokens `k+1 .. e-1`, trailing punctuation moved
      to the tail, and must be exactly the `conj`'s subtree;
    - the first clause is tokens `a .. k-1`, trailing punctuation (a comma
      before *and*) moved to the connector;
    - the connector is that punctuation and the `cc`;
    - the tail is the rest, `e .. b-1`, and must be punctuation only.

    With several sentences (roots), the first one that qualifies is used.

    Returns `(first, connector, second, tail)`, four lists of token indices
    that together cover tokens `a .. b-1` in order, or None.

    Examples:

    ```python
    clause_spans(parse_of("I came , and she left ."))
    # ([0, 1], [2, 3], [4, 5], [6])
    ```
    """
    for root in parse.roots():
        spans = _clause_spans(parse, root)
        if spans is not None:
            return spans
    return None


def _clause_spans(parse, root):
    tokens = parse.tokens
    sentence = parse.subtree(root)
    a, b = sentence[0], sentence[-1] + 1
    if len(sentence) != b - a:
        return None  # not contiguous

    def has_subject(i, before=None):
        return any(tokens[j].dep in SUBJECT_DEPS and (before is None or j < before)
                   for j in parse.children(i))

    if tokens[root].pos not in VERB_POS or not has_subject(root, before=root):
        return None
    conjs = [i for i in parse.children(root) if tokens[i].dep == "conj"]
    if len(conjs) != 1:
        return None
    conj = conjs[0]
    if conj < root or tokens[conj].pos not in VERB_POS or not has_subject(conj):
        return None
    ccs = [i for i in parse.children(root) + parse.children(conj)
           if tokens[i].dep == "cc" and root < i < conj]
    if not ccs:
        return None
    k = max(ccs)
    subtree = set(parse.subtree(conj)) - {k}
    end = max(subtree) + 1
    second = list(range(k + 1, end))
    if set(second) != subtree:
        return None
    tail = []
    while second and is_punct(tokens[second[-1]]):
        tail.insert(0, second.pop())
    tail.extend(range(end, b))
    if not second or not all(is_punct(tokens[i]) for i in tail):
        return None
    first = list(range(a, k))
    connector = [k]
    while first and is_punct(tokens[first[-1]]):
        connector.insert(0, first.pop())
    if not first or root not in first or subtree & set(first):
        return None
    return first, connector, second, tail


def _lower_first(token):
    text = token.text
    if (token.pos == "PROPN" or text == "I" or not text[:1].isupper()
            or any(c.isupper() for c in text[1:])):
        return text
    return text[0].lower() + text[1:]


def _upper_first(text):
    return text[:1].upper() + text[1:]


class CoordinationInversion(ProbingBuilder):
    """CoordInv: whether two coordinated clauses were swapped.

    Conneau et al. (2018) took sentences made of two coordinated clauses
    and inverted the clauses in half of them. Sentences qualify as
    `clause_spans` says (root verb with a subject, one `conj` verb with its
    own subject, joined by a `cc`; in a text of several sentences, the first
    sentence that qualifies). For each qualifying text, in order,
    `rng.random() < 0.5` swaps the two clauses: second clause, connector,
    first clause, tail (`I`), the text's other sentences staying where they
    are; otherwise the tokens stay (`O`). Both classes' texts are the tokens
    joined with single spaces. In a swapped sentence the new first token
    gets a capital letter and the old first token loses its capital (unless
    it is a proper noun, *I*, or has other capitals), so capitals do not
    give the swap away.

    Examples:

    ```python
    # "I came and she left ." swapped: "She left and I came ."
    texts, labels = CoordinationInversion().build(sentences, rng, parsed=parses)
    ```
    """

    name = "coordination_inversion"
    needs_parser = True
    description = (
        "**CoordInv** (Conneau et al. 2018, silver): label `I` when the two "
        "coordinated clauses of the sentence were swapped, `O` otherwise. A "
        "sentence qualifies when its root is a verb with a subject and has "
        "exactly one `conj` child, a verb with its own subject, joined by a "
        "`cc` token between them (*I came and she left*); in a text of several "
        "sentences the first one that qualifies is used, the others staying "
        "in place. "
        "The second clause is the tokens after the `cc` to the end of the "
        "`conj`'s subtree (less its trailing punctuation, which stays at the "
        "end); the first clause is the tokens before the `cc` (less a trailing "
        "comma, which stays with the `cc`). Half of the sentences (seeded) are "
        "inverted to second clause + connector + first clause + tail (*She "
        "left and I came .*), the new first word capitalised and the old one "
        "lower-cased unless it is a proper noun or *I*. Both classes' texts "
        "are the tokens joined with single spaces. Classes are balanced by "
        "downsampling.")

    def examples(self, sentences, rng, parsed=None):
        texts, labels = [], []
        for parse in parsed:
            spans = clause_spans(parse)
            if spans is None:
                continue
            first, connector, second, tail = spans
            words = [t.text for t in parse.tokens]
            start = first[0]
            stop = (tail or second)[-1] + 1
            before, after = list(range(start)), list(range(stop, len(words)))
            if rng.random() < 0.5:
                words[first[0]] = _lower_first(parse.tokens[first[0]])
                words[second[0]] = _upper_first(words[second[0]])
                order = before + second + connector + first + tail + after
                labels.append("I")
            else:
                order = before + first + connector + second + tail + after
                labels.append("O")
            texts.append(" ".join(words[i] for i in order))
        return texts, labels
