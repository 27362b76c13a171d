"""Dreaming: merges, conflicts, fading and archiving — each decision an event, replayable."""
from __future__ import annotations

import datetime as dt

import pytest
from freezegun import freeze_time

from events import EventLog, Home, clock
from events.types import MemoriesMined, Remembered, UserTurn
from projections import open_store
from projections.memories import Memory, faded, get_memory, list_memories
from projections.recall import recall
from workers.dreaming.dream import dream, subject_of
from workers.sync.replay import verify

from .conftest import run

DAY = dt.timedelta(days=1)
T0 = dt.datetime(2024, 1, 1, 12, tzinfo=dt.UTC)


def mined(log: EventLog, at: dt.datetime, *memories: dict, model: str = "qwen") -> None:
    log.append(MemoriesMined(session="s", model=model, memories=list(memories)),
               stream="memory", occurred_at=at)


def said(log: EventLog, at: dt.datetime, text: str = "Morning!") -> None:
    """A turn at ``at``: the log's own time moves on to it."""
    log.append(UserTurn(session="later", text=text, name="Ann"), stream="later", occurred_at=at)


def m(memory_id: str, content: str, type_: str = "user_preference", subject: str = "",
      confidence: float = 0.8) -> dict:
    return {"id": memory_id, "type": type_, "content": content, "subject": subject,
            "confidence": confidence, "refs": [f"ref-{memory_id}"]}


def active(home: Home) -> dict[str, Memory]:
    with open_store(home) as store:
        store.catch_up_all()
        return {x.id: x for x in list_memories(store.db)}


def test_same_text_is_merged_into_the_most_credible_keeping_every_ref(home: Home) -> None:
    with EventLog(home.events_db) as log:
        mined(log, T0, m("a", "Ann uses Vim."), m("b", "ann uses vim"))
        mined(log, T0 + DAY, m("c", "ANN USES VIM!", confidence=0.95), m("d", "Ann uses Emacs"))
    report = dream(home, now=T0 + 2 * DAY)
    assert (report.merged_groups, report.merged) == (1, 2)
    left = active(home)
    assert sorted(left) == ["c", "d"]
    assert left["c"].supersedes == ["a", "b"] and left["c"].refs == ["ref-c", "ref-a", "ref-b"]
    assert left["c"].last_seen == clock.to_iso(T0 + DAY) and left["c"].confidence == 0.95
    with EventLog(home.events_db) as log:
        [merge] = log.read(types=["MemoriesMerged"])
    assert merge.payload == {"ids": ["a", "b"], "into": "c", "reason": "duplicates (same text)"}


def test_the_fact_said_last_wins_a_conflict_and_only_it_is_recalled(home: Home) -> None:
    with EventLog(home.events_db) as log:
        mined(log, T0, m("old", "Maya lives in Berlin", "workspace_profile", "maya|home city"))
        mined(log, T0 + 9 * DAY, m("new", "Maya lives in Lisbon", "workspace_profile",
                                   "maya|home city", confidence=0.7),
              m("pet", "Maya has a greyhound", subject="maya|pet"))
        # low confidence never wins over a credible fact, however new
        mined(log, T0 + 10 * DAY, m("rumour", "Maya lives in Porto", "workspace_profile",
                                    "maya|home city", confidence=0.3))
    report = dream(home, now=T0 + 11 * DAY)
    assert report.superseded == 2
    left = active(home)
    assert "new" in left and "old" not in left and "rumour" not in left
    assert left["new"].supersedes == ["old", "rumour"]
    with open_store(home) as store:
        assert get_memory(store.db, "old").status == "superseded"  # kept in history
        with clock.frozen(T0 + 11 * DAY):
            hits = recall(store.db, "Maya lives in Berlin or Lisbon or Porto", 0)
    assert [i.id for i in hits.items if i.source == "workspace_profile"] == ["new"]


