"""The extractor that needs no model: what each source turn discloses about its speaker,
as third-person statements (:mod:`.statements`), and what a request to remember keeps.

Each statement is one memory citing its one turn, typed by the patterns below over the
sentence as said (identity facts — name, home, employer, job — are ``workspace_profile``;
decisions, tool notes and habits their own types; the rest, a person's life, likes and
plans, ``user_preference``) and given the subject key of a single-valued attribute it sets
(:func:`.text.subject_key`), so dreaming can supersede it. Questions, reactions, talk
about the listener and sentences without a first-person subject are never kept: nothing
rather than junk. A request to remember (:mod:`.requests`: "Please remember that I'm
allergic to penicillin", "My doctor is Dr. Patel - don't forget that!", "Keep in mind that
I'm diabetic") keeps what it asks to: the speaker's own words as a statement, anything
else asked to be remembered as said ("Remember that the deploy key lives in the vault",
"Remember to run make lint before pushing"). So is a sentence about software that fails
or how it was fixed ("pytest doesn't work with the old plugin"), typed ``tool_use``; a fix
said after such a failure in the chunk is one memory with it, and a failure its speaker
later says works, no fix told, is none (:func:`_with_fixes`); a person's work on software
of their own ("I'm building a Flask app called ledgerly") is a ``project_fact``. Whether a
tool in use or a project is software's is told by its words, or by the chunk it is in:
where a turn of the chunk shows code (a fenced block), "I'm using click for the commands"
is a tool note (:func:`shows_code`); elsewhere "I've been using the Nike Running app" is
a preference.

Deterministic (the same chunk always gives the same memories), instant, and marked as
such: ``model = "heuristic"`` on the event, ``source = "heuristic"`` on the memory,
confidence 0.7 (0.9 for a request to remember). What a speaker asked to remember of
themselves has ``source = "user"``: their own note, as a ``/remember`` (MEMORY.md keeps
it, it does not fade). It is what ``diarist mine`` does when no LLM is configured, and
what stands in for a model whose answer could not be used. At most :data:`PER_TURN`
memories a turn.
"""
from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace

from events.memory_types import DEFAULT, PREFERENCE, PROFILE, PROJECT_FACT, TOOL_USE, WORKFLOW
from projections.readable import main_clause, points_out, self_contained

from .candidates import Candidate
from .chunks import Chunk, Turn
from .requests import Request, about_speaker, request_in
from .statements import Statement, display_name, is_disclosure, sentences, statements
from .text import content_words, normal, subject_key, tags_of

MIN_WORDS = 2
PER_TURN = 3
MAX_CHARS = 240
STATEMENT_CONFIDENCE = 0.7
REMEMBERED_CONFIDENCE = 0.9
_IDENTITY_ATTRIBUTES = ("|name", "|home", "|employer", "|job")
# Words of software: one that means nothing else, or two that can ("I'm planning to go to
# the beach", "the military aptitude test", "a movie script", "the Publix app", "build a
# home" are no software; "the build script fails", "the app's server crashed" are)
_SOFTWARE = frozenset("""ci cli commit config database db deploy docker git github python
repo vim emacs vscode linux npm pip pytest javascript typescript sql kubernetes compiler
endpoint lint makefile ssh golang postgres postgresql sqlite mysql mongodb sqlalchemy django
fastapi nodejs html css json yaml regex frontend backend devops nginx terraform gitlab
neovim pycharm intellij xcode ubuntu debian macos codebase refactor localhost webpack
kotlin""".split())
_SOFTWARE_TOO = frozenset("""app bug build branch code container editor release script server
shell test tests library package rust go java terminal framework function module push
vault api flask react node rails ruby swift query schema migration workflow error errors
crash deployment website""".split())   # not "make" or "key": "make a change", "the key to it"


# a Markdown code fence: a turn of the chunk shows code
_FENCE = "```"


def shows_code(chunk: Chunk) -> bool:
    """Whether a turn of ``chunk`` (the assistant's too) shows a fenced code block: a chat
    about software, whatever a sentence's own words are ("I am using yfinance to grab price
    data"; LongMemEval's dev chats about phone or fitness apps show none)."""
    return any(_FENCE in turn.text for turn in chunk.turns)


