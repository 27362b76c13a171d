"""A night that distills: statements with the attribute they set, superseded by newer ones,
MEMORY.md from what lasts, and nothing left waiting — with the real embedding model."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from events import EventLog, Home
from events.transcript import import_file
from projections import open_store
from projections.memories import Memory, list_memories
from projections.vector_cache import pending_count
from workers.eval.changed_facts import generate
from workers.eval.dataset import write_layout
from workers.mining.attributes import (
    ALSO,
    LABELS,
    NONE,
    Classifier,
    clauses,
    examples_by_label,
    names_a_place,
    with_attributes,
)
from workers.mining.candidates import Candidate
from workers.mining.distribute import LocalExtractor
from workers.schedule import run_night

from .conftest import fp32_embedder, locomo_observations, run, write_transcript
from .test_mining import turn


def mined_line(text: str, subject: str = "", *, type_: str = "user_preference",
               source: str = "heuristic", at: str = "2023-07-06T00:00:00Z") -> Memory:
    """A mined memory as consolidation reads it."""
    return Memory("m", type_, text, "fact", "", 0.7, 1.0, [], "active", [], at, at, "s", ["r"],
                  source, "", subject)


def night_over(home: Home, tmp_path: Path, turns: list[dict]) -> str:
    """MEMORY.md after ``turns`` are imported (beside any imported before) and a night runs,
    command by command."""
    write_transcript(tmp_path / "t.jsonl", turns)
    run("import", str(tmp_path / "t.jsonl"))
    for command in ("mine", "dream", "consolidate"):
        run(command)
    return (home.memory_dir / "MEMORY.md").read_text()


def classifier(exported_model: Path) -> Classifier:
    return Classifier(fp32_embedder(exported_model))


def test_the_classifier_names_changing_attributes_and_leaves_events(
        exported_model: Path) -> None:
    found = classifier(exported_model).attributes([
        ("Maya moved to Porto on 6 July 2024, the new flat has a balcony.", "Maya"),
        ("Maya started working as a nurse.", "Maya"),
        ("Maya's favourite drink is green tea.", "Maya"),
        ("Maya went to a pottery fair on 3 May 2024 and loved it.", "Maya"),
        ("Maya burned the toast this morning.", "Maya"),
        ("Maya fixed the squeaky door.", "Maya"),
        ("Maya drives a blue Skoda.", "Maya")])
    assert found == ["home", "job", "drink", "", "", "", "vehicle"]


def test_a_trip_is_no_new_home(exported_model: Path) -> None:
    """Travel reads like a home to the embedding; the trained decoy keeps it apart."""
    found = classifier(exported_model).attributes([
        ("Maya went to Lisbon for a long weekend and loved the old town.", "Maya"),
        ("Maya is planning a trip to Galway.", "Maya"),
        ("Maya moved to Lisbon last month.", "Maya")])
    assert found == ["", "", "home"]


def test_a_one_off_occasion_is_no_hobby(exported_model: Path) -> None:
    """What a person does once reads like a pastime to the embedding; the trained decoy
    (an occasion) and the threshold keep it apart from one taken up."""
    found = classifier(exported_model).attributes([
        ("Maya is organizing a gaming party two weekends later.", "Maya"),
        ("Maya is crossing her fingers for the results.", "Maya"),
        ("Maya has taken up the cello and practises every evening.", "Maya")])
    assert found == ["", "", "hobby"]


def test_a_clause_that_does_not_name_the_person_sets_none_of_their_attributes(
        exported_model: Path) -> None:
    """"he finally got a job as a teacher" alone reads as a job, and "who moved to Porto"
    as a home; neither is Maya's."""
    found = classifier(exported_model).attributes([
        ("Maya was happy for Tom, because he finally got a job as a teacher.", "Maya"),
        ("Maya visited her aunt, who moved to Porto last month.", "Maya"),
        ("Maya moved to Porto last month, and she loves the light there.", "Maya")])
    assert found == ["", "", "home"]
    only_his = [Candidate("user_preference", "He moved to Porto.", turns=[1])]
    assert with_attributes(only_his, ["Maya"], classifier(exported_model)) == only_his


def test_a_part_with_no_subject_is_not_read_alone(exported_model: Path) -> None:
    """"and" joins nouns as often as verbs: "big dogs with loud barks", cut off and read
    alone, is a pet (0.73), but Lena fears them. A predicate joined to hers still counts,
    read in the whole statement: the car Tom bought."""
    found = classifier(exported_model).attributes([
        ("Lena is terrified of wasps and big dogs with loud barks.", "Lena"),
        ("Tom sold his bike and bought a second-hand car.", "Tom")])
    assert found == ["", "vehicle"]


def test_candidates_get_a_subject_key(exported_model: Path) -> None:
    candidates = [Candidate("user_preference", "Sam relocated to Ghent for good.", turns=[1]),
                  Candidate("user_preference", "Sam fixed the squeaky door.", turns=[2]),
                  Candidate("tool_use", "pytest fails on import.", turns=[3])]
    out = with_attributes(candidates, ["Sam", "Sam", "Sam"], classifier(exported_model))
    assert [(c.subject, c.type) for c in out] == [
        ("sam|home", "user_preference"), ("", "user_preference"), ("", "tool_use")]
    assert with_attributes(candidates, ["Sam"] * 3, None) == candidates   # no model: as is


@pytest.mark.parametrize("said", ["I live in Porto now.", "I'm living in Porto.",
                                  "I'm currently living in Porto, and I love it.",
                                  "I am still living in Porto.", "I now live in Porto."])
def test_where_someone_lives_has_its_key_with_an_adverb_too(said: str) -> None:
    from workers.mining.text import subject_key

    assert subject_key(said, "Ana") == "ana|home"


@pytest.mark.parametrize("said", ["I live in fear of spiders.", "I moved to the countryside.",
                                  "I'm living in the moment these days."])
def test_a_home_said_with_no_place_has_no_key(said: str) -> None:
    """As the classifier's home (:attr:`Attribute.named`), the pattern's names its place."""
    from workers.mining.text import subject_key

    assert subject_key(said, "Ana") == ""


def test_where_someone_is_and_what_they_do_said_plainly(exported_model: Path) -> None:
    """An assistant chat's user says where they are and what they do in passing ("I'm in
    …", "I'm located in <zip code>", "I just got promoted to …"); mined, "The user" reads
    as the person ("Someone"), as a name does."""
    found = classifier(exported_model).attributes([
        ("The user is located in 60614.", "user"),
        ("The user is in Minneapolis, and the user is looking for a good bakery.", "user"),
        ("The user just got promoted to charge nurse.", "user"),
        ("The user is looking for a good bakery.", "user")])
    assert found == ["home", "home", "job", ""]
    assert clauses("The user's cat is Luna.", "user") == ["Someone's cat is Luna."]
    assert clauses("Later the user moved to Leeds.", "me") == ["Later Someone moved to Leeds."]


def test_a_way_of_saying_an_attribute_adds_to_its_probability(tmp_path: Path) -> None:
    """An attribute's ``also`` examples are a class of their own ("home~"), whose
    probability the classifier adds to the attribute's: a clause half "moved to" and half
    "is in" is a home, not two halves under the threshold."""
    import numpy as np

    class Embedder:
        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    weights = tmp_path / "w.npz"
    np.savez(weights, w=np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]), b=np.zeros(3),
             labels=np.array(["home", "home" + ALSO, NONE]), threshold=np.float32(0.6))
    found = Classifier(Embedder(), weights).scored([("Ana is in Tallinn.", "Ana")])
    assert found[0][1] == "home" and found[0][0] > 0.7     # 0.42 + 0.42, not 0.42
    assert ("Someone is in Denver.", "home" + ALSO) in examples_by_label()
    assert LABELS.count("home" + ALSO) == 1 and "home" + ALSO not in {
        label for _, label in examples_by_label() if label == "job"}


def test_a_home_names_a_place(exported_model: Path) -> None:
    """Where someone lives is a place with a name or a number: "the downtown area" says
    where in no town, and would replace a home that does."""
    candidates = [Candidate("user_preference", "The user is in the downtown area.", turns=[1]),
                  Candidate("user_preference", "The user is in the city, near the river.",
                            turns=[2]),
                  Candidate("user_preference", "The user is in downtown Minneapolis.",
                            turns=[3])]
    out = with_attributes(candidates, ["user"] * 3, classifier(exported_model))
    assert [c.subject for c in out] == ["", "", "user|home"]
    assert names_a_place("Big news: Ana packed up and moved to Tallinn.", "Ana")
    assert not names_a_place("Ana is in the city centre. The boxes are everywhere.", "Ana")


def test_pets_and_vehicles_have_a_current_value_per_kind(exported_model: Path) -> None:
    """A new rabbit replaces the rabbit, not the hamster; a statement about "the <thing>"
    is kept only if it sets an attribute (and never without the model)."""
    candidates = [
        Candidate("user_preference", "Ravi adopted a rabbit called Pepper.", turns=[1]),
        Candidate("user_preference", "Ravi's hamster is called Captain.", turns=[2]),
        Candidate("user_preference", "Ravi's cat has been renamed Mochi.", turns=[3],
                  needs_attribute=True),
        Candidate("user_preference", "Ravi's weather was awful today.", turns=[4],
                  needs_attribute=True),
        Candidate("user_preference", "Ravi sold the van and bought a sailing boat.",
                  turns=[5])]
    out = with_attributes(candidates, ["Ravi"] * 5, classifier(exported_model))
    assert [c.subject for c in out] == ["ravi|rabbit", "ravi|hamster", "ravi|cat",
                                        "ravi|car"]
    assert not any(c.needs_attribute for c in out)
    assert [c.content for c in with_attributes(candidates, ["Ravi"] * 5, None)] == [
        c.content for c in candidates if not c.needs_attribute]


def test_a_deadline_is_a_day_so_a_statement_naming_none_sets_none(
        exported_model: Path) -> None:
    candidates = [Candidate("user_preference", "Sam's thesis is due on the 3rd.", turns=[1]),
                  Candidate("user_preference", "Sam has got a mix of work and personal tasks,"
                            " and some of them do have deadlines.", turns=[2])]
    out = with_attributes(candidates, ["Sam", "Sam"], classifier(exported_model))
    assert [c.subject for c in out] == ["sam|deadline", ""]


def test_a_replacement_of_a_known_value_needs_less_certainty(exported_model: Path) -> None:
    """Below the trained threshold, a statement that says it replaces something ("instead",
    "these days") takes the attribute its person already has a value of; not without that
    value, not for another person's, and not on "changed", whose object may be anything."""
    candidates = [
        Candidate("user_preference", "Lucas has switched to birdwatching instead.",
                  turns=[1]),
        Candidate("user_preference", "Elena has gone off Elena's old order; these days "
                  "it's oat flat white for Elena.", turns=[2]),
        Candidate("user_preference", "Incorporating strength training really changed the "
                  "game for John, improving John's shooting accuracy, agility, and speed.",
                  turns=[3])]
    speakers = ["Lucas", "Elena", "John"]
    model = classifier(exported_model)
    assert [c.subject for c in with_attributes(candidates, speakers, model)] == ["", "", ""]
    held = {"lucas|hobby", "elena|favourite drink", "john|sport"}
    assert [c.subject for c in with_attributes(candidates, speakers, model, held)] == [
        "lucas|hobby", "elena|favourite drink", ""]
    assert [c.subject for c in with_attributes(candidates, speakers, model,
                                               {"maya|hobby", "maya|favourite drink"})] \
        == ["", "", ""]


def test_a_hobby_taken_up_instead_replaces_the_old_one(embedding: Home,
                                                       tmp_path: Path) -> None:
    """The first hobby is sure to the classifier; the one taken up instead is not, but
    its person has a hobby, so it is that attribute, and after the night it is the one."""
    memory_md = night_over(embedding, tmp_path, [
        turn("h/1", "2024-03-04T09:00:00Z", "user", "Lucas",
             "I've taken up the cello, and I love it.", "r1"),
        turn("h/2", "2024-05-12T09:00:00Z", "user", "Lucas",
             "I've taken up birdwatching instead, and I love it.", "r2")])
    assert "birdwatching" in memory_md and "cello" not in memory_md, memory_md