def test_a_happening_that_sets_nothing_replaces_no_value(home: Home) -> None:
    """A meeting the classifier took for a partner is no partner: the one said before stays
    current, in the memories and in MEMORY.md."""
    with EventLog(home.events_db) as log:
        mined(log, T0, m("sam", "Maya's partner is called Sam.", subject="maya|partner"))
        mined(log, T0 + 9 * DAY, m("alex", "Maya bumped into Alex, a software engineer, on "
                                           "the escalator at the station.",
                                   subject="maya|partner"))
    assert dream(home, now=T0 + 10 * DAY).superseded == 0
    assert {"sam", "alex"} <= set(active(home))


def test_a_second_hobby_adds_and_only_an_announced_change_replaces(home: Home) -> None:
    """Hobbies and pets are held several at once: a newer one replaces the older only when
    its statement says so; an allergy is never replaced by a newer one."""
    with EventLog(home.events_db) as log:
        mined(log, T0, m("chess", "Ann plays chess at the club.", subject="ann|hobby"),
              m("nuts", "Ann is allergic to peanuts.", subject="ann|allergy"),
              m("rex", "Ann's dog is called Rex.", subject="ann|dog"))
        mined(log, T0 + 9 * DAY, m("yoga", "Ann took up yoga.", subject="ann|hobby"),
              m("shell", "Ann found out she is allergic to shellfish now.",
                subject="ann|allergy"),
              m("bo", "Ann adopted another dog, Bo.", subject="ann|dog"))
    assert dream(home, now=T0 + 10 * DAY).superseded == 0
    assert {"chess", "yoga", "nuts", "shell", "rex", "bo"} <= set(active(home))
    with EventLog(home.events_db) as log:
        mined(log, T0 + 20 * DAY, m("climb", "Ann gave up chess and climbs instead.",
                                    subject="ann|hobby"),
              m("pip", "Ann's dog Rex is called Pip now.", subject="ann|dog"))
        mined(log, T0 + 30 * DAY, m("knit", "Ann knits on Sundays.", subject="ann|hobby"),
              m("long", "Ann has been climbing for four months now.",  # how long: no change
                subject="ann|hobby"))
    report = dream(home, now=T0 + 31 * DAY)
    left = active(home)
    assert left["climb"].supersedes == ["chess", "yoga"] and {"knit", "long"} <= set(left)
    assert "rex" in left["pip"].supersedes   # (and Bo: a kind's change is by time, not name)
    assert report.superseded == 4
    assert {"nuts", "shell"} <= set(left)


def test_within_one_chunk_a_change_said_later_wins(home: Home) -> None:
    """A chunk's memories all bear its last turn's time. A value that announces a change
    is said at its own turn, after the chunk's values said before it: made precise a turn
    later ("… the violin now"), or a move ("… in York now", over a more confident Leeds).
    A later value that names no change is no later than the others: the classifier's
    sureness (here: confidence) decides, as for values said in one turn."""
    with EventLog(home.events_db) as log:
        for minute, who, ref, text in (
                (0, "Tim", "t1", "I recently started learning an instrument."),
                (1, "Tim", "t2", "I'm learning how to play the violin now."),
                (2, "Tim", "t3", "I live in Leeds."),
                (3, "Tim", "t4", "Actually I live in York now."),
                (4, "Ann", "a1", "I live in Leeds."),
                (5, "Ann", "a2", "My sister lives in a small flat in York.")):
            log.append(UserTurn(session="s", text=text, name=who), stream="s",
                       occurred_at=T0 + minute * dt.timedelta(minutes=1), ref=ref)
        mined(log, T0 + dt.timedelta(minutes=5),
              dict(m("inst", "Tim recently started learning an instrument.",
                     subject="tim|hobby"), refs=["t1"]),
              dict(m("violin", "Tim is learning how to play the violin now.",
                     subject="tim|hobby"), refs=["t2"]),
              dict(m("leeds", "Tim lives in Leeds.", subject="tim|home", confidence=0.9),
                   refs=["t3"]),
              dict(m("york", "Tim lives in York now.", subject="tim|home"), refs=["t4"]),
              dict(m("a-leeds", "Ann lives in Leeds.", subject="ann|home", confidence=0.9),
                   refs=["a1"]),
              dict(m("a-york", "Ann lives in a small flat in York.", subject="ann|home"),
                   refs=["a2"]))
    assert dream(home, now=T0 + DAY).superseded == 3
    left = active(home)
    assert left["violin"].supersedes == ["inst"] and left["york"].supersedes == ["leeds"]
    assert left["a-leeds"].supersedes == ["a-york"]


