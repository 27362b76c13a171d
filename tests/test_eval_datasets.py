"""The eval loaders, on small fixtures written in the official formats (tests/fixtures/eval):
LoCoMo's locomo10.json, LongMemEval's JSON and the transcript + questions folder layout."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from events import EventLog
from events.transcript import import_file
from workers.eval.dataset import DatasetError, write_layout
from workers.eval.load import load_dataset

from .conftest import locomo_dev

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def test_locomo10_sessions_turns_and_times() -> None:
    data = load_dataset(FIXTURES / "locomo10_mini.json")
    assert data.format == "locomo10" and [c.id for c in data.conversations] == ["conv-1", "conv-2"]
    conv = data.conversations[0]
    # the empty session_3 is left out; turn i of a session is 30 s after turn i-1
    assert [(t["session"], t["at"], t["role"], t["name"], t["ref"]) for t in conv.turns] == [
        ("conv-1/s01", "2023-05-08T13:56:00Z", "user", "Ines", "conv-1:D1:1"),
        ("conv-1/s01", "2023-05-08T13:56:30Z", "assistant", "Tomas", "conv-1:D1:2"),
        ("conv-1/s01", "2023-05-08T13:57:00Z", "user", "Ines", "conv-1:D1:3"),
        ("conv-1/s02", "2023-06-12T10:05:00Z", "assistant", "Tomas", "conv-1:D2:1"),
        ("conv-1/s02", "2023-06-12T10:05:30Z", "user", "Ines", "conv-1:D2:2"),
    ]
    assert conv.turns[1]["text"] == ("Nice! I adopted a kitten called Pim. "
                                     "[a photo of a grey kitten on a sofa]")


def test_locomo10_questions_categories_and_evidence() -> None:
    data = load_dataset(FIXTURES / "locomo10_mini.json")
    questions = {q.id: q for _, q in data.questions}
    assert [q.category for q in questions.values()] == [
        "temporal", "single-hop", "multi-hop", "open-domain", "adversarial", "single-hop"]
    assert questions["conv-1:q0"].evidence == ("conv-1:D1:1",)
    # "D2:1; D2:2" is split; "D1:03" normalised; "D9:9" names no turn and is dropped
    assert questions["conv-1:q2"].evidence == ("conv-1:D2:1", "conv-1:D2:2")
    assert questions["conv-1:q3"].evidence == ("conv-1:D1:3",)
    assert data.notes == ("1 evidence ref(s) named no turn of their conversation and were dropped",)
    adversarial = questions["conv-1:q4"]
    assert adversarial.answer == "Pim" and not adversarial.answerable
    assert all(q.answerable for q in questions.values() if q.category != "adversarial")
    conv = data.conversations[0]
    assert conv.sessions_of(questions["conv-1:q2"]) == {"conv-1/s02"}


def test_longmemeval_haystacks_dates_and_has_answer() -> None:
    data = load_dataset(FIXTURES / "longmemeval_mini.json")
    assert data.format == "longmemeval"
    assert [c.id for c in data.conversations] == ["q-move", "q-count", "q-pet_abs"]
    move = data.conversations[0]
    question = move.questions[0]
    assert question.category == "knowledge-update" and question.answer == "Lisbon"
    assert question.at == "2023-06-10T09:15:00Z"
    # the haystack dates become the turns' times (sessions keep their own, unsorted, order);
    # the blank turn is left out
    assert [(t["session"], t["at"], t["role"], t["ref"]) for t in move.turns] == [
        ("q-move/sharegpt_a1", "2023-05-02T18:20:00Z", "user", "q-move/sharegpt_a1:0"),
        ("q-move/sharegpt_a1", "2023-05-02T18:20:30Z", "assistant", "q-move/sharegpt_a1:1"),
        ("q-move/answer_m1", "2023-05-01T08:00:00Z", "user", "q-move/answer_m1:0"),
        ("q-move/answer_m1", "2023-05-01T08:00:30Z", "assistant", "q-move/answer_m1:1"),
        ("q-move/answer_m2", "2023-06-01T21:05:00Z", "user", "q-move/answer_m2:0"),
        ("q-move/answer_m2", "2023-06-01T21:05:30Z", "assistant", "q-move/answer_m2:1"),
    ]
    assert question.evidence == ("q-move/answer_m1:0", "q-move/answer_m2:0")
    assert question.evidence_sessions == ("q-move/answer_m2",)
    assert move.sessions_of(question) == {"q-move/answer_m1", "q-move/answer_m2"}


def test_longmemeval_numbers_repeated_sessions_and_abstention() -> None:
    data = load_dataset(FIXTURES / "longmemeval_mini.json")
    count = data.conversations[1].questions[0]
    assert count.answer == "3"
    assert {t["session"] for t in data.conversations[1].turns} == {"q-count/answer_b1",
                                                                  "q-count/answer_b1#2"}
    assert count.evidence == ("q-count/answer_b1:0", "q-count/answer_b1#2:0")
    abstain = data.conversations[2].questions[0]
    assert not abstain.answerable and abstain.evidence == ()


def test_longmemeval_oracle_haystacks_are_the_evidence_sessions() -> None:
    """`_oracle`: each haystack holds only its answer sessions (non-ASCII text, indented)."""
    data = load_dataset(FIXTURES / "longmemeval_oracle_mini.json")
    trip, pref = data.conversations
    question = trip.questions[0]
    assert question.category == "temporal-reasoning" and question.answer == "12 days"
    assert question.evidence == ("o-trip/answer_z1:0", "o-trip/answer_p1:0")
    assert trip.sessions_of(question) == {t["session"] for t in trip.turns}
    first = trip.turns[0]["text"]
    assert first.startswith("Back from Zürich today") and "🌊" in first
    assert [t["at"] for t in pref.turns] == ["2023-09-28T19:10:00Z", "2023-09-28T19:10:30Z"]


def test_longmemeval_m_many_sessions_read_one_question_at_a_time() -> None:
    """`_m` (compact, ~500 sessions a question in the real file; 40 here): the turns are read
    again from each question's byte offset when used — with multi-byte text before them, so
    the offsets must count bytes, not characters."""
    data = load_dataset(FIXTURES / "longmemeval_m_mini.json")
    raw = json.loads((FIXTURES / "longmemeval_m_mini.json").read_text(encoding="utf-8"))
    assert [c.id for c in data.conversations] == ["m-job", "m-car"]
    for conv, item in zip(data.conversations, raw, strict=True):
        assert len(conv.turns) == 80 and len({t["session"] for t in conv.turns}) == 40
        assert [t["text"] for t in conv.turns] == [
            m["content"] for s in item["haystack_sessions"] for m in s]
        (question,) = conv.questions
        assert question.evidence == (f"{conv.id}/answer_{conv.id}:0",)
        assert conv.sessions_of(question) == {f"{conv.id}/answer_{conv.id}"}
        assert conv.session_of[f"{conv.id}/answer_{conv.id}:1"] == f"{conv.id}/answer_{conv.id}"
        assert f"{conv.id}/nope:0" not in conv.session_of
    assert "Škoda" in data.conversations[1].questions[0].answer


def _peak_loading(path: Path) -> tuple[int, Any]:
    import tracemalloc

    tracemalloc.start()
    try:
        data = load_dataset(path)
        return tracemalloc.get_traced_memory()[1], data
    finally:
        tracemalloc.stop()


def test_longmemeval_file_is_streamed_not_read_whole(tmp_path: Path) -> None:
    """Memory for a LongMemEval file does not grow with its number of questions: the loader
    keeps one question at a time (eight times the questions, less than twice the memory;
    reading the file whole would take eight times as much)."""
    filler = "I keep a diary of small things — café visits, walks, the weather. " * 12

    def write(n: int) -> Path:
        items = [{"question_id": f"q{i}", "question_type": "single-session-user",
                  "question": "Where did I walk?", "answer": "the park",
                  "question_date": "2023/05/30 (Tue) 23:42",
                  "haystack_session_ids": [f"s{j}" for j in range(60)],
                  "haystack_dates": ["2023/05/01 (Mon) 08:00"] * 60,
                  "haystack_sessions": [[{"role": "user", "content": f"{j}: {filler}",
                                          "has_answer": j == 3}] * 4 for j in range(60)],
                  "answer_session_ids": ["s3"]} for i in range(n)]
        path = tmp_path / f"longmemeval_{n}.json"
        path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
        return path

    small, large = write(4), write(32)
    peak_small, _ = _peak_loading(small)
    peak_large, data = _peak_loading(large)
    size = large.stat().st_size
    assert size > 6_000_000 and len(data.conversations) == 32
    assert peak_large < 2 * peak_small, \
        f"peak {peak_large:,} bytes for {size:,} bytes (4 questions: {peak_small:,})"
    assert data.conversations[29].turns[12]["text"].startswith("3: I keep a diary")
    assert data.conversations[29].questions[0].evidence == tuple(f"q29/s3:{k}" for k in range(4))


_ELEMENT = '{"question_id": "a", "question": "q", "haystack_sessions": [], "haystack_dates": []'


@pytest.mark.parametrize("text, message", [
    (f"[{_ELEMENT}", "not valid JSON"), (f"[{_ELEMENT}}} x", "expected ','")])
def test_longmemeval_broken_file_is_refused_clearly(tmp_path: Path, text: str,
                                                    message: str) -> None:
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_layout_folder_with_stale_refs() -> None:
    data = load_dataset(FIXTURES / "layout")
    assert data.format == "layout" and [c.id for c in data.conversations] == ["chat-a"]
    q1, q2, q3 = data.conversations[0].questions
    assert q1.evidence == ("a:3",) and q1.stale == ("a:1",) and q1.category == "changed-fact"
    assert q2.stale == () and q2.answerable
    assert q3.category == "adversarial" and not q3.answerable


@pytest.mark.parametrize("name", ["locomo10_mini.json", "longmemeval_mini.json",
                                  "longmemeval_oracle_mini.json", "longmemeval_m_mini.json",
                                  "layout"])
def test_every_loader_gives_importable_transcripts(name: str, tmp_path: Path) -> None:
    """Each conversation imports with `diarist import` (events.transcript) and every evidence
    ref is a turn of it; written out in the folder layout and read back, it is the same."""
    data = load_dataset(FIXTURES / name)
    for conv in data.conversations:
        path = tmp_path / f"{conv.id.replace('/', '_')}.jsonl"
        path.write_text("".join(conv.transcript_lines()), encoding="utf-8")
        with EventLog(tmp_path / f"{path.stem}.db") as log:
            result = import_file(log, path)
        assert result.turns == len(conv.turns)
        refs = {t["ref"] for t in conv.turns}
        for q in conv.questions:
            assert set(q.evidence) <= refs and set(q.stale) <= refs
    write_layout(data, tmp_path / "out")
    again = {c.id: c for c in load_dataset(tmp_path / "out").conversations}  # sorted by name
    assert [list(again[c.id].turns) for c in data.conversations] == \
        [list(c.turns) for c in data.conversations]
    assert [again[c.id].questions for c in data.conversations] == [
        c.questions for c in data.conversations]


def test_the_shared_locomo_folder_loads() -> None:
    data = load_dataset(locomo_dev())
    assert len(data.conversations) == 5
    answerable = [q for _, q in data.questions if q.answerable]
    assert len(answerable) == 760 and all(q.evidence for q in answerable)


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ('[{"x": 1}]', "neither LoCoMo's locomo10.json"),
    ('[{"question_id": "a", "question": "q", "haystack_sessions": [[]], "haystack_dates": []}]',
     "must be lists of the same length"),
    ('[{"question_id": "a", "question": "q", "haystack_sessions": [[]],'
     ' "haystack_dates": ["yesterday"]}]', "is not like '2023/05/30 \\(Tue\\) 23:42'"),
    ('[{"sample_id": "c", "conversation": {"speaker_a": "A", "session_1":'
     ' [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}], "session_1_date_time": "noon"},'
     ' "qa": []}]', "is not like '1:56 pm on 8 May, 2023'"),
])
def test_bad_files_are_clear_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "data.json"
    path.write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_bad_layout_questions_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "c.transcript.jsonl").write_text(
        (FIXTURES / "layout" / "chat-a.transcript.jsonl").read_text())
    lines = [{"id": "1", "query": "q", "answer": "a", "category": "x", "evidence": ["nope"]},
             {"id": "2", "query": "q", "answer": "a", "category": "x", "evidence": [],
              "colour": "red"},
             {"id": "3", "query": "q", "answer": "a", "category": "x", "evidence": [],
              "at": "2023-05-08 14:00"}]
    (tmp_path / "c.questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(DatasetError) as caught:
        load_dataset(tmp_path)
    assert str(caught.value).splitlines() == [
        f"{tmp_path}/c.questions.jsonl:1: ref 'nope' is not in the transcript",
        f"{tmp_path}/c.questions.jsonl:2: unknown field 'colour' (allowed: id, query, answer,"
        " category, evidence, stale, at, answerable, evidence_sessions)",
        f"{tmp_path}/c.questions.jsonl:3: field 'at' must be a time with an offset, such as"
        " 2023-05-08T14:00:00Z (got '2023-05-08 14:00')",
    ]
    (tmp_path / "c.questions.jsonl").unlink()
    with pytest.raises(DatasetError, match="missing"):
        load_dataset(tmp_path)
    with pytest.raises(DatasetError, match="no such file or folder"):
        load_dataset(tmp_path / "absent.json")
