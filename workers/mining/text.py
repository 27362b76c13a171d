"""What a memory says and what it is about: normal forms, content words, subject keys.

- :func:`normal` — the form two texts must share to be the same memory (case, punctuation
  and spacing ignored).
- :func:`near_duplicate` — two texts that say the same thing: cosine of their embeddings at
  or above :data:`NEAR_DUPLICATE_COSINE` *and* no sign that they differ in what matters:
  the same numbers, the same proper nouns, and their shared content words in the same order.
  The guards are there because MiniLM scores "I prefer tabs over spaces" / "I prefer spaces
  over tabs" 0.979 and "I have 2 kids" / "I have 3 kids" above 0.95 — merging those would
  lose the newer fact. Measured pairs (all-MiniLM-L6-v2 fp32): "My dog is called Rex" / "My
  dog's name is Rex" 0.940 (a duplicate), "Caroline: I went to a LGBTQ support group
  yesterday" / "Caroline went to an LGBTQ support group" 0.942 (a duplicate), "I live in
  Berlin" / "I live in Lisbon" 0.550, "Caroline likes painting" / "… hiking" 0.615 (not).
- :func:`subsumes` / :func:`says_as_much` — a shorter statement whose words, numbers and
  proper nouns are all in a close (same cosine) fuller one says nothing more: mining does
  not state it again, and dreaming merges it into the fuller one.
- :func:`zipf` — how common a word is in general English (wordfreq's Zipf scale).
- :func:`subject_key` — who and which attribute a fact sets ("maya|home"): two memories with
  the same key and different content contradict each other, and the newer one wins
  (dreaming). Only attributes that hold one value at a time get a key; others get "".
"""
from __future__ import annotations

import re
from functools import cache

from projections.fts import STOPWORDS
from projections.kin import KIN_WORDS

NEAR_DUPLICATE_COSINE = 0.90
GENERIC_SPEAKERS = frozenset({"", "user", "assistant", "system", "you", "me"})

_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_CAPITALISED = re.compile(r"([.!?:]\s+|^\s*)?\b([A-Z][a-z]+)\b")


def normal(text: str) -> str:
    """Lower case, punctuation dropped, spacing collapsed."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


@cache
def zipf(word: str) -> float:
    """``word``'s Zipf frequency in general English (0 when wordfreq does not know it)."""
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en"))


def folded(text: str) -> str:
    """``text`` as the patterns read it: lower-cased, with a straight apostrophe ("I’m" →
    "i'm")."""
    return text.casefold().replace("’", "'")


def content_words(text: str) -> list[str]:
    """Words that carry meaning, in order (no stopwords, no one-letter pieces)."""
    words: list[str] = []
    for word in _WORD.findall(folded(text)):
        word = word.strip("'-")
        if word.endswith("'s"):
            word = word[:-2]
        if "'" in word or len(word) < 2 or word in STOPWORDS or word in _EXTRA_STOP:
            continue
        words.append(word)
    return words


_EXTRA_STOP = frozenset({"user", "i'm", "i've", "i'd", "i'll", "don't", "it's", "really",
                         "also", "just", "like", "get", "got", "one", "lot", "much"})


def proper_nouns(text: str) -> set[str]:
    """Capitalised words that do not start a sentence."""
    return {m.group(2) for m in _CAPITALISED.finditer(text) if m.group(1) is None}


def _shared_in_order(a: list[str], b: list[str]) -> bool:
    shared = set(a) & set(b)
    first = [w for i, w in enumerate(a) if w in shared and w not in a[:i]]
    second = [w for i, w in enumerate(b) if w in shared and w not in b[:i]]
    return first == second


def differs_in_substance(a: str, b: str) -> bool:
    """True when two similar texts differ in numbers, proper nouns or word order."""
    if set(_NUMBER.findall(a)) != set(_NUMBER.findall(b)):
        return True
    nouns_a, nouns_b = proper_nouns(a), proper_nouns(b)
    if nouns_a and nouns_b and nouns_a != nouns_b:
        return True
    return not _shared_in_order(content_words(a), content_words(b))