def test_only_a_statement_of_a_current_value_replaces_one(home: Home) -> None:
    """What MEMORY.md would not show as a value (an intention, a need, a tally so far, one
    happening of a taste) neither replaces a value nor is replaced: the statement of it
    said last does."""
    with EventLog(home.events_db) as log:
        mined(log, T0, m("home", "Ann moved to Leeds.", subject="ann|home"),
              m("tea", "Ann drinks green tea every morning.", subject="ann|favourite drink"))
        mined(log, T0 + 9 * DAY,
              m("shops", "Ann will check out some stores near her new place.",
                subject="ann|home"),
              m("cocktail", "Ann attended a cocktail-making class.",
                subject="ann|favourite drink"),
              m("stamps", "Ann has earned 10 stamps so far.", subject="ann|favourite drink"))
    assert dream(home, now=T0 + 10 * DAY).superseded == 0
    assert {"home", "tea", "shops", "cocktail", "stamps"} <= set(active(home))
    with EventLog(home.events_db) as log:
        mined(log, T0 + 20 * DAY, m("york", "Ann lives in York now.", subject="ann|home"))
    dream(home, now=T0 + 21 * DAY)
    assert active(home)["york"].supersedes == ["home"]


def test_heuristic_subjects_make_a_move_supersede_an_old_home() -> None:
    def memory(content: str) -> Memory:
        return Memory("x", "workspace_profile", content, "", "", 0.7, 1.0, [], "active", [],
                      "", "", "", [], "heuristic", "")

    assert subject_of(memory("Maya: I live in Berlin.")) == "maya|home"
    assert subject_of(memory("Maya: I've moved to Lisbon!")) == "maya|home"
    # "I'm" and "I've" as people write them, either apostrophe
    assert subject_of(memory("Maya: I've relocated to Porto for good.")) == "maya|home"
    assert subject_of(memory("Maya: I’m living in Leeds.")) == "maya|home"
    assert subject_of(memory("Maya: From Monday I'm working as a translator.")) == "maya|job"
    assert subject_of(memory("Maya: I’m working for a bakery.")) == "maya|employer"
    assert subject_of(memory("I prefer tabs over spaces")) == \
        subject_of(memory("I prefer spaces over tabs")) == "user|prefers spaces tabs"
    assert subject_of(memory("Maya: I went to the zoo")) == ""


def test_relevancy_fades_once_a_day_and_the_forgotten_are_archived(home: Home) -> None:
    with EventLog(home.events_db) as log:
        mined(log, T0, m("fresh", "Ann runs on Sundays"))
        mined(log, T0 - 400 * DAY, m("stale", "Ann collected stamps"))
        mined(log, T0 - 400 * DAY, m("me", "Ann is called Ann", "workspace_profile"))
        log.append(Remembered(text="Ann hates olives"), stream="memory",
                   occurred_at=T0 - 400 * DAY)
        said(log, T0 + 90 * DAY)
    report = dream(home, now=T0 + 90 * DAY + dt.timedelta(hours=1))
    assert (report.archived, report.decayed_at) == (1, "2024-03-31")
    left = active(home)
    assert "stale" not in left
    assert left["fresh"].relevancy == pytest.approx(0.5)
    assert left["me"].relevancy == 1.0  # identity does not fade
    assert [x.relevancy for x in left.values() if x.content == "Ann hates olives"] == [1.0]
    with open_store(home) as store:
        assert get_memory(store.db, "stale").reason == "relevancy below 0.1 on 2024-03-31"
    # the same day again: nothing to decide
    assert dream(home, now=T0 + 90 * DAY + dt.timedelta(hours=3)).events == 0
    # a day later on the clock, but nobody said anything: the log's time stands still
    assert dream(home, now=T0 + 91 * DAY).events == 0
    with EventLog(home.events_db) as log:
        said(log, T0 + 91 * DAY)
    assert dream(home, now=T0 + 91 * DAY).events == 1
    assert faded("2024-01-01T00:00:00.000000Z", dt.datetime(2024, 1, 1, tzinfo=dt.UTC), 90) == 1


