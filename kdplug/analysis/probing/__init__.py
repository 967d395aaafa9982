"""Probing data: what each layer of a model knows about a sentence.

Probing (Conneau et al. 2018, "What you can cram into a single vector";
Tenney et al. 2019) trains a simple classifier on a frozen model's sentence
representation to predict a property of the sentence. This package holds the
data side:

- `ProbingTask`: texts and string labels in `train` / `dev` / `test` splits.
- `read_senteval(path)`, `write_senteval(task, path)`: SentEval's probing
  file format (`split<TAB>label<TAB>sentence`, splits `tr` / `va` / `te`).
- `build_probing_task(name, sentences)`, `build_probing_tasks(names, ...)`:
  probing sets built from any list of English sentences. `SURFACE_TASKS`
  (`sentence_length`, `word_content`, `bigram_shift`) need nothing else;
  `SYNTACTIC_TASKS` (`tree_depth`, `top_constituents`, `tense`,
  `subject_number`, `object_number`, `coordination_inversion`) need a
  dependency parser and have silver labels. `BUILDERS` maps each name to
  its builder.
- `ParsedToken`, `ParsedSentence`: the parser-neutral parses the syntactic
  tasks read; `SpacyParser` / `load_spacy_parser()` make them with spaCy
  (`pip install "kdplug[spacy]"`).

Importing this package imports neither spaCy nor TensorFlow.

Examples:

```python
from kdplug.analysis.probing import build_probing_tasks, load_spacy_parser
tasks = build_probing_tasks(["sentence_length", "tense"], sentences,
                            parser=load_spacy_parser(), source="my corpus")
tasks["tense"].to_dict()
```
"""

from kdplug.analysis.probing.builder import ProbingBuilder
from kdplug.analysis.probing.builder import is_word
from kdplug.analysis.probing.builder import tokenize_words
from kdplug.analysis.probing.builders import BUILDERS
from kdplug.analysis.probing.builders import SURFACE_TASKS
from kdplug.analysis.probing.builders import SYNTACTIC_TASKS
from kdplug.analysis.probing.builders import build_probing_task
from kdplug.analysis.probing.builders import build_probing_tasks
from kdplug.analysis.probing.parsed import ParsedSentence
from kdplug.analysis.probing.parsed import ParsedToken
from kdplug.analysis.probing.probing_task import ProbingTask
from kdplug.analysis.probing.senteval import read_senteval
from kdplug.analysis.probing.senteval import write_senteval
from kdplug.analysis.probing.spacy_parser import SpacyParser
from kdplug.analysis.probing.spacy_parser import load_spacy_parser
from kdplug.analysis.probing.surface import BigramShift
from kdplug.analysis.probing.surface import SentenceLength
from kdplug.analysis.probing.surface import WordContent
from kdplug.analysis.probing.syntactic import CoordinationInversion
from kdplug.analysis.probing.syntactic import ObjectNumber
from kdplug.analysis.probing.syntactic import SubjectNumber
from kdplug.analysis.probing.syntactic import Tense
from kdplug.analysis.probing.syntactic import TopConstituents
from kdplug.analysis.probing.syntactic import TreeDepth

__all__ = [
    "BUILDERS",
    "SURFACE_TASKS",
    "SYNTACTIC_TASKS",
    "BigramShift",
    "CoordinationInversion",
    "ObjectNumber",
    "ParsedSentence",
    "ParsedToken",
    "ProbingBuilder",
    "ProbingTask",
    "SentenceLength",
    "SpacyParser",
    "SubjectNumber",
    "Tense",
    "TopConstituents",
    "TreeDepth",
    "WordContent",
    "build_probing_task",
    "build_probing_tasks",
    "is_word",
    "load_spacy_parser",
    "read_senteval",
    "write_senteval",
    "tokenize_words",
]