def test_a_relative_the_classifier_reads_as_a_partner_is_no_partner(embedding: Home,
                                                                     tmp_path: Path) -> None:
    """A LongMemEval user's turn: the classifier reads a brother who became a father as a
    partner too, less surely than the husband (what the night's dream reads on a home:
    :func:`classifier_sureness`). A partner value says so ("married", "husband", …): the
    brother is none, so he replaces nothing and stays, a relationship in People, beside
    the marriage, said once and no change ("said"); a value said later still replaces the
    older one."""
    from workers.dreaming.dream import classifier_sureness

    memory_md = night_over(embedding, tmp_path, [
        turn("f/1", "2023-05-28T15:20:00Z", "user", "user",
             "Let me start with my immediate family. I'm married, and my husband and I are "
             "currently trying to start a family. As for siblings, I have a brother who's "
             "recently become a father to Emma.", "r1"),
        turn("f/2", "2023-06-02T10:00:00Z", "user", "user", "I work as a nurse at the moment.",
             "r2"),
        turn("f/3", "2023-07-09T10:00:00Z", "user", "user",
             "I handed in my notice and from Monday I'm working as a librarian.", "r3")])
    profile, _, people = memory_md.partition("## People")
    [married] = [line for line in people.splitlines() if "married" in line]
    assert married.casefold().startswith("- the user is married"), memory_md
    assert "(said 28 May 2023)" in married, memory_md     # no change: nothing said before
    assert "brother" not in married and "has a brother" in people, memory_md
    assert "librarian" in profile, memory_md
    assert "librarian" in memory_md and "nurse" not in memory_md, memory_md
    with open_store(embedding) as store:
        [partner, brother] = sorted((m for m in list_memories(store.db)
                                     if m.subject == "user|partner"),
                                    key=lambda m: "brother" in m.content)
        sure = classifier_sureness(embedding, store)([partner, brother], "user|partner")
    assert "married" in partner.content and "brother" in brother.content
    assert sure[partner.id] > sure[brother.id] > 0.5, sure


def test_the_classifier_breaks_a_tie_in_time_that_the_ids_would_break_otherwise(
        exported_model: Path) -> None:
    """The same two values as above, their ids ordered so that without the classifier the
    brother would win the tie; with it the husband does, and a value said later wins
    whatever the classifier says."""
    from workers.dreaming.dream import _replaced

    read = classifier(exported_model)

    def sureness(memories: list[Memory], subject: str) -> dict[str, float]:
        found = read.sureness([(m.content, "user", "partner") for m in memories])
        return {m.id: p for m, p in zip(memories, found, strict=True)}

    def value(memory_id: str, text: str, at: str) -> Memory:
        return replace(mined_line(text, "user|partner", at=at), id=memory_id)

    husband = value("a", "The user is married, and the user's husband and the user are "
                         "currently trying to start a family.", "2023-05-28T15:20:00Z")
    brother = value("b", "As for siblings, the user has a brother who's recently become a "
                         "father to Emma.", "2023-05-28T15:20:00Z")
    assert _replaced("user|partner", [husband, brother], {})[0].id == "b"
    assert _replaced("user|partner", [husband, brother], {}, sureness) == (husband, ["b"])
    later = replace(brother, last_seen="2023-06-01T09:00:00Z")
    assert _replaced("user|partner", [husband, later], {}, sureness) == (later, ["a"])


def test_a_night_over_an_old_history_keeps_current_values_only(embedding: Home,
                                                               tmp_path: Path) -> None:
    """A person's history from 2024 (the changed-facts generator), imported in 2026: one
    night, nothing configured. The newest home city is in MEMORY.md with the day it was
    said, the replaced ones are not, nothing faded on the first night, and what the night
    wrote is embedded and searchable, with no task left on the queue."""
    conv = generate(4, people=1).conversations[0]      # Tomasz, whose city changes
    [transcript, _] = write_layout([conv], tmp_path / "cf")
    with EventLog(embedding.events_db) as log:
        import_file(log, transcript)
    report = run_night(embedding, lambda _home, spec: LocalExtractor(spec))
    assert report.dreamt is not None and report.dreamt.archived == 0
    memory_md = (embedding.memory_dir / "MEMORY.md").read_text()
    [city] = [q for q in conv.questions
              if q.category in ("changed-fact", "changed-state") and "live" in q.query]
    by_ref = {t["ref"]: t["text"] for t in conv.turns}
    old = [v for v in ("Leeds", "Porto", "Lyon", "Tallinn", "Galway", "Bergen", "Krakow",
                       "Valencia", "Ghent", "Bologna")
           if v != city.answer and any(v in by_ref[r] for r in city.stale)]
    assert old and city.answer in memory_md and not any(v in memory_md for v in old)
    line = next(x for x in memory_md.splitlines() if city.answer in x)
    assert "2024" in line and ": I " not in line     # a statement, dated (in it or "since")
    assert "Assistant" not in memory_md
    with open_store(embedding) as store:
        assert pending_count(store) == 0
        superseded = list_memories(store.db, None, ("superseded",))
    assert any(v in m.content for m in superseded for v in old)
    status = run("status").output
    assert "0 pending" in status and "0 items waiting" in status


def test_the_readme_demo_leaves_nothing_waiting(embedding: Home, tmp_path: Path) -> None:
    memory_md = night_over(embedding, tmp_path, [
        turn("d/1", "2024-03-01T09:00:00Z", "user", "Maya", "I live in Bristol now.", "r1"),
        turn("d/1", "2024-03-01T09:01:00Z", "assistant", "assistant", "Lovely city!", "r2"),
        turn("d/2", "2024-03-09T09:00:00Z", "user", "Maya",
             "Big news: we moved to Plymouth last weekend.", "r3")])
    status = run("status").output
    assert "0 pending" in status and "0 items waiting" in status
    assert "Plymouth" in run("recall", "where does Maya live?").output
    assert "Maya moved to Plymouth on the weekend of 2 March 2024" in memory_md
    assert "Bristol" not in memory_md and "Lovely" not in memory_md


def test_a_named_thing_is_replaced_by_a_new_one_of_its_kind(embedding: Home,
                                                             tmp_path: Path) -> None:
    """"My boat is called Curlew" (a pattern's naming subject) and "I sold Curlew and bought
    a new boat, Petrel" (the classifier's kind) set the same thing: the boat."""
    memory_md = night_over(embedding, tmp_path, [
        turn("b/1", "2024-03-04T09:00:00Z", "user", "Maya",
             "My boat is called Curlew, she's an old Wayfarer.", "r1"),
        turn("b/2", "2024-03-12T09:00:00Z", "user", "Maya",
             "Boat news: I sold Curlew and bought a new boat, she's called Petrel.", "r2")])
    assert "Petrel" in memory_md
    assert "boat is called Curlew" not in memory_md, memory_md


def test_a_coding_users_night_keeps_their_project_stack_and_fixes(home: Home,
                                                                 tmp_path: Path) -> None:
    """A person coding with the assistant: the project, a fixed CI failure and a team habit
    reach MEMORY.md's work sections; the failure is told with its fix, never alone."""
    said = ["I'm building a Flask app called ledgerly, it tracks shared household expenses.",
            "pytest keeps failing on CI with 'could not connect to server' errors.",
            "That was it, I added a health check to the postgres service and it passes now.",
            "Also, we always run make lint before pushing."]
    memory_md = night_over(home, tmp_path, [
        turn("c/1", f"2024-03-04T09:{i:02d}:00Z", role, role, text, f"r{i}")
        for i, (role, text) in enumerate(
            (role, text) for line in said
            for role, text in (("user", line), ("assistant", "Let's look at that.")))])
    sections = {part.split("\n", 1)[0]: part for part in memory_md.split("## ")[1:]}
    assert "The user is building a Flask app called ledgerly." in sections["Projects"]
    assert ("Pytest keeps failing on CI with 'could not connect to server' errors; fixed: the "
            "user added a health check") in sections["Tools"]
    assert "The user always runs make lint before pushing." in sections["Workflows"]
    assert memory_md.count("keeps failing") == 1, memory_md


def test_a_naming_subject_takes_the_kind_it_names() -> None:
    from workers.mining.attributes import named_kind

    assert named_kind("maya|boat name") == "maya|boat"
    assert named_kind("maya|puppy name") == "maya|dog"  # the kind's label, as the classifier's
    assert named_kind("maya|son name") == "maya|son name"  # not a kind: as it was
    assert named_kind("maya|home") == "maya|home" and named_kind("") == ""


def test_a_superseded_value_is_not_recalled_from_its_journal_line(home: Home) -> None:
    """The journal file keeps what was noted that day; recall does not offer a replaced
    value from it, as it does not from the memory."""
    import datetime as dt

    from events.types import MemorySuperseded, Remembered
    from projections.recall import recall

    ids = {}
    with EventLog(home.events_db) as log:
        for city, day in (("Leeds", 1), ("Porto", 9)):
            ids[city] = log.append(Remembered(text=f"Maya lives in {city} near the old market"),
                                   stream="memory",
                                   occurred_at=dt.datetime(2024, 3, day, tzinfo=dt.UTC)).id
        log.append(MemorySuperseded(ids=[ids["Leeds"]], by=ids["Porto"], reason="moved"),
                   stream="memory")
    with open_store(home) as store:
        store.catch_up_all()
        items = recall(store.db, "Maya lives near the old market", 0, 10).items
    assert "Leeds" in (home.memory_dir / "2024-03-01.md").read_text()
    assert any("Porto" in i.content for i in items)
    assert not any("Leeds" in i.content for i in items), [(i.source, i.content) for i in items]


def _job_changed(home: Home, said: list[tuple[str, int, str, str]]) -> None:
    """Maya's turns ``said`` (ref, day of March 2024, session, text) of her job, each mined
    as her job, and the dream's superseding the first by the last: its turn's fact was
    replaced."""
    import datetime as dt

    from events.types import MemoriesMined, MemorySuperseded, UserTurn

    with EventLog(home.events_db) as log:
        for ref, day, session, text in said:
            log.append(UserTurn(session=session, text=text, name="Maya"),
                       stream=f"session/{session}",
                       occurred_at=dt.datetime(2024, 3, day, tzinfo=dt.UTC), ref=ref)
        for ref, day, session, text in said:
            log.append(MemoriesMined(session=session, memories=[{
                "id": f"m-{ref}", "type": "user_preference", "content": f"Maya: {text}",
                "subject": "maya|job", "refs": [ref], "events": [],
                "at": f"2024-03-{day:02d}T00:00:00Z"}], model="heuristic",
                first_seq=1, last_seq=2, turns=2), stream="memory",
                occurred_at=dt.datetime(2024, 3, day, tzinfo=dt.UTC))
        log.append(MemorySuperseded(ids=[f"m-{said[0][0]}"], by=f"m-{said[-1][0]}",
                                    reason="conflict"), stream="memory")


def test_a_replaced_turn_comes_after_the_current_one_on_a_present_question(
        home: Home) -> None:
    """Dreaming superseded the memory of the old job: on "What does Maya do for a
    living?" the turn that said it ranks below the newer one, although it matches the
    question better; asked about the past, it is not held back."""
    from projections.recall import recall

    _job_changed(home, [
        ("r1", 1, "s", "I work as a nurse for a living at the city hospital, nurse work."),
        ("r2", 9, "s", "I got hired as a baker.")])
    with open_store(home) as store:
        store.catch_up_all()
        now = [i.refs for i in recall(store.db, "What does Maya do for a living?", 0, 10,
                                      head=False).items if i.source == "turn"]
        before = [i.refs for i in recall(store.db, "What did Maya do for a living before?",
                                         0, 10, head=False).items if i.source == "turn"]
    assert now.index(["r2"]) < now.index(["r1"]), now
    assert before and "r1" in before[0], before