def test_an_old_history_is_measured_in_its_own_time(home: Home) -> None:
    """A year of chats from 2023 imported today: nothing of it fades on the first night;
    when the log's time does move on, the current value of an attribute and lasting facts
    (likes, relationships, names) stay, while an unrepeated event of a day goes."""
    with EventLog(home.events_db) as log:
        mined(log, T0 - 400 * DAY, m("event", "Ann went to a pottery fair"),
              m("home", "Ann lives in Leeds", "workspace_profile", "ann|home"),
              m("editor", "Ann uses Helix as her editor", subject="ann|editor"),
              m("like", "Ann loves strong black coffee"),
              m("kin", "Ann's sister Lena is a nurse"))
        said(log, T0 - 390 * DAY)
    report = dream(home, now=T0 + 300 * DAY)          # the wall clock: almost two years on
    assert report.archived == 0 and report.decayed_at == "2022-12-07"
    assert len(active(home)) == 5
    with EventLog(home.events_db) as log:
        said(log, T0)                                 # the person comes back a year later
    report = dream(home, now=T0 + 300 * DAY)
    assert report.archived == 1 and set(active(home)) == {"home", "editor", "like", "kin"}


def test_the_wall_clock_alone_ages_nothing(home: Home) -> None:
    """The system clock two years past the history (freezegun moves it for everything that
    reads it): the dream that takes its time from the clock still fades nothing, because
    relevancy counts in the log's own time."""
    with EventLog(home.events_db) as log:
        mined(log, T0, m("event", "Ann went to a pottery fair"))
    with freeze_time(T0 + 700 * DAY):
        report = dream(home)
    assert report.archived == 0 and report.decayed_at == T0.date().isoformat()
    assert "event" in active(home)


def test_recall_weighs_memories_by_their_relevancy(home: Home) -> None:
    with EventLog(home.events_db) as log:
        mined(log, T0 - 180 * DAY, m("old", "Ann drank green tea at the station"))
        mined(log, T0, m("new", "Ann drank black tea at the station"))
    with open_store(home) as store:
        store.catch_up_all()
        with clock.frozen(T0):
            before = {i.id: i.score for i in recall(store.db, "Ann drank tea", 0).items}
    dream(home, now=T0)
    with open_store(home) as store:
        store.catch_up_all()
        assert get_memory(store.db, "old").relevancy == pytest.approx(0.25)
        with clock.frozen(T0):
            after = {i.id: i.score for i in recall(store.db, "Ann drank tea", 0).items}
    assert after["old"] == pytest.approx(before["old"] * 0.25, rel=1e-3)
    assert after["new"] == pytest.approx(before["new"])


def test_dry_run_and_replay(home: Home) -> None:
    with EventLog(home.events_db) as log:
        mined(log, T0, m("a", "Ann uses Vim"), m("b", "ann uses vim"))
        head = log.head()
    assert dream(home, now=T0, dry_run=True).merged == 1
    with EventLog(home.events_db) as log:
        assert log.head() == head
    out = run("dream").output
    assert "1 merged into 1" in out and "merge 1 into" in out
    assert all(v.same for v in verify(home))
    assert "Nothing to change." in run("dream").output


def test_near_duplicates_by_embedding_are_merged_with_guards(model_home: Home) -> None:
    """Paraphrases merge; a swapped preference or a different number does not."""
    from workers.models.embedding import ensure_model

    with EventLog(model_home.events_db) as log:
        ensure_model(model_home, log)
        mined(log, T0, m("a", "My dog is called Rex"), m("b", "My dog's name is Rex"),
              m("c", "I prefer tabs over spaces"), m("d", "I prefer spaces over tabs"),
              m("e", "I have 2 kids"), m("f", "I have 3 kids"))
    report = dream(model_home, now=T0)  # no vector cached yet: the dream embeds them
    left = active(model_home)
    with EventLog(model_home.events_db) as log:
        merges = [e.payload for e in log.read(types=["MemoriesMerged"])]
        assert log.read(types=["EmbeddingModelChosen"])
    assert merges == [{"ids": ["b"], "into": "a",
                       "reason": "near duplicates (cosine ≥ 0.9)"}]
    assert {"e", "f"} <= set(left)  # 2 kids / 3 kids: not the same fact
    # tabs over spaces / spaces over tabs: not merged, but they set one preference, so the
    # dream resolves them as a conflict instead
    assert report.superseded == 1 and ("c" in left) != ("d" in left)