def subsumes(fuller: str, shorter: str) -> bool:
    """True when ``shorter`` says nothing ``fuller`` does not: its content words a strict
    subset of ``fuller``'s, and its numbers and proper nouns among ``fuller``'s ("… a trip to
    Europe next summer to visit the user's relatives" in "… relatives in Germany, France,
    and the UK"). Word order is not asked: a fuller restatement reorders ("… watching at
    least 2 episodes of "The Good Place" every day …" in "… really into "The Good Place"
    lately - … watching at least 2 episodes every day …"), so the order is asked of
    :data:`IN_ORDER_SHARE` of its words only: a swapped relation ("I prefer spaces over
    tabs" in "I prefer tabs over spaces always") keeps fewer in order."""
    fuller_words, shorter_words = content_words(fuller), content_words(shorter)
    return (set(shorter_words) < set(fuller_words)
            and set(_NUMBER.findall(shorter)) <= set(_NUMBER.findall(fuller))
            and proper_nouns(shorter) <= proper_nouns(fuller)
            and _in_order(shorter_words, fuller_words) >= IN_ORDER_SHARE * len(shorter_words))


IN_ORDER_SHARE = 0.8   # of a subsumed statement's words, the share found in the fuller's order


def _in_order(a: list[str], b: list[str]) -> int:
    """How many of ``a``'s words ``b`` has in the same order (longest common subsequence)."""
    row = [0] * (len(b) + 1)
    for word in a:
        diagonal = 0
        for j, other in enumerate(b, 1):
            diagonal, row[j] = row[j], diagonal + 1 if word == other else max(row[j],
                                                                              row[j - 1])
    return row[-1]


def says_as_much(kept: str, new: str, cosine: float) -> bool:
    """Whether ``new`` adds nothing to ``kept``: a near duplicate of it, or a close one
    (the same cosine) that ``kept`` subsumes. A fuller ``new`` is no duplicate: mining
    keeps it, and dreaming merges the shorter into it."""
    return near_duplicate(kept, new, cosine) or (cosine >= NEAR_DUPLICATE_COSINE
                                                 and subsumes(kept, new))


def near_duplicate(a: str, b: str, cosine: float) -> bool:
    return cosine >= NEAR_DUPLICATE_COSINE and not differs_in_substance(a, b)


# What kind of lasting fact a statement is, by its words (dreaming lets none of these fade;
# consolidation files them under MEMORY.md's sections).
PREFERENCE = re.compile(r"\b(?:prefers?|favou?rite|likes?|loves?|enjoys?|hates?|dislikes?"
                        r"|allergic|vegetarian|vegan|can't stand)\b", re.IGNORECASE)
RELATIONSHIP = re.compile(rf"\b(?:married|friend|{KIN_WORDS})\b", re.IGNORECASE)
PLAN = re.compile(r"\b(?:will|plans?|planning|going to|gonna|intends?|hopes? to|wants? to"
                  r"|next|upcoming|tomorrow|deadline|due)\b", re.IGNORECASE)
NAMING = re.compile(r"\b(?:name is|named|called|born|birthday)\b", re.IGNORECASE)


def lasting(content: str) -> bool:
    """Whether a statement is a fact that stays true until said otherwise (a like, a
    relationship, a name) rather than an event."""
    return bool(PREFERENCE.search(content) or RELATIONSHIP.search(content)
                or NAMING.search(content))


def speaker_key(speaker: str) -> str:
    """The "who" of a subject key: a named speaker, or "user" for an unnamed one."""
    name = normal(speaker)
    return "user" if name in GENERIC_SPEAKERS else name