def test_a_chats_start_block_weighs_a_replaced_turn_less_whatever_was_said_last(
        embedding: Home) -> None:
    """A start block's query is the last session's words, no question about the present,
    yet what it opens with should be true now: the turn that told the job since replaced
    comes after the newer job, which recall for the same words as a question's block
    (not ``whole_long_term``) ranks below it."""
    from projections.embedding import active_embedder
    from projections.inject import build_injection
    from projections.recall import recall
    from projections.semantic import semantic_searcher
    from projections.vector_embed import embed_pending
    from workers.models.embedding import ensure_model

    _job_changed(embedding, [
        ("r1", 1, "s1", "Hi! I work as a nurse at St. Thomas' Hospital in London."),
        ("r2", 9, "s2", "Big news, I left the hospital. I'm a school nurse now.")])
    words = "Shifts at the hospital in London were long this week."
    with EventLog(embedding.events_db) as log:
        ensure_model(embedding, log)
        with open_store(embedding, log) as store:
            store.catch_up_all()
            embed_pending(store, active_embedder(embedding, store))
            semantic = semantic_searcher(embedding, store)
            plain = [i.refs for i in recall(store.db, words, 2000, 10, semantic,
                                            head=False).items]
            start = [i.refs for i in build_injection(store.db, words, 2000, 10,
                                                     semantic).items]
    assert plain.index(["r1"]) < plain.index(["r2"]), plain
    assert start.index(["r2"]) < start.index(["r1"]), start


def test_a_statement_is_read_by_its_clauses_and_as_a_whole() -> None:
    from workers.mining.attributes import clauses

    assert clauses("Nadia left Stripe on 3 May 2025 and joined a startup called Loomwork.",
                   "Nadia") == ["Someone left Stripe",
                                "Someone left Stripe and joined a startup called Loomwork."]
    # a part with no subject is not read alone: after "and" it goes on from hers, an
    # "especially …" is read only in the whole
    assert clauses("Nadia is scared of wasps and big dogs with loud barks.", "Nadia") == [
        "Someone is scared of wasps", "Someone is scared of wasps and big dogs with loud barks."]
    assert clauses("Nadia loves tea, especially the smoky kinds from Fujian.", "Nadia") == [
        "Someone loves tea", "Someone loves tea, especially the smoky kinds from Fujian."]
    # the person named as an owner is no subject: "leadership roles in her company" is
    # still a part of what she read about, no job of hers
    assert clauses("Nadia read about pay gaps and leadership roles in Nadia's company.",
                   "Nadia") == ["Someone read about pay gaps",
                                "Someone read about pay gaps and leadership roles in Someone's"
                                " company."]
    assert clauses("Nadia lives in Leeds.", "Nadia") == ["Someone lives in Leeds."]
    # a month's name is a date only as a word ("Maya", "Marching" are not May, March)
    assert clauses("Nadia met Maya in May 2024 at the Marching band.", "Nadia") == [
        "Someone met Maya at the Marching band."]
    # a possessive of a name in -s is the person's too
    assert clauses("Lucas' evenings are for chess.", "Lucas") == [
        "Someone's evenings are for chess."]
    # a weekday is a date too: when is no part of what
    assert clauses("From Monday Tomasz is working as a chemistry teacher.", "Tomasz") == [
        "Someone is working as a chemistry teacher."]


@pytest.mark.parametrize(("statement", "section"), [
    ("Melanie loves camping trips with her family.", "Preferences"),
    ("It's like a reminder of Caroline's love and support.", None),   # not about a person
    ("Melanie's kids are named Ava and Leo.", "People"),
    ("Melanie has two kids and a dog.", "People"),
    # every relative the family line knows (projections.kin), in any of its forms
    ("The user's stepson Leo is a chef.", "People"),
    ("The user's grandkids live in Leeds.", "People"),
    ("The user's sisters both live abroad.", "People"),
    # what someone close feels, ought to or will do passes: no relationship line
    ("Melanie's kids are so excited about summer break.", None),
    ("Maria's kids should have the best.", None),
    ("The user's brother Michael is going to Japan soon.", None),
    ("The user's partner and the user are really looking forward to the new house.", None),
    ("Also, Melanie loves camping with her family.", "Preferences"),   # after the marker
    ("On 5 July 2023 Melanie took the kids to the museum.", None),      # an event: dated
    ("Melanie celebrated her daughter's birthday with a concert.", None),  # past tense
    ("Caroline is going to a transgender conference in July 2023.", "Plans"),
    ("Caroline will keep ya posted.", None),                          # a plan with no when
    ("Caroline was so happy and thankful for all the support.", None),
    # a reaction to what the other side proposed is not the person's own taste
    ("The user likes the idea of creating a content calendar.", None),
    ("Maya loves the sound of that recipe.", None),
    ("Maya loves the sound of rain.", "Preferences"),
    ("The user likes the sound of building a mosaic.", None),
    ("The user likes the sound of Crash Course.", None),
    ("The user likes the schedule so far.", None),                   # a verdict for now
    ("The user loves the list, thanks.", None),               # thanks: a reaction to it
    ("The user actually loves hiking.", "Preferences"),
    # a like of how something is or does: an aspect of what was talked about, no taste
    ("Melanie loves how art lets Melanie get her emotions out.", None),
    ("The user loves the way the new lamp dims from the phone.", None),
    ("The user loves the wayside inns of Wales.", "Preferences"),
    # … or of what only definite phrases point at: which pages, which language
    ("The user loves the smell of the pages and the sound of the paper.", None),
    ("Tim likes the structure of the language, it's much easier.", None),
    ("John loves the ocean.", "Preferences"),                  # one word: a thing of its own
    ("Caroline loves the sense of community at pride events.", "Preferences"),   # named
    ("Tim loves the Harry Potter books.", "Preferences"),
    ("Caroline and Melanie love painting.", "Preferences"),   # a subject of two
    ("Caroline is going to a pride parade in August 2023.", "Plans"),
    # the plan's line is its first sentence: a later sentence's month is not its when
    ("Caroline will bring plenty of ice. Caroline loved the picnic in June.", None),
    # … nor a relative clause's, which the line leaves out
    ("The user is excited to start the master's program, which the user got into back in"
     " February.", None),
    ("The user is excited to start the master's program in February, which is soon.",
     "Plans"),
    # … nor a past event's the plan mentions
    ("The user is planning to apply the skills the user learned at a workshop the user"
     " attended in February 2023.", None),
    ("The user is planning to hold the wedding in Napa Valley, on July 15th.", "Plans"),
])
def test_memory_md_keeps_likes_people_and_dated_plans_not_a_days_events(
        statement: str, section: str | None) -> None:
    from workers.consolidation.consolidate import section_for

    assert section_for(mined_line(statement)) == section


def test_memory_md_takes_only_statements_that_begin_with_a_speaker() -> None:
    from workers.consolidation.consolidate import section_for

    names = frozenset({"nate", "joanna", "the"})
    assert section_for(mined_line("Nate loves sci-fi movies."), names) == "Preferences"
    assert section_for(mined_line("Looks like Nate loves a break."), names) is None
    assert section_for(mined_line("Sharing Nate's love for desserts is fun."), names) is None


@pytest.mark.parametrize(("statement", "alone"), [
    ("Tim is a huge fan of this genre.", False),             # which genre?
    ("John loves how these poses challenge John's body.", False),
    ("Melanie loves it, it brings Melanie closer.", False),   # a pronoun with nothing before
    ("Nate really loves having them around.", False),
    ("Tim loves escaping to that world.", False),
    ("Tim is learning the violin this year.", True),         # a time, not a pointer
    ("John finds it rewarding to help the community.", True),  # "it … to": no pointer
    ("Maya adopted a dog, and she is called Bo.", True),     # a later clause may point back
    ("Caroline's guinea pig Oscar loves it when it rains.", True),   # a noun before "it"
    ('Tim loves "This Is Us" and watches it weekly.', True),  # a title is no pointer
    ("He's even keeping Nate's other pets active.", False),  # who is he?
    ("Joanna named her Tilly.", False),
    ("Nate saw another at a pet store.", False),
    ("Nate's turtles play with one another.", True),
    ("- Nate loves it.", False),                             # a bullet mark is no word
    ("The user enjoys the physical challenge of it.", False),  # of what?
    ("The user recently got one from Best Buy.", False),     # one what?
    ("Maya got one of the last tickets.", True),
    ("Here's a pic of John's family.", False),              # a photo, not shown
    ("Melanie loves how it's both a creative outlet and therapy.", False),
    ("On another note, Maria just adopted this cute pup.", False),  # after the opening
    ("Guess what - Maria got a puppy called Coco.", True),
    ("Nate loves watching them play to unwind.", False),    # "them … to" is no "it … to"
    ("Joanna loves the color and texture.", False),          # of what?
    ("Joanna really likes the idea and the acting.", False),
    ("Nate loves the story, it is so moving.", False),
    ("Maria loves the design of her new kitchen.", True),    # "of …" says whose
    ("John loves the energy and food of Seattle.", True),
    ("Tim loves the Harry Potter theme.", True),             # a name says which
    ("John loves the ocean.", True),                         # no aspect of something
    ("The name helps Joanna remember her old dog.", False),  # the name of what?
    ("Joanna had a dog with that name.", False),
    ("The atmosphere in the arena was electric.", True),
    ("Gina chose furniture that looks great.", True),        # "that", a relative pronoun
    # a number's point or a time's colon ends no clause: "this" is in the first one
    ("Maria ran 3.5 miles in this race.", False),
    ("Tim gets up at 6:30 for this class.", False),
])
def test_a_statement_that_needs_its_turns_to_be_understood_is_told_apart(
        statement: str, alone: bool) -> None:
    from projections.readable import self_contained

    assert self_contained(statement) is alone


def test_a_mined_statement_s_him_is_someone_else() -> None:
    """Mining names the speaker wherever they said "I", "me" or "my": a "him", "his" or
    "their" left, with no noun
    before it, is someone the statement does not name. An observation's "him" is mostly its
    own subject, so it is not checked there."""
    from projections.readable import self_contained

    assert not self_contained("Maria talked to him afterwards.", mined=True)
    assert self_contained("Maria talked to him afterwards.")
    assert not self_contained("Maria's brother asked him for a lift.", mined=True)  # who?
    assert self_contained("Maria drove her brother and his friend home.", mined=True)
    assert self_contained("Maria asked her brother to drive him home.", mined=True)
    # so is a "his" or "their" with no noun before it: whose?
    assert not self_contained("Nate loves his tech and humor.", mined=True)
    assert not self_contained("The user has heard great things about their burgers.",
                              mined=True)
    assert self_contained("Nate's brother loves his new car.", mined=True)
    # a "him" or object "her" stands for someone, not the thing before it
    assert not self_contained("The user has been doing some research on how to socialize"
                              " him with other dogs.", mined=True)
    assert not self_contained("Maria feels blessed to be able to give her a home.", mined=True)
    assert self_contained("The user helped a friend pick out gifts from her registry.",
                          mined=True)
    assert self_contained("Melanie loves camping trips with her family.", mined=True)


def test_statements_written_to_stand_alone_are_nearly_all_read_as_such() -> None:
    """LoCoMo's annotators wrote their observations to be read without the conversation."""
    from projections.readable import self_contained

    facts = locomo_observations()
    assert len(facts) > 1000
    assert sum(not self_contained(f) for f in facts) <= len(facts) // 100