def test_similarity_buckets_find_what_brute_force_finds() -> None:
    import numpy as np

    from workers.dreaming import similarity

    rng = np.random.default_rng(7)
    base = rng.standard_normal((6000, 64)).astype(np.float32)
    base[3000:3300] = base[:300] + 0.15 * rng.standard_normal((300, 64)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    found = similarity.near_pairs(base, 0.9)
    scores = base @ base.T
    truth = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.triu(scores >= 0.9, 1)),
                                              strict=True)}
    assert len(base) > similarity.EXACT_UPTO and len(truth) >= 290
    assert set(found) <= truth and len(set(found) & truth) >= 0.97 * len(truth)
    assert similarity.near_pairs(base, 0.9) == found  # deterministic


EUROPE = "The user is planning a trip to Europe next summer to visit the user's relatives."
EUROPE_FULLER = ("The user is planning a trip to Europe next summer to visit the user's"
                 " relatives in Germany, France, and the UK.")


def test_a_statement_a_fuller_one_subsumes_is_merged_into_the_fuller(model_home: Home) -> None:
    """Cosine ≥ 0.9 but the proper nouns differ, so no near duplicate: the shorter says
    nothing the fuller does not, so it goes — into the fuller one, though it is older."""
    from workers.models.embedding import ensure_model

    with EventLog(model_home.events_db) as log:
        ensure_model(model_home, log)
        mined(log, T0, m("a", EUROPE))
        mined(log, T0 + dt.timedelta(hours=1), m("b", EUROPE_FULLER))
    dream(model_home, now=T0 + dt.timedelta(hours=2))
    with EventLog(model_home.events_db) as log:
        merges = [e.payload for e in log.read(types=["MemoriesMerged"])]
    assert merges == [{"ids": ["a"], "into": "b",
                       "reason": "near duplicates (cosine ≥ 0.9)"}]
    assert set(active(model_home)) == {"b"}


def test_mining_does_not_state_again_what_a_fuller_memory_says(model_home: Home) -> None:
    from workers.mining.dedup import ActiveMemories
    from workers.mining.text import says_as_much
    from workers.models.embedding import ensure_model

    with EventLog(model_home.events_db) as log:
        ensure_model(model_home, log)
        mined(log, T0, m("b", EUROPE_FULLER))
    with open_store(model_home) as store:
        store.catch_up_all()
        memories = ActiveMemories(model_home, store)
        shorter, = memories.vectors([EUROPE])
        assert memories.known(EUROPE, shorter) == "b"    # it says less: not mined again
    # the other way round a fuller statement says more: mined (dreaming merges the two)
    assert says_as_much(EUROPE_FULLER, EUROPE, 0.93)
    assert not says_as_much(EUROPE, EUROPE_FULLER, 0.93)
    assert not says_as_much(EUROPE_FULLER, EUROPE, 0.89)


def test_subsumes_asks_for_every_word_number_and_name_of_the_shorter() -> None:
    from workers.mining.text import subsumes

    assert subsumes(EUROPE_FULLER, EUROPE) and not subsumes(EUROPE, EUROPE_FULLER)
    assert not subsumes(EUROPE_FULLER, EUROPE_FULLER)          # the same words: no subset
    assert not subsumes("I prefer tabs over spaces always", "I prefer spaces over tabs")
    assert not subsumes(EUROPE_FULLER, EUROPE.replace("Europe", "Spain"))    # a new name
    assert not subsumes("I have 2 kids and a dog", "I have 3 kids")        # a new number
    assert subsumes("I have 2 kids and a dog named Rex", "I have 2 kids")
