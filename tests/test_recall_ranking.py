"""Recall's ranking (issue 16): whose words answer (speakers), the turns around a turn
(context), the dates a question names (when), what is true now (recency on planted
changes), and the semantic half embedding a turn's words without its speaker."""
from __future__ import annotations

import datetime as dt

import pytest

from events import EventLog, Home
from events.types import (
    AssistantTurn,
    LongTermRewritten,
    MemoriesMined,
    MemorySuperseded,
    SessionStarted,
    UserTurn,
)
from projections import ProjectionStore, open_store, weights
from projections import context as context_module
from projections.context import (
    TurnReads,
    candidate_turns,
    in_context,
    neighbours,
    turn_items,
)
from projections.items import TURN, embedding_text
from projections.recall import recall
from projections.recency import change_factors, recency_factors, temporal_intent
from projections.speakers import naming, speaker_factors
from projections.weights import CONTEXT_WEIGHT, FAR_WEIGHT, OUTSIDE_WEIGHT
from projections.when import period_factors, periods

T0 = dt.datetime(2023, 5, 1, 12, 0, tzinfo=dt.UTC)


def say(log: EventLog, session: str, who: str, text: str, ref: str, day: int,
        role: str = "user") -> None:
    turn = UserTurn if role == "user" else AssistantTurn
    log.append(turn(session=session, text=text, name=who), stream=session, ref=ref,
               occurred_at=T0 + dt.timedelta(days=day))


def two_friends(log: EventLog) -> None:
    """A LoCoMo-like chat: two named people, several sessions weeks apart."""
    lines = [
        ("s1", "Tim", "Hey John! How was the game last night?", 0),
        ("s1", "John", "Hey Tim! We played a great game and won, I scored twenty points.", 0),
        ("s1", "Tim", "Which team did you sign with in the end?", 0),
        ("s1", "John", "The Minnesota Wolves! Can't wait for the season.", 0),
        ("s1", "Tim", "Tim here: I support the Lakers, always have.", 0),
        ("s2", "John", "I went hiking near the lake on Saturday.", 40),
        ("s2", "Tim", "John, the lake sounds lovely. I read a fantasy novel all weekend.", 40),
        ("s3", "John", "I visited a convention and played a board game called Catan.", 161),
        ("s3", "Tim", "A board game convention? I played chess at the library.", 161),
    ]
    for n, (session, who, text, day) in enumerate(lines):
        say(log, session, who, text, f"c:{n}", day)


# --- whose words: speakers -----------------------------------------------------------------

def test_the_speaker_a_question_names_is_found_in_the_home_and_left_out_of_its_embedding(
        log: EventLog, store: ProjectionStore) -> None:
    two_friends(log)
    store.catch_up_all()
    named = naming(store.db, "What did John's team win?")
    assert named.speakers == {"John"} and named.query == "What did team win?"
    assert naming(store.db, "What is Jo's hobby?").speakers == {"John"}  # a capitalised start
    assert naming(store.db, "Jo, what is the time?").speakers == set()  # not the first word
    assert naming(store.db, "What did they say?").speakers == set()
    assert speaker_factors({"John"}, ["John", "Tim", ""]) == [1.0, pytest.approx(0.7), 1.0]
    assert speaker_factors({"John", "Tim"}, ["John", "Tim"]) == [1.0, 1.0]  # both: no choice


def test_a_question_about_someone_ranks_their_own_words_first(
        log: EventLog, store: ProjectionStore) -> None:
    """'the lake' is said by both; the question is about John, so John's turn comes first,
    not Tim's turn that names him."""
    two_friends(log)
    store.catch_up_all()
    items = recall(store.db, "Where did John go hiking near the lake?", budget=0, k=3).items
    assert items[0].refs[0] == "c:5"


def test_a_question_put_to_the_named_speaker_comes_with_their_answer_and_nothing_else(
        log: EventLog, store: ProjectionStore) -> None:
    two_friends(log)
    store.catch_up_all()
    result = recall(store.db, "Which team did John sign with?", budget=512, k=5)
    first = result.items[0]
    assert first.refs == ["c:2", "c:3"] and "Minnesota Wolves" in first.content
    # a hit by the named speaker is not shown with the other's reply
    john = next(i for i in result.items if i.refs[0] == "c:1")
    assert john.refs == ["c:1"]