def test_memory_md_leaves_out_a_mined_line_that_does_not_read_on_its_own() -> None:
    from workers.consolidation.consolidate import section_for

    assert section_for(mined_line("Tim is a huge fan of this genre.")) is None
    assert section_for(mined_line("Tim has been using this app.", "tim|language")) is None
    assert section_for(mined_line("Tim codes in Rust now.", "tim|language")) == "Profile"
    # a line that says next to nothing: its first clause is all it would show
    assert section_for(mined_line("7 to 3, so Tomasz actually has evenings now.",
                                  "tomasz|hobby")) is None
    # a need, a wish, hearsay is no current value, whatever attribute the classifier heard
    for said in ("The user needs to restock the tackle box.",
                 "The user has been wanting to try making croissants for ages.",
                 "The user has heard great things about Memphis-style BBQ.",
                 "The user never knew there were so many coffee options."):
        assert section_for(mined_line(said, "user|hobby")) is None, said
    # nor is a resolve, said with "not" ("won't") as much as without
    for said in ("Jon is not gonna give up on Jon's dreams - Jon's dance studio needs work.",
                 "Jon won't quit the studio."):
        assert section_for(mined_line(said, "jon|employer")) is None, said
    # nor a line whose first clause is about someone else, its person named only after it
    assert section_for(mined_line("The team has been really nice and John is having fun.",
                                  "john|hobby"), frozenset({"john"})) is None
    assert section_for(mined_line("John joined the team and John is having fun.",
                                  "john|hobby"), frozenset({"john"})) == "Preferences"
    # a tally "so far" changes as it goes
    assert section_for(mined_line("The user has earned 10 stamps so far.",
                                  "user|favourite drink")) is None
    # a person's own note is theirs to word as they like
    assert section_for(mined_line("I love this genre.", source="user")) is not None


@pytest.mark.parametrize(("line", "out"), [
    ("John loves the energy, diversity, and awesome food of this city.", True),
    ("The user will check out some of these recommendations.", True),
    ("Joanna decided to include this at the beginning.", True),       # "this" as an object
    ("Maria loves the freedom and connection it brings.", True),     # "it" is not the freedom
    ("The user loves the peace it brings to their mornings.", True),
    ("Having that picture on Joanna's cork board reminds Joanna of their love.", True),
    ("The user is all set on that front.", True),
    # a time, a thing come upon, a "this" that is the subject of a later clause, a noun
    # the line has named, "it" after a noun it can stand for
    ("The user has been making a lot of salads these days.", False),
    ("Tim went to the park this week.", False),
    ("Maria met this amazing woman, Jean, at the shelter.", False),
    ("John needs better schools and knows how this impacts neighborhoods.", False),
    ("Maya got a puppy, and this puppy is called Rex.", False),
    ("The user is still motivated from that charity yoga event the user did in April.", False),
    ("John is sure of that and happy.", False),                     # "that", a pronoun
    ("John started surfing five years ago and loves the connection to nature it provides.",
     False),
    ("The user checked the owner's manual, and it says to change the oil.", False),
    ("Joanna enjoys the movie 'Little Women' and recommends it as a great story.", False),
])
def test_a_line_that_points_out_of_itself_past_its_first_clause_is_told_apart(
        line: str, out: bool) -> None:
    from projections.readable import points_out

    assert points_out(line) is out


def test_memory_md_shows_a_line_that_points_out_of_itself_only_up_to_the_pointer() -> None:
    """A mined line whose later clause points at what only its turn names is cut before
    that clause when the first reads on its own, and left out when it does not; LoCoMo's
    observations, written to stand alone, are nearly all read as such."""
    from projections.readable import points_out
    from workers.consolidation.consolidate import bullet_of, section_for

    cut = mined_line("Nate is a big fan of Nintendo games, and Nate has been wanting to play"
                     " this one for a while.")
    assert section_for(cut) == "Preferences"
    assert bullet_of(cut) == "Nate is a big fan of Nintendo games."
    assert section_for(mined_line("Maria loves the freedom and connection it brings.")) is None
    assert section_for(mined_line("John loves the energy and awesome food of this city.")) \
        is None
    facts = locomo_observations()
    assert len(facts) > 1000
    assert sum(points_out(f) for f in facts) <= len(facts) // 200


@pytest.mark.parametrize(("statement", "subject", "section"), [
    # one happening is no taste: its day's journal keeps it
    ("The user attended a cocktail-making class and learned to make a Daiquiri.",
     "user|favourite drink", None),
    ("The user served up grilled meats and veggies at the last backyard barbecue.",
     "user|favourite food", None),
    ("The user twisted an ankle playing basketball.", "user|sport", None),
    ("The user invested in a new tent for the camping setup.", "user|hobby", None),
    # taking up, dropping or changing a taste is what sets one
    ("The user took up climbing.", "user|hobby", "Preferences"),   # a taste: a preference
    ("The user switched to decaf.", "user|favourite drink", "Preferences"),
    ("The user loves drinking iced coffee.", "user|favourite drink", "Preferences"),
    # a happening does set what is no taste
    ("The user got a golden retriever puppy named Max.", "user|dog", "People"),
    ("The user moved to Leeds.", "user|home", "Profile"),
])
def test_a_taste_s_current_value_is_no_single_happening(
        statement: str, subject: str, section: str | None) -> None:
    from workers.consolidation.consolidate import section_for

    assert section_for(mined_line(statement, subject), frozenset({"the"})) == section


@pytest.mark.parametrize(("subject", "line", "section"), [
    ("maya|home", "Maya lives in Plymouth now.", "Profile"),
    ("maya|job", "Maya works as a nurse.", "Profile"),
    ("maya|allergy", "Maya is allergic to penicillin.", "Profile"),
    ("maya|hobby", "Maya took up climbing.", "Preferences"),
    # … unless kept up on a schedule: a routine
    ("maya|hobby", "Maya takes tennis lessons with a coach, Rachel, every Thursday evening.",
     "Workflows"),
    ("maya|hobby", "Maya has been trying to get in at least 3 runs per week.", "Workflows"),
    ("maya|hobby", "Maya is carving out some me-time each day - running, reading.",
     "Workflows"),
    ("maya|hobby", "Maya has been playing guitar for three months now.", "Preferences"),
    ("maya|hobby", "Maya wants to fit in 3 workout sessions per week.", "Preferences"),
    ("maya|hobby", "Maya loves a day at the beach.", "Preferences"),
    # a pet or a partner is one of the person's people, not an animal she is allergic to
    ("maya|dog", "Maya adopted a puppy named Coco.", "People"),
    ("maya|pet", "Maya's cat Luna loves her new cat tower.", "People"),
    ("maya|partner", "Maya's husband's name is Michael.", "People"),
    ("maya|pet", "Maya is allergic to most reptiles and animals with fur.", "Profile"),
    # what someone codes with is a tool
    ("maya|code editor", "Maya switched to neovim.", "Tools"),
    ("maya|programming language", "Maya writes Rust these days.", "Tools"),
    ("maya|database", "Maya's team moved to Postgres.", "Tools"),
])
def test_a_current_value_joins_the_section_of_what_it_is(
        subject: str, line: str, section: str) -> None:
    from workers.consolidation.consolidate import value_section

    assert value_section(subject, line) == section


@pytest.mark.parametrize(("statement", "offered", "answers"), [
    ("The user loves the Jungle Adventure theme.",
     "Here are three themes: a Jungle Adventure theme, an Ocean party, a Superhero day.", True),
    ("The user likes the ideas, especially the personalized planner.",
     "A few ideas for her birthday: a personalized planner, marketing books.", True),
    ("The user loves the Jungle Adventure theme.", "Which theme did you choose?", False),
    # a word of it shown, or most of its words said, not only asked about
    ("Nate loves the way the frosting turned out.",
     "Here's a pic of a cake I made! [a photo of a cake with white frosting on a table]", True),
    ("Caroline loves the self-acceptance and love theme.",
     "My aim was to show warmth, love and self-acceptance.", True),
    ("The user likes the idea of a memory box.", "Some ideas: a memory box, a candle.", True),
    ("The user loves the smell of the pages and the sound of the paper.",
     "Some studies favour reading on paper. Ebooks are portable.", False),
    ("Caroline loves all the yellow leaves.", "That pic is so beautiful, the colors really pop."
     " [a photo of a path with yellow leaves]", True),
    ("The user loves the challenging sequences and the feeling of building internal heat.",
     "Flowing sequences build strength. Is it the challenging sequences, or the internal"
     " heat?", False),
    ("Maria really enjoys the upside-down poses.",
     "Glad you found it. Do you have a favorite yoga pose?", False),
    ("The user is a big fan of street food.", "Bangkok is known for its street food.", False),
    ("The user loves the outdoors.", "Here are some camping tips.", False),
    ("The user loves Jungle Adventure themes.", "Try a Jungle Adventure theme.", False),
    ("The user went to the market.", "The market opens at 9.", False),
    ("The user feels like the user has run out of ideas on what to do.",
     "Ideas for when you run out of things to do: a class, a trip.", False),   # no like
])
def test_a_like_of_what_the_other_side_just_offered_is_told_apart(
        statement: str, offered: str, answers: bool) -> None:
    from workers.consolidation.consolidate import answers_an_offer

    assert answers_an_offer(statement, offered) is answers


def test_memory_md_leaves_out_a_like_of_what_the_assistant_had_offered(
        home: Home, tmp_path: Path) -> None:
    def said(n: int, role: str, text: str) -> dict:
        return {"session": "s1", "at": f"2023-05-20T10:00:{n:02d}Z", "role": role,
                "name": role, "text": text, "ref": f"s1:{n}"}

    memory_md = night_over(home, tmp_path, [
        said(0, "user", "Can you suggest a theme for my twins' fifth birthday party?"),
        said(1, "assistant", "Sure! Three themes kids love: a Jungle Adventure theme, an "
                             "Under the Sea theme and a Superhero theme."),
        said(2, "user", "I love the Jungle Adventure theme! What decorations would fit?"),
        said(3, "assistant", "Vines, stuffed animals and green balloons."),
        said(4, "user", "I love hiking in the mountains with my twins."),
    ])
    assert "hiking in the mountains" in memory_md           # a taste of the user's own
    assert "Jungle Adventure" not in memory_md                # a reaction to the offer
    with open_store(home) as store:   # the memory stays, for recall and the journal
        assert any("Jungle Adventure theme" in m.content for m in list_memories(store.db))


@pytest.mark.parametrize(("text", "said", "day"), [
    ("Caroline is going to a conference in July 2023.", "2023-07-03", "2023-07-31"),
    ("Ann plans a track day on January 15th.", "2023-05-20", "2024-01-15"),  # the next one
    ("Ann plans a track day on January 15th.", "2023-01-02", "2023-01-15"),
    # a day just gone by is that one, not the next: said after it, across a year's end too
    ("Ann plans to attend the event on October 15th.", "2023-11-04", "2023-10-15"),
    ("Ann plans to go to the market on May 22nd and 29th.", "2023-05-27", "2023-05-22"),
    ("Ann is planning a party on December 30th.", "2024-01-03", "2023-12-30"),
    ("Ann is planning a party in December.", "2024-01-20", "2023-12-31"),
    ("Ann is planning the wedding on July 15th.", "2023-10-18", "2024-07-15"),
    ("Ann is planning a trip to Seattle in June.", "2023-05-20", "2023-06-30"),
    ("Ann will visit on 7 June 2023 and in August 2023.", "2023-05-20", "2023-08-31"),
    ("Ann is planning a trip next summer.", "2023-05-20", None),
])
def test_the_last_day_a_plan_names_is_read_from_when_it_was_said(
        text: str, said: str, day: str | None) -> None:
    import datetime as dt

    from projections.when import last_day

    found = last_day(text, dt.date.fromisoformat(said))
    assert found == (dt.date.fromisoformat(day) if day else None)


