"""Closed-class English words and the coarse tag each gets.

Function words are what WordNet leaves out (or lists with rare senses: "a"
the letter, "in" the inch, "it" the game), so every POS source looks here
first. Replacement stays within a tag: "the" <-> "a", "in" <-> "on".
"""

_GROUPS = {
    "det": "the a an this that these those every each some any no another "
           "either neither",
    "pron": "i you he she it we they me him her us them myself yourself "
            "himself herself itself ourselves themselves one",
    "poss": "my your his its our their",
    "wh": "what which who whom whose where when why how",
    "prep": "in on at of for with by from to into onto about over under "
            "after before between through during without within against "
            "among along across behind beyond despite toward towards upon "
            "than like",
    "conj": "and or but nor yet so",
    "sub": "if because although though while unless since whether until",
    "be": "is are was were be been being am",
    "aux": "do does did have has had",
    "modal": "can could will would shall should may might must",
    "neg": "not never",
    "ex": "there",
}

CLOSED_CLASS = {
    word: tag for tag, words in _GROUPS.items() for word in words.split()
}