# --- the turns around a turn: context --------------------------------------------------------

def test_a_turn_next_to_a_matching_one_joins_with_its_context(
        log: EventLog, store: ProjectionStore) -> None:
    two_friends(log)
    store.catch_up_all()
    rows = dict(store.db.execute("SELECT json_extract(refs, '$[0]'), key FROM search_items"))
    asked = rows["c:2"]   # "Which team did you sign with in the end?"
    turns = {asked: (asked.split(":")[1], "Tim")}
    scores, fresh = in_context(store.db, {asked: 1.0}, turns, None, 3.0,
                               lambda session, speaker: False)
    answer = rows["c:3"]
    assert answer in fresh and scores[answer] == pytest.approx(CONTEXT_WEIGHT * 1.0)
    assert scores[rows["c:1"]] == pytest.approx(CONTEXT_WEIGHT * 1.0)   # the turn before
    assert scores[rows["c:0"]] == pytest.approx(CONTEXT_WEIGHT * 0.5)   # two turns away
    assert rows["c:5"] not in scores                                    # another session
    assert scores[asked] == pytest.approx(1.0)  # its neighbours scored nothing of their own


def test_only_the_best_candidates_gain_context(log: EventLog, store: ProjectionStore,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With CONTEXT_OF = 1 only the best candidate turn has its neighbours read: the weaker
    candidate gains nothing from the turns around it, and nothing new joins from there."""
    two_friends(log)
    store.catch_up_all()
    rows = dict(store.db.execute("SELECT json_extract(refs, '$[0]'), key FROM search_items"))
    strong, weak = rows["c:2"], rows["c:6"]  # s1 "Which team…", s2 "John, the lake…"
    turns = {strong: (strong.split(":")[1], "Tim"), weak: (weak.split(":")[1], "Tim")}
    monkeypatch.setattr(weights, "CONTEXT_OF", 1)
    scores, fresh = in_context(store.db, {strong: 1.0, weak: 0.5}, turns, None, 3.0,
                               lambda session, speaker: False)
    assert rows["c:3"] in fresh and rows["c:5"] not in fresh  # s2's other turn: not read
    assert scores[weak] == pytest.approx(0.5)
    monkeypatch.setattr(weights, "CONTEXT_OF", 2)
    scores, fresh = in_context(store.db, {strong: 1.0, weak: 0.5}, turns, None, 3.0,
                               lambda session, speaker: False)
    assert rows["c:5"] in fresh and scores[rows["c:5"]] == pytest.approx(CONTEXT_WEIGHT * 0.5)


def test_neighbours_are_the_two_turns_each_side_in_the_same_session(
        log: EventLog, store: ProjectionStore) -> None:
    """Turns of another session in between are skipped; a turn cut into passages is one
    neighbour; a session's first and last turns have neighbours on one side only."""
    long_turn = " ".join(f"Sentence {i} says the rain came early on the coast." for i in range(30))
    lines = [("a", "one"), ("b", "elsewhere"), ("a", long_turn), ("a", "three"), ("b", "more"),
             ("a", "four"), ("a", "five")]
    for n, (session, text) in enumerate(lines):
        say(log, session, "Ann", text, f"c:{n}", 0)
    store.catch_up_all()
    places = candidate_turns(store.db, [row[0] for row in store.db.execute(
        "SELECT DISTINCT id FROM search_items WHERE source = 'turn'")])
    order = {row[0]: row[1] for row in store.db.execute(
        "SELECT id, MIN(seq) FROM search_items WHERE source = 'turn' AND session = 'a'"
        " GROUP BY id ORDER BY 2")}
    a = list(order)  # session a's turns in log order
    assert store.db.execute("SELECT COUNT(*) FROM search_items WHERE id = ?",
                            (a[1],)).fetchone()[0] > 1  # the long turn is passages
    near = neighbours(store.db, [places[id_] for id_ in a])
    assert near[a[0]] == [(a[1], 1.0), (a[2], FAR_WEIGHT)]
    assert near[a[2]] == [(a[1], 1.0), (a[0], FAR_WEIGHT), (a[3], 1.0), (a[4], FAR_WEIGHT)]
    assert near[a[4]] == [(a[3], 1.0), (a[2], FAR_WEIGHT)]
    assert neighbours(store.db, []) == {}


def test_turn_reads_read_each_turn_once_and_answer_as_the_plain_reads(
        log: EventLog, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall reads the lexical candidates' turns ahead (``TurnReads.warm``) while the query
    is embedded; the context step then reads only what is new, and finds the same."""
    two_friends(log)
    store.catch_up_all()
    rows = dict(store.db.execute("SELECT json_extract(refs, '$[0]'), id FROM search_items"))
    ids = [rows["c:2"], rows["c:6"]]
    plain_places = candidate_turns(store.db, ids)
    plain_around = neighbours(store.db, list(plain_places.values()))
    near = {n for around in plain_around.values() for n, _ in around} - set(ids)
    plain_items = turn_items(store.db, near)
    reads = TurnReads(store.db)
    reads.warm(ids)
    calls: list[str] = []
    for name in ("candidate_turns", "neighbours", "turn_items"):
        real = getattr(context_module, name)
        monkeypatch.setattr(context_module, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    assert reads.places(ids) == plain_places
    assert reads.around(list(plain_places.values())) == plain_around
    assert reads.items(near) == plain_items
    assert calls == []  # all read ahead
    assert reads.places([rows["c:0"]]) and calls == ["candidate_turns"]  # a new one is read


def test_turn_reads_read_ahead_only_while_there_is_time(
        log: EventLog, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading ahead goes best candidate first, a few turns at a time, and stops as soon as
    ``more()`` says the other thread is done: what it left is read when it is needed."""
    two_friends(log)
    store.catch_up_all()
    monkeypatch.setattr(TurnReads, "WARM_STEP", 1)
    rows = dict(store.db.execute("SELECT json_extract(refs, '$[0]'), id FROM search_items"))
    ids = [rows["c:6"], rows["c:2"], rows["c:4"]]
    read: list[list[str]] = []
    real = context_module.neighbours
    monkeypatch.setattr(context_module, "neighbours",
                        lambda db, turns: read.append([t.id for t in turns]) or real(db, turns))
    answers = iter([True, True, False])
    reads = TurnReads(store.db)
    reads.warm(ids, lambda: next(answers))
    assert read == [[rows["c:6"]], [rows["c:2"]]]  # the third was left
    plain = TurnReads(store.db)
    assert reads.around(list(reads.places(ids).values())) == plain.around(
        list(plain.places(ids).values()))
    assert read[2:] == [[rows["c:4"]], ids]  # then read once, when asked for


def test_replies_are_read_when_asked_for_a_few_first_then_in_batches(
        log: EventLog, store: ProjectionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Packing asks for the replies of the best few turns: the first read takes FIRST turns
    from the one asked for, later reads BATCH, and each reply is what reading them all at
    once gives."""
    from projections import recall as recall_module
    from projections.search import items_by_key

    two_friends(log)
    store.catch_up_all()
    keys = [row[0] for row in store.db.execute(
        "SELECT key FROM search_items WHERE source = 'turn' ORDER BY seq")]
    turns = list(items_by_key(store.db, keys).values())
    everything = recall_module._replies(store.db, turns)
    monkeypatch.setattr(recall_module._Replies, "FIRST", 2)
    monkeypatch.setattr(recall_module._Replies, "BATCH", 3)
    read: list[int] = []
    real = recall_module._replies
    monkeypatch.setattr(recall_module, "_replies",
                        lambda db, batch: read.append(len(batch)) or real(db, batch))
    replies = recall_module._Replies(store.db, turns)
    assert replies.get(turns[0].key) == everything[turns[0].key] and read == [2]
    assert replies.get(turns[1].key) == everything[turns[1].key] and read == [2]  # read already
    assert replies.get(turns[4].key) == everything.get(turns[4].key) and read == [2, 3]
    for turn in turns:
        assert replies.get(turn.key) == everything.get(turn.key)
    assert sum(read) == len(turns) and len(everything) == len(turns) - 3  # a session's last


def test_no_context_around_a_models_reply(log: EventLog, store: ProjectionStore) -> None:
    """In a chat with a model a person's messages stand on their own."""
    say(log, "c", "user", "I bought a road bike last week.", "u:0", 0)
    say(log, "c", "assistant", "Nice! Road bikes are great for fitness.", "u:1", 0, "assistant")
    say(log, "c", "user", "Which saddle should I get?", "u:2", 0)
    store.catch_up_all()
    rows = dict(store.db.execute("SELECT json_extract(refs, '$[0]'), key FROM search_items"))
    asked = rows["u:2"]
    scores, fresh = in_context(store.db, {asked: 1.0}, {asked: (asked.split(":")[1], "user")},
                               None, 3.0, lambda session, speaker: speaker == "assistant")
    assert fresh == {} and scores == {asked: 1.0}


def test_a_question_asked_in_a_diarist_chat_is_never_recalled(log: EventLog,
                                                                store: ProjectionStore) -> None:
    """A person asking their chat "where do I live now?" again and again, and a model
    echoing it, is no evidence of where they live: such turns of a diarist chat are not
    recalled (they would outrank what answers them, and the replies after them). The same
    question between two people in an imported conversation still is."""
    for session, backend in (("chat/a", "openai"), ("chat/b", "openai"), ("imp", "import")):
        log.append(SessionStarted(session=session, backend=backend, model="m",
                                  context_window=2048), stream=session)
    say(log, "chat/a", "user", "I live in Porto now and my job is nursing.", "a:0", 0)
    for n in range(3):
        say(log, "chat/b", "user", "Where do I live now? And what is my job?", f"b:{n}", n + 1)
    say(log, "chat/b", "m", "Where do I live now, and what is my job?", "b:9", 5, "assistant")
    say(log, "imp", "Tim", "Where do you live now, John? What is your job?", "i:0", 6)
    store.catch_up_all()
    found = recall(store.db, "Where do I live now, and what is my job?", budget=0, k=10)
    refs = {ref for item in found.items for ref in item.refs}
    assert "a:0" in refs and "i:0" in refs
    assert not refs & {"b:0", "b:1", "b:2", "b:9"}


def test_a_models_reply_that_says_nothing_of_its_own_is_never_recalled(
        log: EventLog, store: ProjectionStore) -> None:
    """A small model echoing the message it answers, or copying the memory block of its
    prompt, repeats the person's words or memory under its own name: such a reply of a
    diarist chat is not recalled; a reply that says something is."""
    log.append(SessionStarted(session="chat/a", backend="openai", model="m",
                              context_window=2048), stream="chat/a")
    say(log, "chat/a", "user", "By the way, I live in Lisbon now.", "a:0", 0)
    say(log, "chat/a", "m", "By the way, I live in Lisbon now!", "a:1", 0, "assistant")
    say(log, "chat/a", "user", "Any tips for my sister's visit?", "a:2", 1)
    say(log, "chat/a", "m", "[relevant experience]\n- The user lives in Lisbon now.", "a:3", 1,
        "assistant")
    say(log, "chat/a", "user", "Where should we eat?", "a:4", 2)
    say(log, "chat/a", "m", "In Lisbon now, try the sardines at Alfama.", "a:5", 2, "assistant")
    say(log, "chat/a", "user", "And where do I live?", "a:6", 3)
    say(log, "chat/a", "m", "[most relevant]\n- (1 May 2026) user: I live in Lisbon now.",
        "a:7", 3, "assistant")
    store.catch_up_all()
    found = recall(store.db, "Where do I live now in Lisbon?", budget=0, k=10)
    shown = {ref for item in found.items for ref in item.refs
             if item.content.startswith("m:") or "\nm: " in item.content}
    assert "a:5" in {ref for item in found.items for ref in item.refs}
    assert not shown & {"a:1", "a:3", "a:7"}
    assert "a:0" in {ref for item in found.items for ref in item.refs}


def test_a_models_reply_that_reads_memory_back_is_never_recalled(
        log: EventLog, store: ProjectionStore) -> None:
    """Asked "what did I cook yesterday?", a small model reads the memory line back in its
    own name: recalled later, that reply would be a second, later-dated copy of the dinner
    ("cooked on the day of the chat"). A reply that adds something of its own still is."""
    say(log, "d", "Ann", "I cooked a mushroom risotto for dinner, my sister came over.",
        "d:0", 0)
    log.append(SessionStarted(session="chat/a", backend="openai", model="m",
                              context_window=2048), stream="chat/a")
    say(log, "chat/a", "user", "What did I cook yesterday?", "a:0", 1)
    say(log, "chat/a", "m", "I cooked a mushroom risotto for dinner.", "a:1", 1, "assistant")
    say(log, "chat/a", "user", "And what should I cook next?", "a:2", 1)
    say(log, "chat/a", "m", "After the mushroom risotto, try a saffron risotto for dinner.",
        "a:3", 1, "assistant")
    store.catch_up_all()
    found = recall(store.db, "Which risotto did I cook for dinner?", budget=0, k=10)
    refs = {ref for item in found.items for ref in item.refs}
    assert "d:0" in refs and "a:3" in refs
    assert "a:1" not in refs


# --- the dates a question names ---------------------------------------------------------------

def test_dates_in_a_question() -> None:
    (day,) = periods("What did Nate play at the convention on 9 October, 2022?")
    assert (day.start, day.year) == ((10, 9), 2022)
    (month,) = periods("What did Nate share in November 2022?")
    assert (month.start, month.end, month.year) == ((11, 1), (11, 30), 2022)
    (bare,) = periods("When did Melanie go camping in June?")
    assert bare.year is None and bare.holds(dt.date(2021, 6, 30))
    assert periods("What may I do?") == [] and periods("When did Ann move?") == []
    assert day.holds(dt.date(2022, 10, 15)) and not day.holds(dt.date(2022, 10, 17))
    times = ["2022-10-09T10:00:00Z", "2022-03-01T10:00:00Z", ""]
    assert period_factors("on 9 October 2022?", times) == [1.0, OUTSIDE_WEIGHT, 1.0]
    assert period_factors("no date here", times) == [1.0, 1.0, 1.0]


def test_a_question_naming_a_date_ranks_what_was_said_then_first(
        log: EventLog, store: ProjectionStore) -> None:
    two_friends(log)
    store.catch_up_all()
    # John plays a game on 1 May (s1) and on 9 October (s3): the date decides
    items = recall(store.db, "What game did John play on 9 October, 2023?", budget=0, k=2).items
    assert items[0].refs[0] == "c:7"
    items = recall(store.db, "What game did John play on 1 May 2023?", budget=0, k=2).items
    assert items[0].refs[0] == "c:1"


def test_relative_dates_in_a_question_are_read_from_the_day_it_is_asked() -> None:
    """ "Last week" asked on Wednesday 12 October 2022 is the week of Monday 3 October;
    across a year's end "last month" asked on 3 January 2023 is December 2022; with no day
    given (a start block's query, said at another time) nothing is read from the clock."""
    times = ["2022-10-04T10:00:00Z", "2022-10-11T10:00:00Z", "2022-12-20T10:00:00Z"]
    asked = dt.date(2022, 10, 12)
    assert period_factors("What did I cook last week?", times, asked) == \
        [1.0, OUTSIDE_WEIGHT, OUTSIDE_WEIGHT]
    assert period_factors("What did I cook yesterday?", times, asked) == \
        [OUTSIDE_WEIGHT, 1.0, OUTSIDE_WEIGHT]
    assert period_factors("What did I cook last month?", times, dt.date(2023, 1, 3)) == \
        [OUTSIDE_WEIGHT, OUTSIDE_WEIGHT, 1.0]
    assert period_factors("What did I cook last week?", times) == [1.0, 1.0, 1.0]
    # "two weeks ago" is only about that day: said three days before it counts too
    assert period_factors("What did I cook two weeks ago?", times, dt.date(2022, 10, 21)) == \
        [1.0, 1.0, OUTSIDE_WEIGHT]


def test_recall_reads_yesterday_from_when_the_question_is_asked(
        log: EventLog, store: ProjectionStore) -> None:
    two_friends(log)
    store.catch_up_all()
    question = "What game did John play yesterday?"
    # John plays a game on 1 May (s1) and on 9 October (s3): the day asked decides
    on_10_october = T0 + dt.timedelta(days=162)
    items = recall(store.db, question, budget=0, k=2, now=on_10_october).items
    assert items[0].refs[0] == "c:7"
    items = recall(store.db, question, budget=0, k=2, now=T0 + dt.timedelta(days=1)).items
    assert items[0].refs[0] == "c:1"


# --- what is true now ----------------------------------------------------------------------------

def test_recency_weighs_only_the_candidates_that_answer() -> None:
    times = ["2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", "2024-09-01T00:00:00Z"]
    factors = recency_factors(times, "present", [1.0, 0.8, 0.1])
    assert factors[0] < factors[1] == 1.0   # the newer of the two that answer wins
    assert factors[2] == 1.0                # the newest remark answers nothing: no lift
    assert recency_factors(times, "past", [1.0, 0.8, 0.1]) == [1.0, 1.0, 1.0]
    boost = change_factors(["I live in Leeds.", "We moved to York.", "We moved the sofa."],
                           [1.0, 0.6, 0.1], "present")
    assert boost[0] == 1.0 and boost[1] > 1.0 and boost[2] == 1.0
    assert temporal_intent("Where does Ann live now?") == "present"
    assert temporal_intent("Where did Ann live before York?") == "past"


@pytest.fixture
def vector_store(model_home: Home) -> tuple[EventLog, ProjectionStore]:
    from workers.models.embedding import ensure_model

    log = EventLog(model_home.events_db)
    ensure_model(model_home, log)
    store = open_store(model_home, log).__enter__()
    yield log, store  # type: ignore[misc]
    store.close()
    log.close()


def embed(model_home: Home, store: ProjectionStore) -> object:
    from projections.embedding import active_embedder
    from projections.semantic import semantic_searcher
    from projections.vector_embed import embed_pending

    store.catch_up_all()
    embedder = active_embedder(model_home, store)
    assert embedder is not None
    embed_pending(store, embedder)
    return semantic_searcher(model_home, store)


def test_planted_changes_the_newest_statement_ranks_first(
        model_home: Home, vector_store: tuple[EventLog, ProjectionStore]) -> None:
    log, store = vector_store
    chat = [
        (0, "Maya", "I live in Bristol, a short walk from the harbour."),
        (0, "Maya", "My favourite drink is oat flat white, every morning."),
        (30, "Maya", "The bus was late again today."),
        (60, "Maya", "Big news: we packed everything up and moved to Plymouth!"),
        (90, "Maya", "New habit: I switched to green tea and I'm not going back."),
        (120, "Maya", "It rained the whole morning here."),
        (121, "Maya", "I need a name for my new houseplant."),
    ]
    for n, (day, who, text) in enumerate(chat):
        say(log, f"s{day}", who, text, f"m:{n}", day)
    semantic = embed(model_home, store)
    for question, new, old in (("Which city does Maya live in now?", "m:3", "m:0"),
                               ("What does Maya like to drink these days?", "m:4", "m:1")):
        refs = [i.refs[0] for i in recall(store.db, question, 0, 10, semantic).items]
        assert new in refs and refs.index(new) < refs.index(old), (question, refs)
    # a question about the past is not weighed by recency: the old statement stays up
    # (second only to the one that names Plymouth, as without any recency weight)
    refs = [i.refs[0] for i in recall(store.db, "Where did Maya live before Plymouth?", 0, 10,
                                      semantic).items]
    assert refs[:2] == ["m:3", "m:0"], refs


def test_an_echo_does_not_come_back_as_a_newer_statement(
        model_home: Home, vector_store: tuple[EventLog, ProjectionStore]) -> None:
    """With semantic recall on a question about the present (newer statements near the best
    join the candidates), a model's echo of a move, seconds newer than it, is left out."""
    log, store = vector_store
    log.append(SessionStarted(session="chat/a", backend="openai", model="m",
                              context_window=2048), stream="chat/a")
    say(log, "chat/a", "user", "I live in Porto, a short walk from the river.", "a:0", 0)
    say(log, "chat/b", "user", "By the way, I live in Lisbon now, I moved there yesterday.",
        "b:0", 30)
    log.append(SessionStarted(session="chat/b", backend="openai", model="m",
                              context_window=2048), stream="chat/b")
    log.append(AssistantTurn(session="chat/b", name="m",   # a few seconds after the move
                             text="By the way, you live in Lisbon now, you moved there!"),
               stream="chat/b", ref="b:1", occurred_at=T0 + dt.timedelta(days=30, seconds=5))
    log.append(MemoriesMined(session="chat/b", model="heuristic", memories=[   # shown first
        {"id": "m0", "type": "workspace_profile", "subject": "user|home", "refs": ["b:0"],
         "content": "The user lives in Lisbon now."}]), stream="memory")
    semantic = embed(model_home, store)
    refs = [ref for item in recall(store.db, "Where do I live now?", 512, 10,
                                   semantic).items for ref in item.refs]
    assert "b:0" in refs and "b:1" not in refs, refs


def test_a_newer_statement_that_joins_is_one_recall_would_show(
        model_home: Home, vector_store: tuple[EventLog, ProjectionStore]) -> None:
    """On a question about the present the newer statements near the best candidates join
    them — but never a memory the dream superseded (a misread value, newer than the turns)
    nor a MEMORY.md section, which comes in the head only: recall shows neither otherwise."""
    log, store = vector_store
    say(log, "s0", "Maya", "I live in Bristol, a short walk from the harbour.", "m:0", 0)
    say(log, "s60", "Maya", "Big news: we packed everything up and moved to Plymouth!",
        "m:1", 60)
    mined = T0 + dt.timedelta(days=90)
    log.append(MemoriesMined(session="s60", model="heuristic", memories=[
        {"id": "new", "type": "user_preference", "subject": "maya|home", "refs": ["m:1"],
         "content": "Maya moved to Plymouth."}]), stream="memory", occurred_at=mined)
    # mined later from the older turn (a second pass), so superseded: said before the move
    log.append(MemoriesMined(session="s0", model="heuristic", memories=[
        {"id": "misread", "type": "user_preference", "subject": "maya|home",
         "refs": ["m:0"], "content": "Maya lives in Bristol now, a short walk from the "
                                     "harbour."}]), stream="memory",
        occurred_at=mined + dt.timedelta(days=1))
    log.append(MemorySuperseded(ids=["misread"], by="new"), stream="memory",
               occurred_at=mined + dt.timedelta(days=1))
    log.append(LongTermRewritten(content="# Memory\n\n## Profile\n- Maya lives in Bristol "
                                         "now, by the harbour.\n"),
               stream="memory", occurred_at=mined + dt.timedelta(days=2))
    semantic = embed(model_home, store)
    items = recall(store.db, "Which city does Maya live in now?", 0, 10, semantic,
                   head=False).items
    assert [i.source for i in items if i.source != "turn"] == ["memory"], items
    assert {i.id for i in items if i.source == "memory"} == {"new"}, items


def test_a_turn_is_embedded_without_its_speaker(
        model_home: Home, vector_store: tuple[EventLog, ProjectionStore]) -> None:
    import numpy as np

    from projections.embedding import active_embedder
    from projections.vector_cache import active_model, cached_vectors

    log, store = vector_store
    log.append(SessionStarted(session="s", backend="import", model="", context_window=0),
               stream="s")
    say(log, "s", "Caroline", "I went to a support group yesterday.", "x:1", 0)
    embed(model_home, store)
    (key, content_hash, content) = store.db.execute(
        "SELECT i.key, i.content_hash, f.content FROM search_items i"
        " JOIN search_fts f ON f.rowid = i.rowid").fetchone()
    assert content == "Caroline: I went to a support group yesterday."
    assert embedding_text(TURN, content) == "I went to a support group yesterday."
    active = active_model(store)
    assert active is not None
    cached = cached_vectors(store.db, active, [content_hash])[content_hash]
    embedder = active_embedder(model_home, store)
    assert embedder is not None
    bare, named = embedder.embed(["I went to a support group yesterday.", content])
    assert float(np.dot(cached, bare)) > 0.999 > float(np.dot(cached, named))