def about_software(text: str) -> bool:
    """Whether ``text`` is about software: a word of it that means nothing else, or two
    that can mean something else too (:data:`_SOFTWARE`, :data:`_SOFTWARE_TOO`)."""
    words = set(content_words(text))
    return bool(words & _SOFTWARE) or len(words & _SOFTWARE_TOO) >= 2


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# (pattern, type, kind, confidence); the first that matches a sentence decides
_RULES: list[tuple[re.Pattern[str], str, str, float]] = [
    (_p(r"\bmy name is\b|\bi (?:live|am living|'m living) in\b|\bi(?:'ve| have)? moved to\b"
        r"|\bi work (?:at|for|as)\b|\bi(?:'m| am) from\b|\bi(?:'m| am) an? (?:\w+ )?(?:engineer"
        r"|developer|teacher|nurse|designer|manager|student|doctor|writer|artist|counselor"
        r"|scientist|researcher)\b"), PROFILE.name, "pattern", 0.7),
    (_p(r"\b(?:doesn'?t|does not|didn'?t|did not|won'?t|can'?t) (?:work|build|start|run"
        r"|compile)\b|\b(?:fails|failed|failing|crashes|crashed|crashing|breaks|broke|hangs)\b"
        r"|\bthrows? (?:an? |this )?(?:\w+ )?(?:error|exception)\b"),
     TOOL_USE.name, "pitfall", 0.6),
    (_p(r"\bworkaround\b|\bthe fix (?:is|was)\b|\b(?:fixed|solved) it(?: by)?\b"
        r"|\b(?:passes|works|builds|runs|compiles) now\b"),
     TOOL_USE.name, "workaround", 0.6),
    (_p(r"\bi (?:really |absolutely |do |don'?t |do not |still )?(?:like|love|enjoy|prefer"
        r"|hate|dislike|adore|can'?t stand)\b|\bmy fav(?:ou?rite)\b"),
     PREFERENCE.name, "pattern", 0.7),
    (_p(r"\b(?:i|we)(?:'ve| have)? decided\b|\bwe agreed\b|\bi chose\b|\bi plan to\b"
        r"|\b(?:i|we)(?:'re| are|'m| am) going to\b|\bi(?:'m| am) planning\b"),
     PROJECT_FACT.name, "recommendation", 0.6),
    # a habit, not a thought or a feeling ("I never realized …", "I always wanted to …",
    # "I always feel like I'm walking on eggshells", "I always struggle with …"), nor a
    # wish for one ("I want to set a reminder to stretch every morning": the wish before
    # the habit's words) or a question about one ("I usually do yoga after meditation, so
    # I'm wondering if I should come earlier")
    (_p(r"^(?!.*\bwondering\b)(?:(?!\b(?:want|wants|'d like|would like|looking forward"
        r"|hoping|wish|need to)\b).)*?(?:\bi (?:always|usually|never|often|normally)\b(?! "
        r"(?:realized|realised|knew|thought|expected|imagined|noticed|considered|heard"
        r"|understood|wanted|dreamed|dreamt|wondered|felt|believed|feel|think|wonder|worry"
        r"|struggle|assume|assumed|wish|hope|know|want|believe)\b)"
        r"|\bevery (?:day|morning|evening|week|night|weekend)\b)"),
     WORKFLOW.name, "pattern", 0.6),
    (_p(r"\bi(?: use| am using|'m using|'ve been using| have been using| switched to| run"
        r"| rely on)\b"), TOOL_USE.name, "pattern", 0.6),
    # work on a project of one's own: a project fact when it is software (:func:`_by_topic`)
    (_p(r"\b(?:i|we)(?:'m| am|'re| are|'ve been| have been)? (?:building|developing|coding"
        r"|maintaining|migrating|porting|refactoring|deploying|shipping|build|develop"
        r"|maintain|deploy|ship|host)\b|\bmy (?:app|project|repo|codebase|side project)\b"),
     PROJECT_FACT.name, "pattern", 0.6),
    (_p(r"\bi (?:just |recently |finally |also )?(?:went|started|joined|finished|adopted|bought"
        r"|signed up|visited|took|painted|ran|graduated|learned|met|won|made|wrote|tried"
        r"|volunteered|got|have been|'ve been)\b|\bi have (?:a|an|two|three|four|\d+) \w+"
        r"|\bmy (?:\w+ )?(?:is|are|was|were|has|have) \w+"), PREFERENCE.name, "pattern", 0.6),
]


def kind_of(text: str) -> str:
    """pitfall / workaround / recommendation / pattern, by the same patterns."""
    low = text.casefold()
    if _RULES[1][0].search(low):
        return "pitfall"
    if _RULES[2][0].search(low):
        return "workaround"
    if _RULES[4][0].search(low) or _RECOMMEND.search(low) or request_in(low) is not None:
        return "recommendation"
    return "pattern"