# (pattern over the lower-cased sentence, attribute); a group in the attribute is filled in
_SUBJECTS: list[tuple[re.Pattern[str], str]] = [(re.compile(p), a) for p, a in (
    (r"\bmy name is\b|\bi(?:'m| am) called\b|\bcall me\b", "name"),
    (r"\bi(?:'m| am)? (?:(?:currently|still|now) )?(?:live|living) in\b"
     r"|\bi(?:'ve| have)? (?:just )?(?:moved|relocated) to\b|\bmy home is in\b", "home"),
    (r"\bi(?: work|'m working| am working) (?:at|for)\b|\bi(?:'m| am) employed (?:at|by)\b"
     r"|\bmy employer is\b", "employer"),
    (r"\bi(?: work|'m working| am working) as\b|\bmy job is\b|\bmy role is\b", "job"),
    (r"\bmy fav(?:ou?rite)? ([a-z]+(?: [a-z]+)?) is\b", "favourite {0}"),
    (r"\bmy ([a-z]+)(?:'s| is) (?:name is|called|named)\b", "{0} name"),
    (r"\bmy (editor|shell|terminal|browser|laptop|phone|os|distro|keyboard) is\b", "{0}"),
    (r"\bi use ([a-z0-9+#.-]+) as my ([a-z]+)\b", "{1}"),
)]
_PREFER = re.compile(r"\bi (?:now )?prefer (.+)")
# a name that opens no sentence (nor "I") or a number: "Porto", "95123"
_A_NAME = re.compile(r"(?<!^)(?<![.!?:]\s)\b(?!I\b)[A-Z][\w'’-]*|\d")


def names_something(text: str, besides: str = "") -> bool:
    """Whether ``text`` names something — a proper name that opens no sentence, other than
    ``besides``, or a number ("… in Porto", "… in 95123"; not "… in the city centre")."""
    return any(re.sub(r"['’]s?$", "", found.group()) != besides
               for found in _A_NAME.finditer(text))


def subject_key(sentence: str, speaker: str = "") -> str:
    """``who|attribute`` for a single-valued attribute the sentence sets, else "". A home
    names its place after the words that say it, by a name or a number ("I live in fear of
    spiders" says none)."""
    low = folded(sentence)
    for pattern, attribute in _SUBJECTS:
        found = pattern.search(low)
        if found:
            after = sentence[found.end():] if len(low) == len(sentence) else sentence
            if attribute == "home" and not names_something(after):
                continue
            return f"{speaker_key(speaker)}|{attribute.format(*found.groups())}"
    prefer = _PREFER.search(low)
    if prefer:  # "prefer tabs over spaces" and "prefer spaces over tabs" set one thing
        words = sorted(set(content_words(prefer.group(1))))
        if words:
            return f"{speaker_key(speaker)}|prefers {' '.join(words)}"
    return ""


def normal_subject(subject: str, speaker: str = "") -> str:
    """A subject a model named ("Home city", "the user's editor"), as a key with its who."""
    words = [w for w in normal(subject).split() if w not in ("the", "a", "an", "user", "s")]
    if not words:
        return ""
    return f"{speaker_key(speaker)}|{' '.join(words)}"


def tags_of(text: str, speaker: str = "", limit: int = 3) -> list[str]:
    """A few tags: the first distinct content words that are not the speaker's name."""
    skip = set(normal(speaker).split())
    out: list[str] = []
    for word in content_words(text):
        if word not in skip and word not in out and not word.isdigit():
            out.append(word)
        if len(out) == limit:
            break
    return out


def stem(word: str) -> str:
    """A crude stem, enough to match "uses" with "use" and "painted" with "paint"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def _stems(text: str) -> set[str]:
    return {s for s in (stem(w) for w in content_words(text))
            if s not in STOPWORDS and s not in _EXTRA_STOP}


def grounded(content: str, source: str, minimum: int = 2) -> bool:
    """Whether a memory shares enough content words (stemmed) with the turns it cites — the
    speakers' names included — so that a model that invents a fact, or copies the prompt,
    is caught: the turns it cites do not say it."""
    words = _stems(content)
    if not words:
        return False
    return len(words & _stems(source)) >= min(minimum, len(words))
