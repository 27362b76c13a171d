"""A chat's memory in the prompt: a start block that is the end of an unchanging system
prompt (read ahead while the person types), and a note per message within the budget."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from events import EventLog, Home, clock
from events.config import Config, MemoryConfig, RollingSummaryConfig
from events.log import NewEvent
from events.types import LongTermRewritten, MemoriesMined, ProfileSet, Remembered, UserTurn
from projections.block_headers import NOTE_HEADER
from projections.tokens import estimate
from workers.chat.memory import (
    ESTIMATE_SLACK,
    KEPT_SHARE,
    NOTE_MIN_SCORE,
    NOTES_SHARE,
    REPLY_ROOM,
    START_SHARE,
    first_note_cap,
    start_budget,
)
from workers.chat.session import ChatSession
from workers.llm import ChatReply, ScriptedBackend

from .conftest import Stores, rules

TOPICS = ["bees", "boat", "garden", "chess", "violin", "kayak", "sourdough", "telescope"]


class Recording(ScriptedBackend):
    """The scripted backend, keeping every request's messages."""

    def __init__(self, script: Path | None = None, window: int = 2048) -> None:
        super().__init__(script, context_window=window)
        self.requests: list[list[dict]] = []

    def chat(self, messages: list[dict], **kw: object) -> ChatReply:  # type: ignore[override]
        self.requests.append([dict(m) for m in messages])
        return super().chat(messages, **kw)  # type: ignore[arg-type]


def started(session: ChatSession) -> ChatSession:
    """``session`` started, its stable prefix read ahead (the warming thread done)."""
    session.start()
    assert session.warming is not None
    session.warming.join(5)
    return session


def seed(log: EventLog, n: int = 400) -> None:
    log.append(ProfileSet(fields={"name": "Ann", "role": "beekeeper"}), stream="profile")
    memories = [{"id": f"m{i}", "type": "user_preference",
                 "content": f"Ann's {TOPICS[i % len(TOPICS)]} note {i}: she likes it a lot "
                            f"and talks about the {TOPICS[i % len(TOPICS)]} every week"}
                for i in range(n)]
    mined = MemoriesMined(session="old", memories=memories)
    log.append_many([NewEvent(stream="memory", data=mined)])
    log.append(UserTurn(session="old", text="Tell me about my telescope and my kayak",
                        name="Ann"), stream="old", ref="old:1")


def without_notes(request: list[dict]) -> list[dict]:
    """A request's messages with every memory note taken out of its message."""
    return [{**m, "content": m["content"].split("\n\n", 1)[1]}
            if m["content"].startswith(NOTE_HEADER) else m for m in request]


def test_the_stable_prefix_never_changes_within_a_session(home: Home, stores: Stores,
                                                          tmp_path: Path) -> None:
    """One system prompt, read ahead, for the whole session; what comes after it is only
    ever extended — but for a note that gives way to a later one (it leaves the prompt
    whole; its message stays)."""
    log, store = stores
    seed(log)
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Noted."}))
    session = started(ChatSession(home, log, store, backend, Config(), tools=False))
    (warmed,) = backend.warmed  # read ahead before the first message
    assert warmed == [session.messages()[0]] and "[workspace profile]" in warmed[0]["content"]
    assert "telescope" in warmed[0]["content"]  # recalled for the last session's last turns
    for topic in TOPICS:
        session.send(f"What do I like about my {topic}?")
    system = {r[0]["content"] for r in backend.requests}
    assert system == {warmed[0]["content"]}  # one system prompt for the whole session
    gave_way = 0
    for earlier, later in zip(backend.requests, backend.requests[1:], strict=False):
        assert without_notes(later)[:len(earlier)] == without_notes(earlier)
        for before, after in zip(earlier, later[:len(earlier)], strict=True):
            assert after == before or after == without_notes([before])[0]
            gave_way += after != before
    notes = log.read(types=["MemoryInjected"], stream=session.id)
    assert [e.payload["kind"] for e in notes][0] == "start" and len(notes) > 2
    assert gave_way  # the budget held one note at a time: each took the one before out