@pytest.mark.parametrize(("text", "from_said"), [
    ("The user has been making a lot of salads lately.", True),
    ("Tim is learning how to play the violin now.", True),
    ("The user has been waking up at 7:30 every day for the past two weeks.", True),
    ("The user has been teaching for over 10 years.", True),
    ("The user and their partner plan to move in together in about six months.", True),
    ("The user is planning a trip to Europe next summer.", True),
    ("The user is planning a trip to New York City in June.", True),     # which June
    ("The user got a puppy on February 10th.", True),
    ("The user is looking forward to the yoga class on Tuesday.", True),  # which Tuesday
    ("The user is planning a trip to Tokyo in June 2023.", False),       # dates itself
    ("The user has always liked turtles.", False),                       # true whenever read
    ("The user goes hiking every now and then.", False),
    ("The user makes several servings at once, then eats them for a few days.", False),
    ("The user shops for groceries on Sundays.", False),                 # a habit
    ("The user's brother Alex was born on November 25th.", False),       # every year
    ("The user loves the ocean.", False),
])
def test_what_tells_time_from_the_day_it_was_said(text: str, from_said: bool) -> None:
    import datetime as dt

    from projections.when import from_said as reads_from_said

    assert reads_from_said(text, dt.date(2023, 5, 27)) is from_said


def test_a_memory_md_line_that_tells_time_from_its_day_carries_the_day() -> None:
    """"lately", "for the past two weeks", "in June" read a year on mean another time: the
    line says the day its words were said; a line that names its year, or says nothing of
    time, gets none."""
    from workers.consolidation.consolidate import bullet_of

    def line(text: str, subject: str = "") -> str:
        return bullet_of(mined_line(text, subject, type_="workflow", at="2023-05-23T10:00:00Z"),
                         frozenset({"user"}))

    assert line("The user has been waking up around 7:30 am every day for the past two "
                "weeks.") == ("The user has been waking up around 7:30 am every day for the"
                              " past two weeks (said 23 May 2023)")
    assert line("The user is planning a trip to New York City in June.") == \
        "The user is planning a trip to New York City in June (said 23 May 2023)"
    assert line("The user is planning a trip to Tokyo in June 2023.") == \
        "The user is planning a trip to Tokyo in June 2023."
    assert line("The user usually does a warm-up before playing.") == \
        "The user usually does a warm-up before playing."
    assert line("The user moved to Plymouth on 7 March 2023, the user lives in Plymouth now.",
                "user|home") == "The user moved to Plymouth on 7 March 2023, the user lives" \
                                " in Plymouth now."


def test_a_plan_of_any_type_is_gone_by_after_its_day() -> None:
    import datetime as dt

    from workers.consolidation.consolidate import section_for

    def mined(text: str, type_: str) -> Memory:
        return mined_line(text, type_=type_, at="2023-05-20T10:00:00Z")

    shop = mined("The user is planning to shop at Publix in the week of 22 May 2023.",
                 "project_fact")
    assert section_for(shop, today=dt.date(2023, 5, 25)) == "Projects"
    assert section_for(shop, today=dt.date(2023, 7, 1)) is None
    class_ = mined("The user is looking forward to trying the Vinyasa class on Tuesday.",
                   "user_preference")    # said on Saturday 20 May: Tuesday 23 May
    assert section_for(class_, today=dt.date(2023, 5, 29)) == "Plans"
    assert section_for(class_, today=dt.date(2023, 6, 1)) is None
    event = mined_line("The user is planning to attend the event together on October 15th.",
                       type_="project_fact", at="2023-11-04T10:00:00Z")
    assert section_for(event, today=dt.date(2023, 11, 5)) is None   # the October just past
    habit = mined("The user shops at Publix every Sunday since May 2023.", "workflow")
    assert section_for(habit, today=dt.date(2024, 7, 1)) == "Workflows"   # no plan


def test_any_line_of_a_day_to_come_goes_once_that_day_is_gone_by() -> None:
    """Not a plan's alone: a relationship's line of what was about to happen is no longer
    current a week past its day; a birthday comes back every year."""
    import datetime as dt

    from workers.consolidation.consolidate import section_for

    school = mined_line("Dana's daughter Mia is starting at the new school on Monday.",
                        at="2026-11-10T20:30:00Z")     # a Tuesday: Monday the 16th
    assert section_for(school, today=dt.date(2026, 11, 20)) == "People"
    assert section_for(school, today=dt.date(2026, 11, 24)) is None
    birthday = mined_line("Dana's mum's birthday is on 3 January.", at="2026-11-09T20:30:00Z")
    assert section_for(birthday, today=dt.date(2027, 2, 1)) == "People"


def test_a_passing_phase_leaves_memory_md_a_half_life_after_it_was_last_said() -> None:
    import dataclasses
    import datetime as dt

    from workers.consolidation.consolidate import section_for

    phase = mined_line("Nate is currently participating in the video game tournament again.",
                       "nate|sport", at="2022-03-24T13:49:00Z")
    assert section_for(phase, today=dt.date(2022, 6, 1)) == "Preferences"
    assert section_for(phase, today=dt.date(2022, 11, 11)) is None           # 232 days on
    assert section_for(phase, today=dt.date(2022, 11, 11), phase_days=365) == "Preferences"
    said_again = dataclasses.replace(phase, last_seen="2022-10-01T10:00:00Z")   # merged
    assert section_for(said_again, today=dt.date(2022, 11, 11)) == "Preferences"
    lasting = mined_line("Nate loves fantasy and sci-fi movies.", at="2022-03-24T13:49:00Z")
    assert section_for(lasting, today=dt.date(2022, 11, 11)) == "Preferences"
    job = mined_line("Nate is currently working as a game tester.", "nate|job",
                     at="2022-03-24T13:49:00Z")
    assert section_for(job, today=dt.date(2022, 11, 11)) == "Profile"   # held till replaced
    noted = mined_line("I am currently into salsa.", source="user", at="2022-03-24T13:49:00Z")
    assert section_for(noted, today=dt.date(2022, 11, 11)) == "Preferences"


def test_what_was_about_to_happen_leaves_memory_md_a_half_life_after_it_was_said() -> None:
    """In any section, when its first clause says it ("soon", "upcoming"); a later clause's
    "upcoming show" does not end the work the line is about."""
    import datetime as dt

    from workers.consolidation.consolidate import section_for

    move = mined_line("Maya is moving to Melbourne soon.", "maya|home", at="2023-05-27T10:00:00Z")
    assert section_for(move, today=dt.date(2023, 6, 30)) == "Profile"
    assert section_for(move, today=dt.date(2023, 11, 30)) is None          # 187 days on
    work = mined_line("Jon is working on Jon's business - rehearsing for an upcoming show.",
                      "jon|job", at="2023-02-04T10:00:00Z")
    assert section_for(work, today=dt.date(2023, 11, 30)) == "Profile"
    cooking = mined_line("Joanna loves coming up with something tasty.",
                         at="2023-02-04T10:00:00Z")
    assert section_for(cooking, today=dt.date(2023, 11, 30)) == "Preferences"


def test_a_passing_phase_leaves_memory_md_on_a_later_night(home: Home, tmp_path: Path) -> None:
    """By the log's own time; its journal keeps it."""
    def said(at: str, text: str, n: int) -> dict:
        return {"session": f"s{n}", "at": at, "role": "user", "name": "Ann", "text": text,
                "ref": f"s{n}:0"}

    first = night_over(home, tmp_path, [
        said("2023-03-03T10:00:00Z", "I love baking sourdough lately, it's so calming.", 1)])
    assert "Ann loves baking sourdough lately" in first
    still = night_over(home, tmp_path, [
        said("2023-05-05T10:00:00Z", "My sister Lena is visiting next week.", 2)])
    assert "Ann loves baking sourdough lately" in still                # 63 days on
    night_over(home, tmp_path, [said("2023-07-22T10:00:00Z", "I adopted a cat called Miso.", 3)])
    gone = (home.memory_dir / "MEMORY.md").read_text()
    assert "sourdough" not in gone
    assert "sourdough" in (home.memory_dir / "2023-03-03.md").read_text()


def test_a_passing_phase_lasts_as_long_as_the_configured_half_life(home: Home,
                                                                   tmp_path: Path) -> None:
    """``dreaming.half_life_days`` of the home's config, not the default, times it."""
    home.config_file.write_text("dreaming:\n  half_life_days: 365\n")

    def said(at: str, text: str, n: int) -> dict:
        return {"session": f"s{n}", "at": at, "role": "user", "name": "Ann", "text": text,
                "ref": f"s{n}:0"}

    night_over(home, tmp_path, [
        said("2023-03-03T10:00:00Z", "I love baking sourdough lately, it's so calming.", 1)])
    kept = night_over(home, tmp_path, [
        said("2023-07-22T10:00:00Z", "I adopted a cat called Miso.", 2)])   # 141 days on
    assert "Ann loves baking sourdough lately" in kept


def test_a_plan_leaves_memory_md_once_its_day_is_gone_by(home: Home, tmp_path: Path) -> None:
    """By the log's own time, on the next consolidation; a week's grace."""
    def said(at: str, text: str, n: int) -> dict:
        return {"session": f"s{n}", "at": at, "role": "user", "name": "Ann", "text": text,
                "ref": f"s{n}:0"}

    plan = "I'm going to a transgender conference in July 2023."
    first = night_over(home, tmp_path, [said("2023-07-03T10:00:00Z", plan, 1)])
    assert "conference in July 2023" in first                          # still ahead
    within_grace = night_over(home, tmp_path, [
        said("2023-08-05T10:00:00Z", "My sister Lena is visiting next week.", 2)])
    assert "conference in July 2023" in within_grace                   # 31 July + 7 days
    night_over(home, tmp_path, [said("2023-10-22T10:00:00Z", "I adopted a cat called Miso.", 3)])
    gone = (home.memory_dir / "MEMORY.md").read_text()
    assert "conference in July 2023" not in gone
    assert "July 2023" in "".join(p.read_text() for p in home.memory_dir.glob("2023-07-*.md"))


@pytest.mark.parametrize(("statement", "first"), [
    ("Tim loves traveling too. That picture is awesome.", "Tim loves traveling too."),
    ("John moved to St. Louis. It is big.", "John moved to St. Louis."),
    ("Dr. Lee is Ann's doctor.", "Dr. Lee is Ann's doctor."),
    ("John scored 3.5 points a game. Wow.", "John scored 3.5 points a game."),
    ("Nate won! \"Great\" he said.", "Nate won!"),
    ("Maya lives in Porto", "Maya lives in Porto"),
])
def test_a_statement_s_first_sentence(statement: str, first: str) -> None:
    from projections.readable import first_sentence

    assert first_sentence(statement) == first


