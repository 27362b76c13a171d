"""The words for a person's relatives and pets, in one place: what makes a statement a
relationship (mining's lasting facts, which never fade), a line of MEMORY.md's People
section, and a kind in a person's family line.

:data:`RELATIVES` maps each word, as said, to its kind ("mum" and "mom" are a mother,
"kids" a kid); :data:`PETS` are the words for a pet that say no more than that they are
one (the family line reads the pet attribute's kinds: "turtles").
"""
from __future__ import annotations

import re
from collections.abc import Iterable

RELATIVES = {
    "partner": "partner", "wife": "wife", "husband": "husband", "girlfriend": "girlfriend",
    "boyfriend": "boyfriend", "fiancé": "fiancé", "fiancée": "fiancé", "fiance": "fiancé",
    "fiancee": "fiancé", "sister": "sister", "sisters": "sister", "brother": "brother",
    "brothers": "brother", "son": "son", "sons": "son", "daughter": "daughter",
    "daughters": "daughter", "kid": "kid", "kids": "kid", "child": "child",
    "children": "child", "twins": "twin", "grandchildren": "grandchild",
    "grandkids": "grandchild", "grandson": "grandson", "granddaughter": "granddaughter",
    "cousin": "cousin", "cousins": "cousin", "aunt": "aunt", "uncle": "uncle",
    "niece": "niece", "nephew": "nephew", "stepson": "stepson",
    "stepdaughter": "stepdaughter", "mom": "mother", "mum": "mother", "mother": "mother",
    "dad": "father", "father": "father", "parents": "parent", "grandma": "grandmother",
    "grandpa": "grandfather", "grandmother": "grandmother", "grandfather": "grandfather",
    "grandparents": "grandparent"}
PETS = ("pet", "pets", "dog", "dogs", "cat", "cats", "puppy", "kitten")


def alternation(words: Iterable[str]) -> str:
    """``words`` as a regular expression alternation, longest first (so "sisters" is not
    read as "sister")."""
    return "|".join(sorted(map(re.escape, set(words)), key=lambda w: (-len(w), w)))


KIN_WORDS = alternation([*RELATIVES, *PETS])