def long_memory_md(log: EventLog) -> None:
    """A MEMORY.md longer than the start block holds."""
    lines = [f"- Ann's {TOPICS[i % len(TOPICS)]} habit {i}: she keeps at it every season"
             for i in range(40)]
    log.append(LongTermRewritten(content="# Memory\n\n## Preferences\n" + "\n".join(lines)),
               stream="memory")


def long_memory_session(home: Home, stores: Stores,
                        tmp_path: Path) -> tuple[ChatSession, Recording]:
    """A chat started on a home with many memories and a MEMORY.md longer than its start
    block holds."""
    log, store = stores
    seed(log, 2000)
    long_memory_md(log)
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Noted."}))
    return started(ChatSession(home, log, store, backend, Config(), tools=False)), backend


def _block(system: str) -> str:
    return system.split("\n\n", 1)[1]


def test_the_start_block_is_cut_once_for_a_later_messages_note(home: Home, stores: Stores,
                                                               tmp_path: Path) -> None:
    """The first message is answered from a start block of up to START_SHARE of the budget
    (MEMORY.md, as much as fits); the first later message whose note needs the room cuts it
    to KEPT_SHARE — the system prompt changes that once — and it stays so after."""
    log, _ = stores
    session, backend = long_memory_session(home, stores, tmp_path)
    budget = session.budget
    first = session.injection
    assert first is not None and budget * KEPT_SHARE < first.injected_tokens \
        <= budget * START_SHARE
    session.send("Hello there")
    for topic in TOPICS[:4]:
        session.send(f"Remind me about the {topic}, please")
        assert session.memory_in_prompt() <= budget
    systems = [r[0]["content"] for r in backend.requests]
    assert systems[0] == backend.warmed[0][0]["content"]  # the first read what was warmed
    assert len(set(systems[1:])) == 1 and systems[1] != systems[0]  # cut once, then stable
    big, small = _block(systems[0]).splitlines(), _block(systems[1]).splitlines()
    assert len(small) < len(big) and set(small) <= set(big)  # the same lines, fewer
    starts = [e.payload for e in log.read(types=["MemoryInjected"], stream=session.id)
              if e.payload["kind"] == "start"]
    assert [p["injected_tokens"] for p in starts] == [first.injected_tokens,
                                                      estimate(_block(systems[1]))]
    assert starts[1]["injected_tokens"] <= budget * KEPT_SHARE
    assert backend.requests[1][-1]["content"].startswith(NOTE_HEADER)  # the note it made room for


@pytest.mark.parametrize(("window", "start"), [(1024, 192), (2048, 384), (4096, 512),
                                               (8192, 1024)])