@pytest.mark.parametrize(("sentence", "kept"), [
    ("Unfortunately, Joanna can't have dairy, so no ice cream for Joanna.",
     "Joanna can't have dairy."),
    ("As the user mentioned earlier, the user recently twisted the user's ankle playing "
     "basketball, and the user is interested in learning more about it.",
     "The user recently twisted the user's ankle playing basketball."),
    ("The user has a Honda Civic Si, and the user is looking to upgrade the suspension.",
     "The user has a Honda Civic Si."),
    ("The user leads a team of engineers, and the user needs some advice on planning.",
     "The user leads a team of engineers."),
    # a comment after a dash; not what the dash goes on to say of the person
    ("John loves discovering new cities - check out this pic from New York.",
     "John loves discovering new cities."),
    ("Melanie is a big fan of pottery - the creativity and skill is awesome.",
     "Melanie is a big fan of pottery."),
    ("Basketball matters to John - John practices every day.",
     "Basketball matters to John - John practices every day."),
    ("The user is into The Good Place - the user watches 2 episodes every day.",
     "The user is into The Good Place - the user watches 2 episodes every day."),
    ("Maria also enjoys aerial yoga, it's a great way to switch off.",
     "Maria also enjoys aerial yoga."),                 # a comment spliced on
    ("The user always carries the user's EpiPen, but it's still nerve-wracking.",
     "The user always carries the user's EpiPen."),     # … after "but" too
    ("Melanie has been running farther to de-stress, which has been great for her.",
     "Melanie has been running farther to de-stress."),
    ("The user got a new bike on 28 May 2023 and the user is excited to explore the city.",
     "The user got a new bike on 28 May 2023."),
    ("The user flosses every day, and it's been helping the user remember.",
     "The user flosses every day."),
    ("The user does forehand volley drills, where the user's partner hits a forehand.",
     "The user does forehand volley drills."),     # a relative clause after a comma
    ("Rachel, who teaches tennis, is the user's coach.",
     "Rachel, who teaches tennis, is the user's coach."),
    # a contrast may carry the fact; "as well as", a time opening, a short subject stay
    ("Jon loves all dances, but contemporary is Jon's top pick.",
     "Jon loves all dances, but contemporary is Jon's top pick."),
    ("Melanie is a fan of classical, as well as modern music.",
     "Melanie is a fan of classical, as well as modern music."),
    ("Last week, Nate won a tournament, which was great.", "Last week, Nate won a tournament."),
    ("Tom and the user would like to go.", "Tom and the user would like to go."),
    ("Additionally, the user meditates for 10 minutes every morning.",
     "The user meditates for 10 minutes every morning."),
    ("Speaking of running, the user runs at least 3 times a week.",
     "The user runs at least 3 times a week."),   # the topic a turn moved on from
    ("As for siblings, the user has a brother in Leeds.", "The user has a brother in Leeds."),
    ("As of 2023, the user lives in Leeds.", "As of 2023, the user lives in Leeds."),
    ("The user is planning a trip to Tokyo in June and was wondering what the weather is "
     "like.", "The user is planning a trip to Tokyo in June."),   # a question put to them
    ("Of course, Nate loves his turtles.", "Nate loves his turtles."),
    # an opening about the conversation itself; a realization is a fact
    ("Let the user start with the news: the user's sister just had a baby.",
     "The user's sister just had a baby."),
    ("The user just realized the user didn't mention that the user works as an analyst.",
     "The user works as an analyst."),
    ("Maya realized that Maya loves jazz.", "Maya realized that Maya loves jazz."),
    # a request to the listener, a precaution
    ("Dana's mum's birthday is on 3 January, remind Dana to get her a gift.",
     "Dana's mum's birthday is on 3 January."),
    ("Dana is allergic to penicillin, in case it ever matters.",
     "Dana is allergic to penicillin."),
    # chatter after an interjection
    ("The user is in the eastern US, and yeah, it's spring right now.",
     "The user is in the eastern US."),
    ("Gina has made a video on styling Gina's fashion pieces, btw.",
     "Gina has made a video on styling Gina's fashion pieces."),
    ("The user loves Oh Wonder, the band.", "The user loves Oh Wonder, the band."),
])
def test_a_line_keeps_its_sentence_s_main_clause(sentence: str, kept: str) -> None:
    """What follows a main clause — a consequence, a comment, the speaker's wish about it —
    and a discourse marker before it are no part of the fact MEMORY.md keeps."""
    from projections.readable import main_clause

    assert main_clause(sentence) == kept


@pytest.mark.parametrize(("line", "read"), [
    ("The user also loves Rick Rubin's approach to production.",
     "The user loves Rick Rubin's approach to production."),
    ("The user has actually been taking tennis lessons.",
     "The user has been taking tennis lessons."),
    ("The user already has a Zumba class on Mondays.", "The user has a Zumba class on Mondays."),
    ("Tim loves traveling too.", "Tim loves traveling."),
    ("Joanna is allergic to cockroaches as well.", "Joanna is allergic to cockroaches."),
    ("Nate loves coconut milk, but Nate also enjoys chocolate, too.",
     "Nate loves coconut milk, but Nate also enjoys chocolate."),
    ("The user loves jazz, but the user also enjoys opera.",
     "The user loves jazz, but the user also enjoys opera."),
    ("The user was busy, but the user actually went.", "The user was busy, but the user went."),
    ("Tim is busy, but Tim's sister also loves traveling.",
     "Tim is busy, but Tim's sister also loves traveling."),
    ("Tim also loves traveling, but Tim also hikes.", "Tim loves traveling, but Tim also hikes."),
    # at a clause's end too
    ("The user has been keeping track of their gas mileage too, and it is 32 mpg.",
     "The user has been keeping track of their gas mileage, and it is 32 mpg."),
    ("Joanna is allergic to cockroaches as well, so who knows.",
     "Joanna is allergic to cockroaches, so who knows."),
    ("Dana's partner Alex is vegan though.", "Dana's partner Alex is vegan."),
    ("The user does have a bike, though, and rides it.",
     "The user does have a bike, and rides it."),
    ("Maya ran even though it rained.", "Maya ran even though it rained."),
    # what does not lean on anything stays
    ("The user is too busy to cook.", "The user is too busy to cook."),
    ("Maya likes not only tea but also coffee.", "Maya likes not only tea but also coffee."),
    ("Maya likes tea as well as coffee.", "Maya likes tea as well as coffee."),
])
def test_a_line_leaves_out_the_words_that_lean_on_the_conversation(line: str,
                                                                   read: str) -> None:
    """A MEMORY.md line is read without the turns before it: "also", "too", "as well",
    "actually" and "already" point back to them."""
    from projections.readable import without_leaning

    assert without_leaning(line) == read


@pytest.mark.parametrize(("line", "read"), [
    ("The user has been tracking the user's food intake.",
     "The user has been tracking their food intake."),
    ("The user always carries the user's EpiPen with the user.",
     "The user always carries their EpiPen with them."),
    # someone of the user's: "their" would be theirs
    ("The user's sister loves the user's dog.", "The user's sister loves the user's dog."),
    # a name, as far as a word that may be someone else, within its first sentence
    ("Gina can expand Gina's clothing store and get closer to Gina's customers.",
     "Gina can expand their clothing store and get closer to their customers."),
    ("John is lucky: people are always there for John.",
     "John is lucky: people are always there for them."),
    ("Joanna shared Joanna's book in August with Joanna's writers group.",
     "Joanna shared their book in August with their writers group."),
    ('Jon is reading "The Lean Startup" for Jon\'s biz.',
     'Jon is reading "The Lean Startup" for their biz.'),
    ("Jon told Gina about Jon's plans.", "Jon told Gina about Jon's plans."),
    ("Caroline let them know they're not alone by sharing Caroline's story.",
     "Caroline let them know they're not alone by sharing Caroline's story."),
    ("Tim loves Tim's dog. Tim's cat hates it.", "Tim loves their dog. Tim's cat hates it."),
    ("Melanie's son loves Melanie's violin.", "Melanie's son loves Melanie's violin."),
    # after a short opening phrase that names no one else
    ("On 5 October 2022, Joanna tried Joanna's newest recipe.",
     "On 5 October 2022, Joanna tried their newest recipe."),
    ("In the user's music journal, the user tracks the user's listening habits.",
     "In the user's music journal, the user tracks their listening habits."),
    ("They've been there, Caroline moved from Caroline's home country.",
     "They've been there, Caroline moved from Caroline's home country."),
    ("After Maria left, John cleaned John's room.", "After Maria left, John cleaned John's room."),
    ("The user gets up before the user's partner and the user goes for a run before the user "
     "eats.", "The user gets up before their partner and the user goes for a run before the "
     "user eats."),                          # "before" may open a clause: "them eats"
    ("The user got a bike. The user's old one broke.",
     "The user got a bike. The user's old one broke."),   # a new sentence names them
])
def test_a_line_refers_back_to_its_person(line: str, read: str) -> None:
    from projections.readable import referring_back

    assert referring_back(line) == read


@pytest.mark.parametrize(("statement", "said"), [
    ("Big news: the user moved to Leeds.", "The user moved to Leeds."),
    ("Career change done: Aisha got the job at the museum.",
     "Aisha got the job at the museum."),
    ("Maya forgot to mention that Maya keeps the boat at Mylor.",
     "Maya keeps the boat at Mylor."),
    ("The user just realized the user didn't mention that the user works at XYZ Corp,\n"
     "where the user leads the user's team.",
     "The user works at XYZ Corp, where the user leads their team."),
    ("Speaking of boats, Maya sold Curlew.", "Maya sold Curlew."),
    ("Guess what Maya does now: pottery.", "Guess what Maya does now: pottery."),  # the value
    ("Maya realized that she loves jazz.", "Maya realized that she loves jazz."),  # a fact
])
def test_a_fact_is_said_without_its_headline_or_the_conversation(statement: str,
                                                                  said: str) -> None:
    from projections.readable import as_said

    assert as_said(statement) == said


@pytest.mark.parametrize(("statement", "kept"), [
    ("John loves climbing and games. It's an awesome way to connect and have a blast.",
     "John loves climbing and games."),
    ("Jon uses a whiteboard to stay on track. It keeps Jon motivated and focused.",
     "Jon uses a whiteboard to stay on track."),
    ("Nate is in the tournament again. There's so much adrenaline flowing. Nate won.",
     "Nate is in the tournament again."),
    # … or judges with no subject at all
    ("Tim recently started learning an instrument. Challenging but fun, always admired "
     "musicians.", "Tim recently started learning an instrument."),
    ("Tomasz moved the bridge to Rust. Feels good to be done with it.",
     "Tomasz moved the bridge to Rust."),
    # a later sentence that names something new, or judges nothing, may say the value
    ("Maria got a puppy. Her name's Coco and she's adorable.",
     "Maria got a puppy. Her name's Coco and she's adorable."),
    ("The user has a bike. It's a Trek and it's so fast.",
     "The user has a bike. It's a Trek and it's so fast."),
    ("Maya got a dog. It's a golden retriever.", "Maya got a dog. It's a golden retriever."),
])
def test_a_current_value_s_line_ends_before_a_sentence_that_only_comments(
        statement: str, kept: str) -> None:
    from workers.consolidation.consolidate import statement_of

    assert statement_of(mined_line(statement, "someone|hobby")) == kept


def test_a_current_value_s_line_has_no_discourse_marker_either() -> None:
    from workers.consolidation.consolidate import statement_of

    memory = mined_line("Speaking of pets, Ravi got a hamster. Everyone calls him Pudding now.",
                        "ravi|pet")
    assert statement_of(memory) == "Ravi got a hamster. Everyone calls him Pudding now."
    # a value's line keeps what a comma splices on: it may say the value
    assert statement_of(mined_line("The user has a hybrid bike, it's a Trek.", "user|bike")) \
        == "The user has a hybrid bike, it's a Trek."


def test_only_a_current_value_s_line_says_since_when() -> None:
    from workers.consolidation.consolidate import bullet_of, section_for

    value = mined_line("The user moved to Leeds.", "user|home")
    plan = mined_line("The user's partner and the user are planning to move in together.",
                      "user|home")
    names = frozenset({"the"})
    assert bullet_of(value, names) == "The user moved to Leeds (since 6 July 2023)"
    # no value: a relationship line, with nothing to date
    assert section_for(plan, names) == "People"
    assert bullet_of(plan, names) == "The user's partner and the user are planning to move" \
        " in together."


@pytest.mark.parametrize(("said", "subject", "day"), [
    ("Joanna is lactose intolerant.", "joanna|allergy", "said 9 July 2023"),
    ("Melanie has got a pup and a kitty.", "melanie|dog", "said 9 July 2023"),
    ("Jonas drives a red hatchback, it's noisy but reliable.", "jonas|car", "said 9 July 2023"),
    ("Joanna found out Joanna is allergic to cockroaches.", "joanna|allergy",
     "since 6 July 2023"),
    ("Ravi adopted a rabbit called Pepper from the shelter.", "ravi|rabbit",
     "since 6 July 2023"),
    ("The user switched to green tea.", "user|drink", "since 6 July 2023"),
    ("Tim is learning how to play the violin now.", "tim|hobby", "since 6 July 2023"),
])
def test_a_value_is_dated_since_only_when_it_began_then(said: str, subject: str,
                                                        day: str) -> None:
    """"Joanna is lactose intolerant (since 6 July 2023)" would read as the day it began;
    told in passing, a value had held who knows how long: it is dated by the day it was
    last said. A line that tells the change dates its beginning."""
    import dataclasses

    from workers.consolidation.consolidate import bullet_of

    memory = dataclasses.replace(mined_line(said, subject), last_seen="2023-07-09T00:00:00Z")
    names = frozenset({subject.partition("|")[0]})
    assert bullet_of(memory, names) == f"{said.rstrip('.')} ({day})"


