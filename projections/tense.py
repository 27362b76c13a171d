"""Whether a word is a verb in the past tense: what tells a happening from a state (mining's
:func:`workers.mining.statements.is_event`) and which "Friday" a turn means
(:mod:`.relative_time`: "I won on Friday" is the one before it was said)."""
from __future__ import annotations

IRREGULAR_PAST = frozenset("""went got made took saw had did said came found gave knew
thought told felt became began brought bought built caught chose drew drove ate fell fought
flew forgot grew heard held kept left lent lost meant met paid put ran read rode rang rose
sang sat sent set shot showed shut slept spent spoke stood stole swam taught threw
understood woke wore won wrote sold fed led dug hung hid bit lit slid spun stuck struck
swept swung wept wound shook froze forgave bent bred blew broke dealt dove drank dreamt
fled flung forbade forgot got ground leapt lay misled overcame overtook rebuilt
repaid sank shone shrank sought sprang stank stung strove swore tore threw trod
undertook upheld withdrew""".split())
# past participles that are no past tense ("has just seen Dune", "has recently given up")
_PARTICIPLES = frozenset("""done gone seen taken given written eaten driven known shown grown
begun chosen fallen forgotten gotten ridden risen spoken stolen sworn thrown woken worn
broken frozen hidden""".split())
# past tenses that read as an imperative or infinitive too ("Read this book", "help me set")
SAME_AS_BASE = frozenset("read put set shut hit cut let quit spread".split())
_STATE_PAST = frozenset("""named called married interested excited based used tired engaged
retired obsessed scared allergic divorced adopted located""".split())
# "-eed" past tenses, which is_past leaves out with "need", "speed", "succeed": a sentence
# that opens with one is mostly a reply ("Agreed, Mel."), not a verb whose "I" went unsaid
PAST_IN_EED = frozenset("agreed disagreed freed guaranteed decreed refereed".split())
# a word before which an "-ed" word is an adjective, no verb ("loves drinking iced coffee",
# "bought a used car", "the user's mixed feelings")
_BEFORE_ADJECTIVE = frozenset("a an the my his her their our your its some".split())


def is_past(word: str, before: str = "") -> bool:
    """Whether ``word`` (casefolded), after the word ``before``, is a verb in the past
    tense: an irregular one, "was"/"were", or an "-ed" word that is no adjective ("iced
    coffee", "the user's mixed feelings") nor a state ("married", "based")."""
    return word in IRREGULAR_PAST or word in ("was", "were") or (
        word.endswith("ed") and not word.endswith("eed") and word not in _STATE_PAST
        and before not in _BEFORE_ADJECTIVE and not before.endswith(("ing", "'s")))


def is_participle(word: str) -> bool:
    """Whether ``word`` (casefolded) may be a past participle: an "-ed" word, an irregular
    past ("had", "got") or an irregular participle ("seen", "taken")."""
    return word.endswith("ed") or word in IRREGULAR_PAST or word in _PARTICIPLES