def type_of(text: str, coding: bool = False) -> str | None:
    """The type the patterns give a statement, or None when none matches; ``coding``: said
    in a chat about software (:func:`shows_code`), which makes a tool in use or work on a
    project software's, not a plan, a failure or a team's habit ("I'm going to visit my mum
    this weekend" is no project fact there either: a project fact heads every block)."""
    low = text.casefold()
    for pattern, type_, kind, _confidence in _RULES:
        if pattern.search(low):
            return _by_topic(type_, text, coding and kind == "pattern")
    if _TEAM_HABIT.search(low) and about_software(text):
        return WORKFLOW.name
    return None


# a habit of the speaker's team ("we always run make lint before pushing"): a workflow when
# it is about software; of a family ("we always look forward to our camping trip") none
_TEAM_HABIT = _p(r"\bwe (?:always|usually|never|often|normally)\b")


_RECOMMEND = _p(r"(?:should|must|always use|never use|recommend|better to|prefer)")


def _by_topic(type_: str, text: str, coding: bool = False) -> str:
    """A decision or a tool note about something that is not software is a preference
    (``coding``: it is said in a chat about software)."""
    if type_ in (PROJECT_FACT.name, TOOL_USE.name) and not (coding or about_software(text)):
        return PREFERENCE.name
    return type_


def _remembered(turn: Turn, request: Request, names: Collection[str],
                coding: bool = False) -> Candidate | None:
    """What a request to remember keeps (:mod:`.requests`). What the speaker says of
    themselves ("I'm allergic to penicillin, please remember that") is their statement in
    the third person, as any disclosure, and nothing where that is talk to the listener
    ("And remember, I'm always here for you"); anything else asked to be remembered is
    kept as said ("The deploy key lives in the vault", "Remember to run make lint before
    pushing"), what to keep in mind for the task not at all. ``asked``: the speaker's own
    note, which MEMORY.md keeps as it keeps a ``/remember``, when it reads alone (not "…
    bought it for Sam's sister": :func:`projections.readable.self_contained`) — of
    themselves, or of anything they asked the listener outright to remember ("Can you
    remember that the movers come on 12 December?")."""
    said = request.kept
    if not request.to_do and about_speaker(said):
        found = statements(replace(turn, text=said[0].upper() + said[1:] + "."), names,
                           min_words=1)
        if not found:
            return None
        note = _from_statement(found[0], coding)
        # a note of their own reads alone: "… remember that I bought it for my sister" does not
        asked = request.asked and self_contained(note.content, mined=True) \
            and not points_out(note.content)
        return replace(note, confidence=REMEMBERED_CONFIDENCE, asked=asked)
    if request.mind or len(content_words(said)) < MIN_WORDS:
        return None       # "keep in mind that the test is applied objectively": the task
    text = ("Remember to " + said) if request.to_do else said[0].upper() + said[1:]
    type_ = PROJECT_FACT.name if about_software(said) else DEFAULT.name
    return Candidate(type_, text[:MAX_CHARS], "recommendation", said if request.to_do else "",
                     REMEMBERED_CONFIDENCE, tags_of(said, turn.speaker),
                     subject_key(said, turn.speaker), [turn.n],
                     asked=request.asked and self_contained(text, mined=True)
                     and not points_out(text))


def _tool_trouble(turn: Turn, sentence: str) -> Candidate | None:
    """A sentence about software that fails, or how it was fixed ("pytest doesn't work with
    the old plugin"): kept as said, though it says nothing about a person."""
    low = sentence.casefold()
    if sentence.endswith("?") or not about_software(sentence):
        return None
    for pattern, type_, kind, confidence in _RULES[1:3]:
        if pattern.search(low):
            return Candidate(type_, sentence[:MAX_CHARS], kind, "", confidence,
                             tags_of(sentence, turn.speaker), "", [turn.n])
    return None


def _from_statement(statement: Statement, coding: bool = False) -> Candidate:
    said, turn = statement.said, statement.turn
    subject = subject_key(said, turn.speaker)
    # typed by its main clause, the part MEMORY.md shows ("I'm worried about my laptop's
    # battery, as I often work on the go" is no habit)
    type_ = PROFILE.name if subject.endswith(_IDENTITY_ATTRIBUTES) \
        else type_of(main_clause(said), coding) or DEFAULT.name
    if type_ == PROFILE.name and not subject:
        type_ = DEFAULT.name   # only identity facts are profile (recall puts it first)
    return Candidate(type_, statement.text, kind_of(said), "", STATEMENT_CONFIDENCE,
                     tags_of(statement.text, turn.speaker), subject, [turn.n],
                     needs_attribute=statement.owned)