def test_what_is_about_to_happen_says_when_it_was_said() -> None:
    """"Soon" holds from the day it was last said; "(since …)" would read as a move made."""
    import dataclasses

    from workers.consolidation.consolidate import bare, bullet_of

    move = mined_line("The user is moving to Melbourne soon.", "user|home",
                      at="2023-05-20T10:00:00Z")
    names = frozenset({"the"})
    assert bullet_of(move, names) == "The user is moving to Melbourne soon (said 20 May 2023)"
    again = dataclasses.replace(move, last_seen="2023-05-27T10:00:00Z")
    assert bullet_of(again, names) == "The user is moving to Melbourne soon (said 27 May 2023)"
    assert bare(bullet_of(again, names)) == "The user is moving to Melbourne soon"
    # a line that dates itself needs no day beside it; a later clause's "upcoming" is no news
    dated = mined_line("The user is moving to Melbourne in June 2023.", "user|home")
    assert bullet_of(dated, names) == "The user is moving to Melbourne in June 2023."
    work = mined_line("Jon started Jon's own business - rehearsing for an upcoming show.",
                      "jon|job")
    assert bullet_of(work, frozenset({"jon"})).endswith("(since 6 July 2023)")


def test_a_value_that_has_held_a_while_says_when_that_was_said() -> None:
    """"For over 10 years (since 23 May 2023)" would date the teaching's first day."""
    from workers.consolidation.consolidate import bullet_of

    names = frozenset({"the"})
    teaching = mined_line("The user has been teaching for over 10 years.", "user|job",
                          at="2023-05-23T10:00:00Z")
    assert bullet_of(teaching, names) == "The user has been teaching for over 10 years" \
        " (said 23 May 2023)"
    together = mined_line("The user and their partner have been together for a while.",
                          "user|partner", at="2023-05-24T10:00:00Z")
    assert bullet_of(together, names).endswith("for a while (said 24 May 2023)")
    # a routine is no value: it says no day at all; a later clause's years are not its own
    carries = mined_line("The user always carries their EpiPen.", type_="workflow")
    assert bullet_of(carries, names) == "The user always carries their EpiPen."
    moved = mined_line("The user moved to Leeds, where the user lived for two years as a kid.",
                       "user|home")
    assert bullet_of(moved, names).endswith("(since 6 July 2023)")


def test_a_current_value_keeps_the_clause_that_may_say_its_value() -> None:
    """The classifier heard the attribute somewhere in the sentence: a reason or a relative
    clause may be where it is ("because Maya is allergic to shellfish"); a wish is not."""
    from projections.readable import main_clause

    allergy = "Maya had to stick to chips, because Maya is allergic to shellfish."
    assert main_clause(allergy, value=True) == allergy
    assert main_clause(allergy) == "Maya had to stick to chips."
    assert main_clause("Maya has a dog, which Maya named Rex.", value=True) == \
        "Maya has a dog, which Maya named Rex."
    assert main_clause("Unfortunately, the user has a Honda Civic Si, and the user is looking "
                       "to upgrade it.", value=True) == "The user has a Honda Civic Si."
    assert main_clause("Joanna can't have dairy, so no ice cream for Joanna.", value=True) == \
        "Joanna can't have dairy."
    assert main_clause("The user is in the eastern US, and yeah, it's spring right now.",
                       value=True) == "The user is in the eastern US."


@pytest.mark.parametrize(("statement", "line"), [
    # where they live, then another statement of theirs: cut
    ("The user is currently living in the San Francisco Bay Area, and the user is flexible "
     "with their travel dates.", "The user is currently living in the San Francisco Bay Area."),
    ("The user is located in the northeastern United States, and their trip is planned for "
     "early May, which the user believes is spring migration season.",
     "The user is located in the northeastern United States."),
    ("Maya lives in Porto, and Maya works at the harbour.", "Maya lives in Porto."),
    # a word that may point back to the place: kept
    ("Maya lives in Porto, and Maya loves it there.",
     "Maya lives in Porto, and Maya loves it there."),
    # the place after the cut: kept whole
    ("Maya is finally settled, and Maya's new flat is in Porto.",
     "Maya is finally settled, and their new flat is in Porto."),
])
def test_where_a_person_lives_is_a_line_without_another_statement(statement: str,
                                                                   line: str) -> None:
    from workers.consolidation.consolidate import statement_of

    assert statement_of(mined_line(statement, "maya|home")) == line


def test_another_statement_is_cut_only_from_where_a_person_lives() -> None:
    """Another value may be said after ", and" ("…, and Maya is allergic to shellfish"):
    only a home's place is known to be before it (a name)."""
    from workers.consolidation.consolidate import statement_of

    allergy = "Maya skipped the shrimp, and Maya is allergic to shellfish."
    assert statement_of(mined_line(allergy, "maya|allergy")) == allergy


def test_a_line_another_says_all_of_stays_when_asked_to_keep() -> None:
    from workers.consolidation.consolidate import Section, _without_subsumed

    sections = {"Profile": Section("Profile", ["Maya is allergic to peanuts",
                                               "Maya is allergic to peanuts and shellfish"]),
                "Preferences": Section("Preferences", ["Maya loves peanuts"])}
    names = frozenset({"maya"})
    assert _without_subsumed(sections, names, set()) == {"Profile"}
    assert sections["Profile"].bullets == ["Maya is allergic to peanuts and shellfish"]
    sections["Profile"].bullets.insert(0, "Maya is allergic to peanuts")
    assert _without_subsumed(sections, names, {"maya is allergic to peanuts"}) == set()
    assert len(sections["Profile"].bullets) == 2


@pytest.mark.parametrize(("statement", "subject", "value"), [
    # a happening the classifier read a value into: it names no change, no state and not
    # what the attribute is
    ("The user accidentally bumped into Alex, a software engineer, on the escalator on 10 "
     "March 2023.", "the user|partner", False),
    ("John had to reach out to several businesses, but it paid off.", "john|employer", False),
    ("The user worked as a marketing specialist before quitting the job.", "the user|employer",
     False),
    # what was and is no more; not what the person has got used to
    ("The user used to live in San Francisco, so the user knows its coffee scene.",
     "the user|home", False),
    ("The user is still getting used to being a team lead.", "the user|job", True),
    # a curiosity is no holding; a value whose person is named only after ", so"
    ("The user is curious about the sour beers.", "the user|favourite drink", False),
    ("The moving date is set for April 3rd, so the user still has some time.",
     "the user|deadline", False),
    ("Ravi's thesis is due on April 3rd, so Ravi is busy.", "ravi|deadline", True),
    # a happening that sets the value, or goes on to it, or is of what it names
    ("The user got a new bike on 28 May 2023.", "the user|bike", True),
    ("Maria adopted a puppy around 28 July 2023.", "maria|dog", True),
    ("Joanna found out recently Joanna is allergic to cockroaches.", "joanna|allergy", True),
    ("The user celebrated 3 years at XYZ Corp, where the user works as an analyst.",
     "the user|job", True),
    ("Ravi gave the hamster a new name. Everyone calls him Pudding now.", "ravi|hamster",
     True),
    ("Sofia's allergy to cats flared up again.", "sofia|allergy", True),
    ("Elena's parrot, Otis, chewed through a slipper again.", "elena|bird", True),
])
def test_a_happening_sets_a_value_only_when_it_says_one(statement: str, subject: str,
                                                        value: bool) -> None:
    """A past or dated statement is a current value (MEMORY.md's profile, a conflict in the
    dream) when it says a change, goes on to a state or names what the attribute is: else
    it is one happening, which the journal keeps."""
    from workers.mining.values import states_a_value

    names = frozenset({"the", "john", "maria", "joanna", "ravi", "sofia", "elena"})
    assert states_a_value(mined_line(statement, subject), names) is value


@pytest.mark.parametrize(("statement", "subject", "value"), [
    # two people named together, a relative, a story's characters: no word of a partner
    ("Early in the story, the user establishes Lana as a character and create a bond "
     "between her and Alex.", "the user|partner", False),
    ("The user's brother's name is Alex, and he was born on November 25th.",
     "the user|partner", False),
    ("Joanna named her Tilly, and she's always with Joanna while Joanna writes.",
     "joanna|partner", False),
    # the word is someone else's
    ("The user's brother proposed to his girlfriend there on September 20th.",
     "the user|partner", False),
    ("The user's partner and the user both work in the city.", "the user|partner", True),
    ("The user is married, and the user's husband is a teacher.", "the user|partner", True),
    ("Joanna moved in with Dana.", "joanna|partner", True),
    ("The user and Sam have been together for five years.", "the user|partner", True),
])
def test_a_partner_value_says_it_is_a_partner(statement: str, subject: str,
                                              value: bool) -> None:
    """The classifier hears a partner wherever two people are named together; a partner
    value says a word of one (:attr:`Attribute.says`), as the person's own."""
    from workers.mining.values import states_a_value

    names = frozenset({"the", "joanna"})
    assert states_a_value(mined_line(statement, subject), names) is value


@pytest.mark.parametrize(("statement", "subject", "value"), [
    # an interest in a thing is no holding of it; of a taste it is the value
    ("The user is interested in the Thule Evo 2 Bike Carrier.", "the user|bike", False),
    ("Ravi is really interested in the new Pixel phone.", "ravi|phone", False),
    ("Ravi is particularly interested in jazz piano.", "ravi|hobby", True),
    ("The user has a Trek FX 3 hybrid bike.", "the user|bike", True),
    # learning about a thing neither ("… managing money" is no job); of a taste it is
    ("The user has been trying to learn more about managing money.", "the user|job", False),
    ("Ravi is learning about jazz piano.", "ravi|hobby", True),
])
def test_an_interest_in_a_thing_is_no_current_value_of_it(statement: str, subject: str,
                                                          value: bool) -> None:
    """Nor MEMORY.md's profile nor a conflict in the dream takes an interest in a thing
    ("… is interested in the Thule … Bike Carrier" is no bike) for a current value; of a
    taste it is one."""
    from workers.mining.values import states_a_value

    names = frozenset({"the", "ravi"})
    assert states_a_value(mined_line(statement, subject), names) is value