def test_the_start_block_takes_more_than_half_only_at_a_small_window(window: int,
                                                                     start: int) -> None:
    """More than half the budget only while it stays a block the server reads while the
    person types; a larger window's half is its start block, as before."""
    assert start_budget(window // 4) == start


def test_a_later_message_with_nothing_to_recall_keeps_the_start_block(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """Only a note with something in it cuts the start block: a message that recalls nothing
    leaves the system prompt as it was read ahead."""
    log, _ = stores
    session, backend = long_memory_session(home, stores, tmp_path)
    assert session.injection is not None
    assert session.injection.injected_tokens > session.budget * KEPT_SHARE  # could be cut
    session.send("Hello there")
    session.send("What is the capital of Peru?")
    assert {r[0]["content"] for r in backend.requests} == {backend.warmed[0][0]["content"]}
    kinds = [e.payload["kind"] for e in log.read(types=["MemoryInjected"], stream=session.id)]
    assert kinds == ["start"]


def test_the_system_prompt_tells_the_sessions_day_even_past_midnight(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """The model is told the day, so "yesterday" or "two weeks ago" in the memory's dated
    lines can be read; a session that runs past midnight keeps its first day, lest the
    read-ahead system prompt change."""
    log, store = stores
    seed(log, n=20)
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Noted."}))
    with clock.frozen(dt.datetime(2026, 2, 28, 23, 59, tzinfo=dt.UTC)):
        session = started(ChatSession(home, log, store, backend, Config(), tools=False))
    with clock.frozen(dt.datetime(2026, 3, 1, 0, 5, tzinfo=dt.UTC)):
        session.send("What did I say about my kayak yesterday?")
    (warmed,) = backend.warmed
    assert "Today is Saturday, 28 February 2026." in warmed[0]["content"]
    assert backend.requests[-1][0] == warmed[0]
    with clock.frozen(dt.datetime(2026, 3, 1, 0, 6, tzinfo=dt.UTC)):
        session.clear()  # a new start block, a new system prompt: today's
    assert "Today is Sunday, 1 March 2026." in session.messages()[0]["content"]


def test_a_note_reads_relative_dates_from_the_day_the_message_is_sent(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """ "What did I cook 11 days ago?" in a chat means a day counted back from today: the
    note leads with what was said then, not with the newest dinner — even after the same
    kind of question was asked in an earlier chat (a question is no answer, and must not
    scale the answers' scores down below a note's least)."""
    log, store = stores
    first = dt.datetime(2026, 3, 2, 19, tzinfo=dt.UTC)
    dinners = ["I cooked a mushroom risotto for dinner.", "I cooked a lentil curry for dinner.",
               "I cooked a fish pie for dinner.", "I cooked a bean chilli for dinner."]
    for n, dinner in enumerate(dinners):  # a dinner every ten days
        log.append(UserTurn(session=f"old{n}", text=dinner, name="Ann"), stream=f"old{n}",
                   ref=f"old{n}:1", occurred_at=first + dt.timedelta(days=10 * n))
    store.catch_up_all()
    config = Config(memory=MemoryConfig(inject_on_start=False))
    for question, dinner in [("What did I cook yesterday?", dinners[3]),
                             ("What did I cook 11 days ago?", dinners[2]),
                             ("What did I cook three weeks ago?", dinners[1])]:
        backend = Recording(rules(tmp_path, {"reply": "Noted."}))
        with clock.frozen(first + dt.timedelta(days=31)):
            session = ChatSession(home, log, store, backend, config, tools=False)
            session.start()
            session.send(question)
        note = backend.requests[-1][-1]["content"].split("\n\n", 1)[0]
        items = [x for x in note.splitlines() if x.startswith("- ")]
        assert note.startswith(NOTE_HEADER) and dinner in items[0], note
    # each line says how long ago it was said, the start block's too: no date arithmetic
    assert "(12 March 2026, 3 weeks ago) Ann: I cooked a lentil curry" in note
    with clock.frozen(first + dt.timedelta(days=31)):
        session = ChatSession(home, log, store, backend, Config(), tools=False)
        session.start()
    assert "(22 March 2026, 11 days ago) Ann: I cooked a fish pie" in session.memory_block


def test_a_notes_best_match_stands_apart_from_the_rest(home: Home, stores: Stores,
                                                      tmp_path: Path) -> None:
    """A note of several items puts recall's best under ``[most relevant]`` and the rest
    under ``[other memories]``, as a question's block in `diarist eval --answer` does: the
    chat and the eval give the model memory in one form."""
    log, store = stores
    for n, text in enumerate(["My kayak club paddles the river every weekend.",
                              "The kayak club took the river route with my sister.",
                              "Our kayak club meets on Thursdays by the river."]):
        log.append(UserTurn(session=f"old{n}", text=text, name="Ann"), stream=f"old{n}",
                   ref=f"old{n}:1")
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Noted."}))
    session = ChatSession(home, log, store, backend,
                          Config(memory=MemoryConfig(inject_on_start=False)), tools=False)
    session.start()
    session.send("Hello!")  # a first message's note is capped (first_note_cap)
    session.send("Tell me about my kayak, the river and the kayak club")
    note = backend.requests[-1][-1]["content"].split("\n\n", 1)[0]
    lines = note.splitlines()
    items = [x for x in lines if x.startswith("- ")]
    assert len(items) >= 2, note
    assert lines == [NOTE_HEADER, "[most relevant]", items[0], "[other memories]", *items[1:]]
    assert estimate(note) <= session.memory.budget


def test_a_question_asked_again_does_not_lower_its_answers_score(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """Asked in earlier chats, the same question matches itself best. Left out of recall as
    no evidence, it must not set the scale of the others' scores either: each time it was
    asked the answer scored lower (1.0, then 0.63, 0.60, 0.59 here), until a note would
    leave it out as below its least score."""
    from projections.recall import recall

    log, store = stores
    log.append(UserTurn(session="old", name="Ann", text="We love it here: we live by the sea "
                        "in Lisbon, near my sister and her kids."), stream="old", ref="old:1")
    store.catch_up_all()
    question = "Where do I live now?"

    def answer_score() -> float:
        (item,) = [i for i in recall(store.db, question, 0, 5).items if "Lisbon" in i.content]
        return item.score

    before = answer_score()
    config = Config(memory=MemoryConfig(inject_on_start=False))
    for _ in range(3):
        backend = Recording(rules(tmp_path, {"reply": "You told me you moved."}))
        session = ChatSession(home, log, store, backend, config, tools=False)
        session.start()
        session.send(question)
        session.end()
        store.catch_up_all()
        assert answer_score() == pytest.approx(before)
        note = backend.requests[-1][-1]["content"].split("\n\n", 1)[0]
        assert note.startswith(NOTE_HEADER) and "Lisbon" in note, note


def test_each_note_fits_what_the_budget_has_left(home: Home, stores: Stores,
                                                 tmp_path: Path) -> None:
    """The memory in every prompt — the start block and the notes on the messages — stays
    within the budget; when the notes leave a message too little of it, the oldest give way,
    so every message still gets its note, and what they showed may be shown again."""
    log, store = stores
    seed(log, 2000)
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Noted."}), window=2048)
    config = Config(memory=MemoryConfig(budget_pct=0.25, top_k=50))
    session = ChatSession(home, log, store, backend, config, tools=False)
    session.start()
    for topic in TOPICS * 2:
        session.send(f"Remind me about the {topic}, please")
        assert session.memory_in_prompt() <= session.budget
    injected = log.read(types=["MemoryInjected"], stream=session.id)
    notes = [e.payload for e in injected if e.payload["kind"] == "turn"]
    assert len(notes) == len(TOPICS) * 2 - 1  # all but the first message (its note is capped)
    assert all(p["memory_tokens"] <= p["budget_tokens"] == 512 for p in notes)
    start = injected[0].payload["injected_tokens"]
    for request, payload in zip(backend.requests[1:], notes, strict=True):
        in_notes = [m["content"].split("\n\n", 1)[0] for m in request
                    if m["content"].startswith(NOTE_HEADER)]
        assert start + sum(estimate(n) for n in in_notes) == payload["memory_tokens"] <= 512
        assert estimate(in_notes[-1]) == payload["injected_tokens"]  # the new one, last
    shown = [i for p in notes for i in p["items"]]
    assert len(shown) > len(set(shown))  # the second round shows again what gave way
    for message in session.history:
        assert not message.note or message.content.startswith(f"{message.note}\n\n")


def test_a_message_with_nothing_new_takes_no_note_out(home: Home, stores: Stores,
                                                      tmp_path: Path) -> None:
    """Only a note with something in it makes an earlier one give way: a follow-up whose
    recall finds nothing new leaves the note it may be asking about in the prompt."""
    log, store = stores
    seed(log, 2000)
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Noted."}))
    session = ChatSession(home, log, store, backend, Config(), tools=False)
    session.start()
    session.send("Hello there")
    session.send("Remind me about the violin, please")
    assert session.history[2].note and session.memory_in_prompt() > session.budget * 0.75
    session.send("What is the capital of Peru?")  # nothing relevant: no note
    assert session.history[2].note and backend.requests[-1][3]["content"].startswith(
        NOTE_HEADER)
    session.send("Remind me about the chess, please")
    assert not session.history[2].note and session.history[2].content == \
        "Remind me about the violin, please"
    assert "chess" in session.history[6].note


def test_a_note_never_pushes_a_long_message_over_the_window(home: Home, stores: Stores,
                                                            tmp_path: Path) -> None:
    """A pasted message that nearly fills the window leaves a note no room: the note waits
    instead of pushing the prompt over the window (a real server refuses such a request)."""
    log, store = stores
    log.append(Remembered(text="Ann keeps bees on the roof"), stream="memory")
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Hi."}))
    config = Config(memory=MemoryConfig(inject_on_start=False,
                                        rolling_summary=RollingSummaryConfig(keep_turns=0)))
    session = ChatSession(home, log, store, backend, config, tools=False)
    session.start()
    fits = (2048 - REPLY_ROOM) / ESTIMATE_SLACK  # what the prompt may take, by the estimate
    lines = max(n for n in range(200) if estimate(
        "where are my bees? " + "the roof hive log says all is well. " * n)
        + session.history_tokens() < fits)
    paste = "where are my bees? " + "the roof hive log says all is well. " * lines
    assert fits - 10 < estimate(paste) + session.history_tokens() < fits
    session.send(paste)
    assert backend.requests[0][-1]["content"] == paste  # no note: it would not fit
    assert not log.read(types=["MemoryInjected"], stream=session.id)
    assert session.compress() is not None  # the paste summarised away: room again
    session.send("where are my bees?")  # short: the note comes with it
    last = [m for m in session.history if m.role == "user"][-1].content
    assert last.startswith("[memory note]") and "Ann keeps bees" in last


def mined(log: EventLog, *contents: str) -> None:
    """Memories mined from an old session (not notes someone asked to keep: recall finds
    them, the start block does not pin them)."""
    memories = [{"id": f"mined{i}", "type": "user_preference", "content": content}
                for i, content in enumerate(contents)]
    log.append_many([NewEvent(stream="memory",
                              data=MemoriesMined(session="old", memories=memories))])


def test_no_note_when_nothing_new_is_relevant(home: Home, stores: Stores, tmp_path: Path) -> None:
    log, store = stores
    mined(log, "Ann keeps bees on the roof")
    store.catch_up_all()
    session = ChatSession(home, log, store, Recording(rules(tmp_path, {"reply": "Hi."})),
                          Config(), tools=False)
    session.start()
    session.send("good morning")
    session.send("where are my bees?")
    session.send("and where are my bees again?")  # shown already: no second note
    session.send("what is the capital of Peru?")  # nothing relevant
    kinds = [e.payload["kind"] for e in log.read(types=["MemoryInjected"], stream=session.id)]
    assert kinds == ["start", "turn"] and NOTE_MIN_SCORE > 0
    assert "Ann keeps bees" in session.history[2].content
    assert session.history[4].content == "and where are my bees again?"


def test_the_start_block_carries_the_persons_recent_notes(home: Home, stores: Stores,
                                                          tmp_path: Path) -> None:
    """What a first question most likely asks about — the notes someone asked to be
    remembered, newest first — is in the start block, read ahead while the person types, so
    the first message needs no note for it (the real-model test's dog question)."""
    log, store = stores
    seed(log)  # hundreds of mined memories and an old session about telescopes and kayaks
    for n in range(12):
        log.append(Remembered(text=f"Old note {n}: the shed key is under pot number {n}"),
                   stream="memory")
    log.append(Remembered(text="My dog is called Rex and he is a beagle."), stream="memory")
    log.append(Remembered(text="The wifi password hint is on the fridge.", source="agent"),
               stream="memory")
    log.append(Remembered(text="name: Bob", type="workspace_profile"), stream="memory")
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Rex."}))
    session = started(ChatSession(home, log, store, backend, Config(), tools=False))
    start = backend.warmed[0][0]["content"]
    assert "My dog is called Rex" in start and "wifi password hint" in start
    assert "Old note 11" in start and "Old note 0:" not in start  # newest first, within a share
    assert start.count("name: Bob") == 1  # a profile note is the head's, not repeated
    assert "telescope" in start  # recall for the last session's closing messages still fits
    pinned = [i for i in session.injection.items if i.content.startswith(("My dog", "Old note",
                                                                          "The wifi"))]
    assert sum(i.tokens for i in pinned) <= start_budget(session.budget) * NOTES_SHARE
    assert session.injection.injected_tokens <= start_budget(session.budget)
    session.send("What is my dog called?")
    (request,) = backend.requests
    assert request[0]["content"] == start  # the read-ahead prefix, unchanged
    assert "Rex" not in request[1]["content"]  # shown already: not read again after the message


def test_a_note_the_night_wrote_into_memory_md_is_read_once_with_its_day(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """A person's recent note is pinned in the start block; once the night has written it
    into MEMORY.md too, that line is left out there (the block's room goes to what it has
    not said), and the note's "on Friday" is dated from the day it was noted, as a turn's
    is — a small model cannot count weekdays."""
    log, store = stores
    noted = dt.datetime(2026, 12, 5, 10, 0, tzinfo=dt.UTC)   # a Saturday
    log.append(Remembered(text="I have a dentist appointment on Friday."), stream="memory",
               occurred_at=noted)
    log.append(LongTermRewritten(content="# Memory\n\n## Profile\n- Ann keeps bees\n\n## Plans\n"
                                         "- I have a dentist appointment on Friday (said 5 "
                                         "December 2026)\n"), stream="memory")
    store.catch_up_all()
    backend = Recording(rules(tmp_path, {"reply": "Friday."}))
    started(ChatSession(home, log, store, backend, Config(), tools=False))
    start = backend.warmed[0][0]["content"]
    assert start.count("dentist appointment") == 1
    assert "dentist appointment on Friday [11 December 2026]" in start
    assert "- Ann keeps bees" in start and "## Plans" not in start  # the rest of MEMORY.md


def test_the_first_note_stays_within_its_cap(home: Home, stores: Stores, tmp_path: Path) -> None:
    """Every token of the first message's note is read after the message arrives, so it may
    take at most half of what the message itself costs (the first token within 1.5x of the
    time without memory): a short question gets none — and no recall to wait for — a long
    message a short note; later notes are not capped."""
    log, store = stores
    short = "Ann keeps bees on the roof"
    long = ("Ann's bees swarmed twice last June, once into the neighbour's apple tree and once "
            "into the chimney, and she caught both swarms with a cardboard box and a sheet")
    mined(log, short, long)
    store.catch_up_all()
    question = "Where are my bees?"
    message = ("I am writing up the club newsletter tonight and want a paragraph about my own "
               "hives: tell me about my bees — where are they kept, how many colonies are there, "
               "and what did the swarms do last summer?")
    assert first_note_cap(question) < estimate(f"[memory note]\n- {short}") <= \
        first_note_cap(message) < estimate(f"[memory note]\n- {long}")
    sent = {}
    for first in (question, message):
        backend = Recording(rules(tmp_path, {"reply": "Hi."}))
        session = ChatSession(home, log, store, backend, Config(), tools=False)
        session.start()
        session.send(first)
        session.send("And the swarms of my bees?")
        assert session.history[0].memory_tokens <= first_note_cap(first)
        sent[first] = [r[-1]["content"] for r in backend.requests]
        session.end()
    assert sent[question][0] == question  # no note: only what was read ahead
    assert "Ann keeps bees" in sent[question][1] and "swarmed" in sent[question][1]
    with_note, later = sent[message]
    assert with_note.startswith("[memory note]") and short in with_note
    assert "swarmed" not in with_note and "swarmed" in later  # the rest comes with the next


def test_first_note_false_keeps_the_first_message_bare(
        home: Home, stores: Stores, tmp_path: Path) -> None:
    """With ``memory.first_note: false`` the first reply reads only what was read ahead (no
    wait for a note); the default gives the first message its (capped) note."""
    log, store = stores
    mined(log, "Ann keeps bees on the roof")
    store.catch_up_all()
    question = ("I want to check on my hives this weekend before the weather turns, so please "
                "remind me: where are my bees?")  # long enough for a short note
    sent = {}
    for first_note in (False, True):
        backend = Recording(rules(tmp_path, {"reply": "Hi."}))
        session = started(ChatSession(home, log, store, backend,
                              Config(memory=MemoryConfig(first_note=first_note)), tools=False))
        session.send(question)
        (request,) = backend.requests
        assert request[0] == backend.warmed[0][0]  # the read-ahead prefix, unchanged
        sent[first_note] = request[1]["content"]
        session.end()
    assert sent[False] == question
    assert sent[True].startswith("[memory note]") and "Ann keeps bees" in sent[True]


def test_notes_can_be_switched_off(home: Home, stores: Stores, tmp_path: Path) -> None:
    log, store = stores
    log.append(Remembered(text="Ann keeps bees on the roof"), stream="memory")
    store.catch_up_all()
    session = ChatSession(home, log, store, Recording(rules(tmp_path, {"reply": "Hi."})),
                          Config(memory=MemoryConfig(turn_recall=False)), tools=False)
    session.start()
    session.send("where are my bees?")
    assert session.history[0].content == "where are my bees?"
    assert [e.payload["kind"] for e in log.read(types=["MemoryInjected"])] == ["start"]


def through_proxy(home: Home, topics: int) -> tuple[list[list[dict]], Any]:
    """A greeting, then ``topics`` questions, each resent with the whole conversation
    through a proxy as a client sends them: what went upstream each time, the last
    exchange."""
    from workers.proxy.memory import ProxyMemory

    proxy = ProxyMemory(home, "http://127.0.0.1:9")  # nothing listens: the default window
    proxy.open()
    try:
        messages: list[dict] = []
        sent = []
        for topic in ["greeting", *TOPICS[:topics]]:
            messages.append({"role": "user", "content": f"Remind me about the {topic}, please"})
            exchange = proxy.begin(messages, "fake")
            proxy.finish(exchange, "Noted.")
            messages.append({"role": "assistant", "content": "Noted."})
            sent.append(exchange.messages)
    finally:
        proxy.close()
    return sent, exchange


def test_the_proxy_cuts_the_start_block_as_the_chat_does(home: Home, stores: Stores) -> None:
    """Through the proxy too, the first message reads the whole start block and the first
    later note cuts it to KEPT_SHARE, once."""
    log, store = stores
    seed(log, 2000)
    long_memory_md(log)
    store.catch_up_all()
    sent, exchange = through_proxy(home, 3)
    budget = exchange.session.memory.budget
    blocks = [_block(request[0]["content"]) for request in sent]
    assert budget * KEPT_SHARE < estimate(blocks[0]) <= budget * START_SHARE
    assert len(set(blocks[1:])) == 1 and estimate(blocks[1]) <= budget * KEPT_SHARE
    starts = [e.payload for e in log.read(types=["MemoryInjected"], stream=exchange.session.id)
              if e.payload["kind"] == "start"]
    assert len(starts) == 2


def test_the_proxy_gives_way_as_the_chat_does(home: Home, stores: Stores) -> None:
    """A client resends the whole conversation each time: the proxy puts each note back on
    its message, and takes the oldest out when the notes leave a new message too little of
    the budget, as the chat does — every question after the first gets its note."""
    log, store = stores
    seed(log, 2000)
    store.catch_up_all()
    sent, exchange = through_proxy(home, 4)
    budget = exchange.session.memory.budget
    start = exchange.session.start.injected_tokens if exchange.session.start else 0
    for request in sent[1:]:
        notes = [m["content"].split("\n\n", 1)[0] for m in request
                 if m["role"] == "user" and m["content"].startswith(NOTE_HEADER)]
        assert request[-1]["content"].startswith(NOTE_HEADER)  # this message's own note
        assert start + sum(estimate(n) for n in notes) <= budget
    assert without_notes(sent[-1])[:len(sent[1])] == without_notes(sent[1])
    assert sent[1][3]["content"].startswith(NOTE_HEADER)  # the first note (the system
    assert not sent[2][3]["content"].startswith(NOTE_HEADER)  # message first) gave way