def _with_fixes(found: list[Candidate], chunk: Chunk) -> list[Candidate]:
    """``found`` (the chunk's, in turn order) with each fix (a ``workaround``) joined to the
    failure said last before it (a ``pitfall``), as one memory citing both turns: "pytest
    keeps failing on CI …; fixed: the user added a health check …". The failure alone
    would say what is no longer true once fixed, the fix alone not what it fixed. The fix
    is told from its first naming of the person ("That was it, I added …": "the user
    added …"). A failure its speaker says works after all later in the chunk, with no fix
    told (:data:`_WORKS`: "done, passes w/ TZ=… locally too", "down -v fixed it"), is left
    out: its journal keeps it, and it is no longer true."""
    names = {turn.speaker for turn in chunk.turns}
    out: list[Candidate] = []
    for candidate in found:
        failed = next((i for i in range(len(out) - 1, -1, -1) if _is(out[i], "pitfall")),
                      None) if _is(candidate, "workaround") else None
        if failed is not None:
            failure = out.pop(failed)
            fix = _from_person(candidate.content, names)
            candidate = replace(
                candidate, content=f"{failure.content.rstrip(' .')}; fixed: {fix}"[:MAX_CHARS],
                tags=sorted({*failure.tags, *candidate.tags}),
                turns=sorted({*failure.turns, *candidate.turns}))
        out.append(candidate)
    return [c for c in out if not (_is(c, "pitfall") and _works_later(c, chunk))]


def _is(candidate: Candidate, kind: str) -> bool:
    """Whether ``candidate`` is a tool note of ``kind`` (a pitfall, a workaround)."""
    return candidate.type == TOOL_USE.name and candidate.kind == kind


# what says a failure is gone: "fixed it", "that worked", "passes now", "zero hangs"
_WORKS = _p(r"\b(?:fixed|worked|works now|working now|passes|passing now|solved|resolved"
            r"|recovered|did the trick|that was it|zero (?:errors|failures|hangs|crashes))\b")


def _works_later(failure: Candidate, chunk: Chunk) -> bool:
    """Whether the speaker of ``failure`` says, in a later turn of ``chunk``, that something
    works after all (:data:`_WORKS`)."""
    said = chunk.turns[failure.turns[0] - 1]
    return any(turn.speaker == said.speaker and turn.source
               and _WORKS.search(turn.text.casefold())
               for turn in chunk.turns[failure.turns[-1]:])


def _from_person(text: str, names: Collection[str]) -> str:
    """``text`` from its first naming of one of ``names`` (as :func:`.statements.display_name`
    writes them) within its first few words, that opening lower-cased ("the user …"); else
    ``text``, its first letter lower-cased unless it opens with a name."""
    found = re.search(r"\b(?:" + "|".join(re.escape(display_name(n)) for n in names)
                      + r")\b", text, re.IGNORECASE) if names else None
    if found is not None and len(text[:found.start()].split()) <= _OPENING_WORDS:
        text = text[found.start():]
    first = text.split(" ", 1)[0]
    return text if first in {display_name(n) for n in names} else text[:1].lower() + text[1:]


_OPENING_WORDS = 5   # "Yes, that was it, …"


def heuristic_candidates(chunk: Chunk) -> list[Candidate]:
    """The chunk's source turns' notes and disclosures, in turn order (module doc)."""
    out: list[Candidate] = []
    names = {turn.speaker for turn in chunk.turns}
    coding = shows_code(chunk)
    for turn in chunk.turns:
        if not turn.source:
            continue
        found: list[Candidate] = []
        kept: list[str] = []    # what requests to remember keep, not stated again
        for sentence in sentences(turn.text):
            request = request_in(sentence)
            note = None if request is None else _remembered(turn, request, names, coding)
            if request is not None:
                kept.append(normal(request.kept))
            if note is not None:
                found.append(note)
            if note is None and not is_disclosure(sentence):
                trouble = _tool_trouble(turn, sentence)
                if trouble is not None:
                    found.append(trouble)
        found += [_from_statement(s, coding) for s in statements(turn, names)
                  if not any(k in normal(s.said) for k in kept)]
        out += found[:PER_TURN]
    return _with_fixes(out, chunk)


def asked_notes(chunk: Chunk) -> list[Candidate]:
    """The notes the chunk's speakers asked to keep (:func:`_remembered`), which a model's
    extraction gets too: what a person asked to keep does not hang on a model's choice."""
    names = {turn.speaker for turn in chunk.turns}
    asked = ((turn, request) for turn in chunk.turns if turn.source
             for request in map(request_in, sentences(turn.text))
             if request is not None and request.asked)
    coding = shows_code(chunk)
    notes = (_remembered(turn, request, names, coding) for turn, request in asked)
    return [note for note in notes if note is not None and note.asked]