@pytest.mark.parametrize(("statement", "profile"), [
    ("Ravi adopted a parrot called Noodle.", True),
    ("Say hello to Hazel, the parrot Ravi adopted on Saturday.", True),  # a doer, not first
    ("Ravi's cat has been renamed Mochi.", True),                # the person's own thing
    ("Career change done: Ravi got hired as a tester.", True),   # after a headline
    ("Quick update: the user is going to move to Leeds.", False),  # an intention, after one
    ("The user moved to Leeds.", True),
    ("Pets have a way of brightening Joanna's days.", False),    # mentioned in passing
    ("Marrying Melanie's partner was the best part.", False),
    ("Turns out she had no other family - it broke Maria's heart.", False),
    ("Gonna continue Caroline's edu and check out career options.", False),
    ("The team has been really nice.", False),                  # "the" is no name
    ("Maria is off to bake some cakes.", False),                 # an intention, no state
    ("Ravi is going to move to Leeds.", False),
    ("The user is looking for a good moving company.", False),  # a need, no state
    ("The user would like to know the dates of the events.", False),
    ("The user is considering the swim membership.", False),
    ("As for dates, the user is looking for events in the next few weeks.", False),
    ("The user is definitely considering renting a campervan.", False),
    ("The user has been thinking of getting a new bed for the dog.", False),
    ("The user drives a 2018 Mustang GT.", True),
    ("Mike, who lives in Leeds, might have some cravings that the user can satisfy.", False),
    ("The user is excited to try out the lap swimming at the club.", False),  # a wish
    ("The user has been meaning to try out some new bike accessories.", False),
    # an intention after an opening that does not name the person is one all the same
    ("Back to refill options - the user will look into those brands.", False),
    ("Sophia and the user might want to take a stroll after coffee.", False),  # a guess
    ("The user's partner and the user are planning to move in together.", False),
    ("Speaking of pets, Maria has a new kitten.", True),
    # its person as the owner who opens it, as "Ravi's cat …" does; not in passing
    ("The user's car is a Toyota Corolla.", True),
    ("Pets have a way of brightening the user's days.", False),
    ("Ravi's fix was: store UTC and use fold for the hour.", False),  # no one after the colon
    # an adverb after "is" or "has" changes nothing
    ("The user is actually planning to do some hiking in the area.", False),
    ("The user has also been thinking about learning the jig.", False),
    # what would be, a problem of the moment, what was done before: no current value
    ("The user imagines Ravi would meet a group of survivors.", False),
    ("The user is having some issues with the user's phone's screen.", False),
    ("The user recently had an issue with the car's GPS on 3/22.", False),
    ("The user has worked with a driving instructor before.", False),
    ("The user has never used gochujang before, but the user likes spicy food.", True),
    ("The user has a new bike, and the user wonders if the rack would fit it.", True),
    ("The user has a new bike - the user would love a rack for it.", True),  # a dash too
    # the main clause after an opening subordinate one
    ("Since the user swims already, the user is hoping to focus on strength.", False),
])
def test_a_current_value_joins_the_profile_only_when_it_names_its_person(
        statement: str, profile: bool) -> None:
    """The classifier hears an attribute in a sentence that only mentions a person ("Pets
    have a way of brightening Joanna's days": a pet): such a line is no fact about them."""
    from workers.consolidation.consolidate import section_for

    names = frozenset({"ravi", "joanna", "melanie", "maria", "caroline", "the"})
    assert (section_for(mined_line(statement, "someone|job"), names) == "Profile") is profile


@pytest.mark.parametrize("line", [
    "The user has been really into documentaries lately (said 29 May 2023)",
    # as a model rewriting the section writes it back: the stale check and the restating
    # compare the line without its day, so a superseded memory's line still goes
    "The user has been really into documentaries lately (said 29 May 2023).",
    "The user has been really into documentaries lately (since 29 May 2023).",
])
def test_a_line_s_day_comes_off_with_or_without_a_full_stop_after_it(line: str) -> None:
    from workers.consolidation.consolidate import bare

    assert bare(line) == "The user has been really into documentaries lately"


@pytest.mark.parametrize(("statement", "section"), [
    # how often, or, in the perfect, for how long: a routine the person keeps up
    ("The user has been taking Japanese cooking classes since April.", "Workflows"),
    ("The user has dance classes every Saturday morning at the studio near their house.",
     "Workflows"),
    ("The user has been going to Zumba on Tuesdays and Thursdays.", "Workflows"),
    ("The user has been playing electric guitar for a while now.", "Workflows"),
    ("Maria volunteers at a local dog shelter once a month.", "Workflows"),
    ("The user has been meal prepping on Sundays for three weeks now.", "Workflows"),
    # a time's colon ends no clause: how often is still in the first one
    ("The user has been waking up at 6:30 am every day.", "Workflows"),
    # not what the activity is, before how often or how long
    ("Tim has been playing for about four months now and it's been an adventure.", None),
    ("The user has been going every Thursday evening at their local gym for two months.",
     None),
    # a wish, an intention, a feeling, a need: no routine
    ("The user has been meaning to try oat milk in a bechamel sauce for a while now.", None),
    ("The user is thinking of joining a running group that meets every Sunday morning.",
     None),
    ("The user will definitely try to set a daily step goal.", None),
    ("Nate is really grateful to have a job Nate enjoys every day.", None),
    # a trip's length, no perfect; an adjective "daily"
    ("The user is staying in Tokyo for a week.", None),
    ("The user has set a daily time limit on Facebook.", None),
    # a past event
    ("John was teammates with Kevin for four years in high school.", None),
])
def test_a_routine_kept_up_joins_workflows(statement: str, section: str | None) -> None:
    from workers.consolidation.consolidate import section_for

    assert section_for(mined_line(statement)) == section


def test_a_routine_s_line_ends_before_the_next_clause_and_fades_as_a_phase() -> None:
    """Its line stops where a clause with a subject of its own begins; unsaid for the
    half-life (by the log's time) it leaves MEMORY.md, as a taste's phase does."""
    import datetime as dt

    from workers.consolidation.consolidate import bullet_of, section_for

    yoga = mined_line("The user has been attending yoga classes twice a week for a month now,"
                      " and the user has noticed significant improvement in their flexibility.",
                      at="2023-05-27T10:00:00Z")
    assert bullet_of(yoga) == ("The user has been attending yoga classes twice a week for a"
                               " month now (said 27 May 2023)")
    assert section_for(yoga, today=dt.date(2023, 8, 1)) == "Workflows"
    assert section_for(yoga, today=dt.date(2023, 9, 1)) is None
    # a value keeps its later clause: it may be the one to say it
    dairy = mined_line("The user has been tracking their food intake for a while now, and the"
                       " user has noticed that dairy products make the user bloated.",
                       "user|allergy", at="2023-03-10T10:00:00Z")
    assert "dairy products make the user bloated" in bullet_of(dairy)
    # … but a taste's says itself first: a hobby kept up is cut as any routine
    pottery = mined_line("The user has been taking pottery classes on Saturdays for a while"
                         " now, and the user has been thinking about trying a wheel.",
                         "user|hobby", at="2023-05-23T10:00:00Z")
    assert bullet_of(pottery).startswith("The user has been taking pottery classes on"
                                         " Saturdays for a while now (")
    # a taste's current value kept on a schedule is a routine that does not fade: it holds
    # till a newer value replaces it
    chess = mined_line("Guess what Jonas does on weekends now: chess.", "jonas|hobby",
                       at="2024-04-11T10:00:00Z")
    names = frozenset({"jonas"})
    assert section_for(chess, names, today=dt.date(2024, 5, 1)) == "Workflows"
    assert section_for(chess, names, today=dt.date(2025, 5, 1)) == "Workflows"
    weekends = mined_line("Jonas plays chess on weekends now.", at="2024-04-11T10:00:00Z")
    assert section_for(weekends, names, today=dt.date(2024, 5, 1)) == "Workflows"
    assert section_for(weekends, names, today=dt.date(2025, 5, 1)) is None


def test_a_night_writes_a_routine_into_workflows(home: Home, tmp_path: Path) -> None:
    """Said in passing, in a request: the routine's first clause, dated, in Workflows."""
    memory_md = night_over(home, tmp_path, [{
        "session": "s1", "at": "2023-05-24T10:00:00Z", "role": "user", "name": "Ann",
        "text": "I've been taking Japanese cooking classes since April, and I'm eager to show"
                " off my new skills. Can you suggest a dessert for a dinner party?",
        "ref": "s1:0"}])
    workflows = memory_md.split("## Workflows\n", 1)[1].split("\n\n", 1)[0]
    assert workflows.splitlines() == [
        "- Ann has been taking Japanese cooking classes since April (said 24 May 2023)"], \
        memory_md


def test_a_routine_said_again_is_one_line_the_newer(home: Home, tmp_path: Path) -> None:
    """Two routines of one activity (an uncommon word of what is done in common) are one
    line, the one said last; another activity's stays beside it."""
    def said(n: int, text: str) -> dict:
        return {"session": f"s{n}", "at": f"2023-05-0{n}T10:00:00Z", "role": "user",
                "name": "Ann", "text": text, "ref": f"s{n}:0"}

    memory_md = night_over(home, tmp_path, [
        said(1, "I've been attending Zumba classes at the community center for three months."),
        said(2, "I've been taking piano lessons twice a week."),
        said(3, "I've been going to Zumba on Tuesdays and Thursdays.")])
    workflows = memory_md.split("## Workflows\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert workflows == ["- Ann has been going to Zumba on Tuesdays and Thursdays.",
                         "- Ann has been taking piano lessons twice a week."], memory_md


@pytest.mark.parametrize(("bullets", "line", "same"), [
    # no uncommon word, but all that one says is done is in what the other says
    (["Ann has been trying to get to bed earlier to wake up at a specific time on Fridays."],
     "Ann has been trying to get to bed earlier so Ann can wake up at 6:30 am on Fridays", 0),
    (["Ann has been going to Zumba on Tuesdays.", "Ann has been trying to get to bed earlier"
      " every night."], "Ann has been trying to get to bed earlier every weekend", 1),
    # each says something done the other does not
    (["Ann has been taking guitar lessons every week."],
     "Ann has been taking piano lessons every week", None),
    # another person's
    (["Bo has been trying to get to bed earlier every night."],
     "Ann has been trying to get to bed earlier every night", None),
])
def test_a_routine_said_again_is_found_by_what_is_done(bullets: list[str], line: str,
                                                        same: int | None) -> None:
    from workers.consolidation.consolidate import _same_routine

    assert _same_routine(bullets, line) == same


@pytest.mark.parametrize(("line", "words"), [
    ("Ann has been attending Zumba classes at the community center for three months.",
     {"zumba"}),
    ("Ann has been experimenting with meal prep on Sundays.", {"meal", "prep"}),
    ("Ann has been taking guitar lessons for the past three months.", {"guitar"}),
    ("Ann has been taking piano lessons twice a week.", {"piano"}),
])
def test_a_routine_is_of_the_uncommon_words_of_what_is_done(line: str, words: set[str]) -> None:
    from workers.consolidation.consolidate import routine_of

    assert routine_of(line) == words


def test_a_line_another_says_all_of_leaves_memory_md(embedding: Home, tmp_path: Path) -> None:
    """"Ann is lactose intolerant" once, then "Since Ann is lactose intolerant Ann is trying
    out dairy-free options …": the second says all the first does, and more; one line."""
    def said(n: int, text: str) -> dict:
        return {"session": f"s{n}", "at": f"2023-05-0{n}T10:00:00Z", "role": "user",
                "name": "Ann", "text": text, "ref": f"s{n}:0"}

    memory_md = night_over(embedding, tmp_path, [
        said(1, "I'm lactose intolerant, so no cheese for me."),
        said(2, "Since I'm lactose intolerant I'm trying out dairy-free options like oat "
                "milk instead.")])
    assert "lactose intolerant" in memory_md, memory_md
    assert [line for line in memory_md.splitlines() if "lactose" in line] == [
        "- Since Ann is lactose intolerant Ann is trying out dairy-free options like oat "
        "milk instead (since 2 May 2023)"], memory_md


@pytest.mark.parametrize(("line", "other", "said"), [
    ("Joanna is lactose intolerant", "Since Joanna is lactose intolerant Joanna is trying "
     "out dairy-free options instead (since 5 September 2022)", True),
    ("The user has been playing electric guitar for a while now (said 26 May 2023)",
     "The user has been enjoying playing solo electric guitar (said 26 May 2023)", True),
    # another person's
    ("Nate is lactose intolerant", "Since Joanna is lactose intolerant Joanna is trying "
     "out dairy-free options instead", False),
    # one negated: the other says the opposite
    ("Joanna doesn't like horror movies", "Joanna likes horror movies with friends", False),
    # the same words, no more: either may be the other's opposite ("dogs more than cats")
    ("Joanna loves dogs more than cats", "Joanna loves cats more than dogs", False),
    ("Joanna loves hiking", "Joanna loves hiking in the mountains with Nate", True),
    # a line of no one's
    ("Hiking is fun", "Hiking is fun in the mountains with Joanna", False),
])
def test_a_line_is_said_by_another_with_all_its_words_and_more(line: str, other: str,
                                                               said: bool) -> None:
    from workers.consolidation.consolidate import _said_by

    assert _said_by(line, other, frozenset({"joanna", "nate", "the"})) is said
