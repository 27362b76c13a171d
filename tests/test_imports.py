"""Chat exports into the log: ChatGPT, Claude and Open WebUI (workers/imports/).

Each format from its small hand-written fixture (tests/fixtures/imports/, in the shapes the
services publish): sessions with their titles, turns with their own times and roles, only the
branch kept and only the words shown, stable refs (a second import appends nothing, a newer
export only what is new), a malformed export refused whole, the zip form, and the CLI.
"""
from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home, ImportFailed
from projections import open_store
from projections.mining import session_state
from workers.imports import read_export
from workers.transcripts import import_transcript

from .conftest import REPO, make_turns, run, write_transcript

FIXTURES = REPO / "tests" / "fixtures" / "imports"
FILES = {  # format: (the export, a newer export of the same account)
    "chatgpt": ("chatgpt/conversations.json", "chatgpt/conversations-newer.json"),
    "claude": ("claude/conversations.json", "claude/conversations-newer.json"),
    "openwebui": ("openwebui/chat-export.json", "openwebui/chat-export-newer.json"),
}
FORMATS = list(FILES)
LISBON = "chatgpt/6631f0a0-1b2c-4d5e-8f90-a1b2c3d4e5f6"
BREAD = "chatgpt/66a0b1c2-0000-4000-8000-0000000000b2"
PORTUGUESE = "claude/1f0e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
GARDEN = "claude/2a1b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"
WIFI = "openwebui/5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
RECIPES = "openwebui/6e5d4c3b-2a1f-4e0d-9c8b-7a6f5e4d3c2b"
# what each export holds, oldest conversation first: session → (title, [(ref, role)])
EXPECTED: dict[str, dict[str, tuple[str, list[tuple[str, str]]]]] = {
    "chatgpt": {
        LISBON: ("Trip to Lisbon", [("chatgpt:aaa-u1", "user"), ("chatgpt:aaa-a1", "assistant"),
                                    ("chatgpt:aaa-u2", "user"), ("chatgpt:aaa-a2", "assistant")]),
        BREAD: ("Sourdough starter", [("chatgpt:bbb-u1", "user"),
                                      ("chatgpt:bbb-a1", "assistant")]),
    },
    "claude": {
        PORTUGUESE: ("Learning Portuguese", [("claude:p-1", "user"), ("claude:p-2", "assistant"),
                                             ("claude:p-3", "user"), ("claude:p-5", "assistant")]),
        GARDEN: ("Balcony garden", [("claude:g-1", "user"), ("claude:g-2", "assistant"),
                                    ("claude:g-3b", "user"), ("claude:g-4b", "assistant")]),
    },
    "openwebui": {
        WIFI: ("Home network", [("openwebui:w-u1", "user"), ("openwebui:w-a1", "assistant"),
                                ("openwebui:w-u2", "user"), ("openwebui:w-a2", "assistant")]),
        RECIPES: ("Weeknight recipes", [("openwebui:r-u1", "user"),
                                        ("openwebui:r-a1", "assistant")]),
    },
}
# what must never reach the log: other branches, system prompts, reasoning, tool traffic
NEVER = ("ABANDONED", "SECRET", "TOOL", "SYSTEM PROMPT", "Be brief", "I live in Porto",
         "not supported on your current device", "<details", "search(")
ROLE_TYPES = {"UserTurn": "user", "AssistantTurn": "assistant"}


def fixture(fmt: str, newer: bool = False) -> Path:
    return FIXTURES / FILES[fmt][newer]


def turns_of(log: EventLog) -> list[tuple[str, str, str]]:
    """(session, ref, role) of every turn, in log order."""
    return [(e.stream, e.ref or "", ROLE_TYPES[e.type])
            for e in log.read(types=list(ROLE_TYPES))]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_conversation_becomes_a_titled_session_and_a_second_import_appends_nothing(
        home: Home, fmt: str) -> None:
    expected = EXPECTED[fmt]
    turns = sum(len(t) for _, t in expected.values())
    first = import_transcript(home, fixture(fmt))
    assert (first.format, first.turns, first.sessions) == (fmt, turns, len(expected))
    assert (first.appended, first.skipped) == (turns + 2 * len(expected), 0)
    with EventLog.reader(home) as log:
        count = log.count()
        assert turns_of(log) == [(s, ref, role) for s, (_, ts) in expected.items()
                                 for ref, role in ts]
        started = log.read(types=["SessionStarted"])
        assert [(e.stream, e.payload["title"], e.payload["backend"]) for e in started] == \
            [(s, title, "import") for s, (title, _) in expected.items()]
        ended = log.read(types=["SessionEnded"])
        assert [(e.stream, e.payload["turns"]) for e in ended] == \
            [(s, len(ts)) for s, (_, ts) in expected.items()]
        names = {(e.type, e.payload["name"]) for e in log.read(types=list(ROLE_TYPES))}
        assert names == {("UserTurn", "user"), ("AssistantTurn", "assistant")}
    again = import_transcript(home, fixture(fmt))
    assert (again.appended, again.skipped) == (0, count)
    with EventLog.reader(home) as log:
        assert log.count() == count


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_newer_export_appends_only_the_new_turns_and_conversations(
        home: Home, fmt: str) -> None:
    import_transcript(home, fixture(fmt))
    with EventLog.reader(home) as log:
        before, old = log.count(), turns_of(log)
    newer = import_transcript(home, fixture(fmt, newer=True))
    # two new turns of a continued conversation and its new end; a new conversation of two
    assert (newer.appended, newer.kept, newer.sessions) == (2 + 1 + 4, [], 3)
    with EventLog.reader(home) as log:
        assert log.count() == before + 7
        now = turns_of(log)
        assert now[:len(old)] == old and len(now) == len(old) + 4
        continued = now[len(old)][0]
        stream = log.read(stream=continued)
        # the continued session ends again, after its new turns, when its last turn was said
        assert [e.type for e in stream[-3:]] == ["UserTurn", "AssistantTurn", "SessionEnded"]
        assert stream[-1].occurred_at == stream[-2].occurred_at
        assert stream[-1].payload["turns"] == len(EXPECTED[fmt][continued][1]) + 2
        assert log.read(types=["SessionStarted"])[-1].payload["title"] in (
            "Bike chain", "Coffee grinder", "Watering plants")
        with open_store(home, log) as store:
            store.catch_up("mining")
            state = session_state(store.db, continued)
            assert state is not None and state.ended and state.ended_at == stream[-1].occurred_at
    for path in (fixture(fmt, newer=True), fixture(fmt)):  # nothing new in either any more
        assert import_transcript(home, path).appended == 0
    with EventLog.reader(home) as log:
        assert log.count() == before + 7


@pytest.mark.parametrize("fmt", FORMATS)
def test_abandoned_branches_and_system_tool_hidden_messages_stay_out(
        home: Home, fmt: str) -> None:
    result = import_transcript(home, fixture(fmt))
    with EventLog.reader(home) as log:
        texts = [e.payload["text"] for e in log.read(types=list(ROLE_TYPES))]
    assert texts and not [t for t in texts for word in NEVER if word in t]
    assert any("branch" in line for line in result.left_out)
    assert any("system" in line or "hidden" in line for line in result.left_out)


def test_what_is_left_out_is_counted(home: Home) -> None:
    assert import_transcript(home, fixture("chatgpt")).left_out == [
        "2 system or tool messages",
        "3 hidden messages (reasoning, code, tool calls, custom instructions)",
        "1 message with no text (an image or a file alone)",
        "2 messages on branches not kept (edited or regenerated)"]
    assert import_transcript(home, fixture("claude")).left_out == [
        "1 hidden message (reasoning, code, tool calls, custom instructions)",
        "2 messages on branches not kept (edited or regenerated)"]


def test_the_text_is_what_the_chat_showed(home: Home) -> None:
    for fmt in FORMATS:
        import_transcript(home, fixture(fmt))
    with EventLog.reader(home) as log:
        text = {e.ref: e.payload["text"] for e in log.read(types=list(ROLE_TYPES))}
    # a ChatGPT message with an image: its text part only; an answer without its citation
    assert text["chatgpt:aaa-u2"] == "A week. I'm vegetarian: what should I eat there?"
    assert text["chatgpt:aaa-a1"] == ("Lisbon in May is lovely: warm days, few crowds. How "
                                      "long will you stay?")
    # Claude: the text blocks (not the thinking), a text cut around citations run together,
    # and the `text` field when there is no content list
    assert text["claude:p-2"] == ("Start with pronunciation: European Portuguese swallows "
                                  "its vowels.")
    assert text["claude:p-5"] == "Try 'Practice Portuguese'. It is made in Lisbon."
    assert text["claude:p-3"] == "Obrigado! Any podcast?"  # not the "not supported" note
    # Open WebUI: the answer without its folded reasoning block
    assert text["openwebui:w-a1"] == ("Probably a neighbour's network on the same channel: "
                                      "switch to 5 GHz.")


def test_turns_keep_their_own_times_or_take_their_conversations(home: Home) -> None:
    for fmt in FORMATS:
        import_transcript(home, fixture(fmt))
    with EventLog.reader(home) as log:
        at = {e.ref: e.occurred_at for e in log.read(types=list(ROLE_TYPES))}
        started = {e.stream: e.occurred_at for e in log.read(types=["SessionStarted"])}
    assert at["chatgpt:aaa-u1"] == "2024-05-01T10:01:00.250000Z"     # create_time 1714557660.25
    assert at["chatgpt:aaa-a2"] == "2024-05-01T10:00:00.000000Z"     # none: the conversation's
    assert at["claude:p-1"] == "2024-04-02T08:00:05.123456Z"
    assert at["claude:p-3"] == "2024-04-02T08:00:00.000000Z"         # none: the conversation's
    assert at["openwebui:w-u1"] == "2024-07-03T09:46:50.000000Z"     # timestamp 1720000010
    assert at["openwebui:r-a1"] == "2024-07-26T13:20:00.000000Z"     # none: the chat's
    assert started[LISBON] == at["chatgpt:aaa-u1"]                    # its first turn's


def _no_mapping(data: list[dict]) -> None:
    del data[1]["mapping"]


def _lost_current_node(data: list[dict]) -> None:
    data[0]["current_node"] = "nope"


def _loop(data: list[dict]) -> None:
    data[0]["mapping"]["root-b"]["parent"] = "bbb-a1"


def _no_role(data: list[dict]) -> None:
    del data[0]["mapping"]["bbb-u1"]["message"]["author"]


def _no_chat_messages(data: list[dict]) -> None:
    del data[1]["chat_messages"]


def _bad_claude_time(data: list[dict]) -> None:
    data[0]["chat_messages"][1]["created_at"] = "yesterday"


def _no_messages(data: list[dict]) -> None:
    del data[0]["chat"]["history"], data[0]["chat"]["messages"]


def _lost_current_id(data: list[dict]) -> None:
    data[0]["chat"]["history"]["currentId"] = "gone"
    del data[0]["chat"]["messages"]


def _bad_timestamp(data: list[dict]) -> None:
    data[1]["chat"]["messages"][0]["timestamp"] = "noon"


@pytest.mark.parametrize("fmt, damage, message", [
    ("chatgpt", _no_mapping,
     "looks like a ChatGPT export but conversation 2 ('Trip to Lisbon') has no 'mapping' "
     "(its messages)"),
    ("chatgpt", _lost_current_node,
     "looks like a ChatGPT export but conversation 1 ('Sourdough starter') has a "
     "'current_node' 'nope' that is not in its 'mapping'"),
    ("chatgpt", _loop,
     "looks like a ChatGPT export but conversation 1 ('Sourdough starter') has messages whose "
     "'parent' links loop (at 'bbb-a1')"),
    ("chatgpt", _no_role,
     "looks like a ChatGPT export but conversation 1 ('Sourdough starter'), message 'bbb-u1' "
     "has no 'author.role'"),
    ("claude", _no_chat_messages,
     "looks like a Claude export but conversation 2 ('Balcony garden') has no "
     "'chat_messages' (its messages)"),
    ("claude", _bad_claude_time,
     "looks like a Claude export but conversation 1 ('Learning Portuguese'), message 'p-2' "
     "has a 'created_at' that is not an ISO-8601 time with an offset ('yesterday')"),
    ("openwebui", _no_messages,
     "looks like an Open WebUI export but conversation 1 ('Home network') has neither "
     "'chat.history' nor 'chat.messages' (its messages)"),
    ("openwebui", _lost_current_id,
     "looks like an Open WebUI export but conversation 1 ('Home network') has a "
     "'chat.history.currentId' ('gone') that is not one of its messages, and no "
     "'chat.messages'"),
    ("openwebui", _bad_timestamp,
     "looks like an Open WebUI export but conversation 2 ('Weeknight recipes'), message "
     "'r-u1' has a 'timestamp' that is not a number of seconds ('noon')"),
], ids=["chatgpt-no-mapping", "chatgpt-lost-current-node", "chatgpt-loop", "chatgpt-no-role",
        "claude-no-chat-messages", "claude-bad-time", "openwebui-no-messages",
        "openwebui-lost-current-id", "openwebui-bad-timestamp"])
def test_a_malformed_export_is_refused_whole_naming_its_format(
        home: Home, tmp_path: Path, fmt: str, damage: Any, message: str) -> None:
    import_transcript(home, fixture(fmt))
    with EventLog.reader(home) as log:
        before = log.count()
    data = json.loads(fixture(fmt, newer=True).read_text(encoding="utf-8"))
    if fmt == "chatgpt" and damage is not _no_mapping:
        data = [data[2], data[1], data[0]]  # the sourdough first, as the messages name it
    if fmt == "openwebui":
        data = [data[1], data[2], data[0]]  # the home network first
    damage(data)
    path = write_json(tmp_path / "export.json", data)
    with pytest.raises(ImportFailed) as info:
        import_transcript(home, path)
    assert str(info.value) == f"{path}: {message}"
    assert "Export" in info.value.hint and "nothing was imported" in info.value.hint
    with EventLog.reader(home) as log:  # not even the newer export's good conversations
        assert log.count() == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_export_cut_short_is_named_as_that_export(home: Home, tmp_path: Path,
                                                      fmt: str) -> None:
    raw = fixture(fmt).read_bytes()
    path = tmp_path / "cut.json"
    path.write_bytes(raw[:len(raw) // 2])
    label = {"chatgpt": "a ChatGPT", "claude": "a Claude", "openwebui": "an Open WebUI"}[fmt]
    with pytest.raises(ImportFailed, match=rf"cut\.json: looks like {label} export but is not "
                                           r"valid JSON \(") as info:
        import_transcript(home, path)
    assert "cut short" in info.value.hint
    with EventLog.reader(home) as log:
        assert log.count() == 0


def test_every_problem_is_reported_at_once(home: Home, tmp_path: Path) -> None:
    data = json.loads(fixture("chatgpt").read_text(encoding="utf-8"))
    data.append("not a conversation")
    del data[0]["mapping"], data[1]["current_node"]
    path = write_json(tmp_path / "conversations.json", data)
    with pytest.raises(ImportFailed) as info:
        read_export(path)
    assert str(info.value).splitlines() == [
        f"{path}: looks like a ChatGPT export but conversation 1 ('Sourdough starter') has no "
        "'mapping' (its messages)",
        f"{path}: looks like a ChatGPT export but conversation 2 ('Trip to Lisbon') has no "
        "'current_node' (the message it ended on)",
        f"{path}: looks like a ChatGPT export but conversation 3 is not a JSON object"]


def test_an_export_without_any_text_is_refused(home: Home, tmp_path: Path) -> None:
    data = json.loads(fixture("claude").read_text(encoding="utf-8"))
    for conversation in data:
        conversation["chat_messages"] = []
    with pytest.raises(ImportFailed, match="a Claude export with 2 conversations but no user or "
                                           "assistant message with text"):
        import_transcript(home, write_json(tmp_path / "c.json", data))


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_the_zip_of_an_export(home: Home, tmp_path: Path, fmt: str) -> None:
    path = _zip(tmp_path / f"{fmt}-export.zip", {
        "user.json": b'{"id": "user-1"}', "chat.html": b"<html></html>",
        "message_feedback.json": b"[]", "dalle-generations/file-x.webp": b"RIFF",
        "conversations.json": fixture(fmt).read_bytes()})
    result = import_transcript(home, path)
    assert (result.format, result.appended) == (fmt, 10 if fmt == "chatgpt" else 12)
    assert import_transcript(home, fixture(fmt)).appended == 0  # the same conversations
    with EventLog.reader(home) as log:
        assert [t[1] for t in turns_of(log)] == [
            ref for _, ts in EXPECTED[fmt].values() for ref, _ in ts]


def test_a_zip_it_cannot_use_is_refused_clearly(home: Home, tmp_path: Path) -> None:
    other = _zip(tmp_path / "photos.zip", {"a.jpg": b"\xff\xd8"})
    with pytest.raises(ImportFailed, match="photos.zip: a zip file without conversations.json"):
        import_transcript(home, other)
    whole = _zip(tmp_path / "whole.zip", {"conversations.json": fixture("chatgpt").read_bytes()})
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole.read_bytes()[:200])
    with pytest.raises(ImportFailed, match="cut.zip: not a zip file diarist can read") as info:
        import_transcript(home, cut)
    assert "cut short" in info.value.hint
    notes = _zip(tmp_path / "notes.zip", {"conversations.json": b'[{"title": "x"}]'})
    with pytest.raises(ImportFailed, match=r"notes.zip:conversations.json: not a ChatGPT or "
                                           "Claude export"):
        import_transcript(home, notes)
    with EventLog.reader(home) as log:
        assert log.count() == 0


def test_the_format_is_told_by_content_not_by_name(home: Home, tmp_path: Path) -> None:
    disguised = tmp_path / "backup.jsonl"
    disguised.write_bytes(fixture("chatgpt").read_bytes())
    assert read_export(disguised).format == "chatgpt"
    transcript = write_transcript(tmp_path / "conversations.json", make_turns(3))
    assert read_export(transcript).format == "transcript"
    one_chat = json.loads(fixture("openwebui").read_text(encoding="utf-8"))[0]
    single = write_json(tmp_path / "chat.json", one_chat)  # one chat, not a list of one
    export = read_export(single)
    assert (export.format, list(export.titles.values())) == ("openwebui", ["Home network"])
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps([one_chat], indent=4), encoding="utf-8")
    assert read_export(pretty).format == "openwebui"


def test_an_open_webui_message_edited_in_place_is_kept_as_first_imported(
        home: Home, tmp_path: Path) -> None:
    import_transcript(home, fixture("openwebui"))
    data = json.loads(fixture("openwebui", newer=True).read_text(encoding="utf-8"))
    wifi = next(chat for chat in data if chat["title"] == "Home network")
    wifi["chat"]["history"]["messages"]["w-u2"]["content"] = "Switched! How do I see it?"
    result = import_transcript(home, write_json(tmp_path / "edited.json", data))
    assert result.appended == 7  # what is new is appended all the same
    assert len(result.kept) == 1 and "ref 'openwebui:w-u2' is already in the log" in \
        result.kept[0] and "its text differs" in result.kept[0]
    assert "conversation 2 ('Home network'), message 'w-u2'" in result.kept[0]
    with EventLog.reader(home) as log:
        assert log.get("openwebui:w-u2").payload["text"] == \
            "Switched. How do I check the channel?"


def test_a_copied_chat_keeps_each_message_once(home: Home, tmp_path: Path) -> None:
    """Open WebUI's "Clone" copies a chat with its message ids: the copy's own messages
    are imported, the ones it repeats stay in the chat they were first said in."""
    data = json.loads(fixture("openwebui").read_text(encoding="utf-8"))
    clone = copy.deepcopy(data[0])
    clone.update(id="clone-1", title="Clone of Home network", created_at=data[0]["created_at"] + 5)
    history = clone["chat"]["history"]
    history["messages"]["w-a2"]["childrenIds"] = ["k-u1"]
    history["messages"]["k-u1"] = {"id": "k-u1", "parentId": "w-a2", "childrenIds": [],
                                   "role": "user", "content": "And on 2.4 GHz?",
                                   "timestamp": data[0]["created_at"] + 500}
    history["currentId"] = "k-u1"
    result = import_transcript(home, write_json(tmp_path / "both.json", data + [clone]))
    assert result.left_out[-1] == "4 messages already in an earlier conversation (a copied chat)"
    with EventLog.reader(home) as log:
        assert [ref for s, ref, _ in turns_of(log) if s == "openwebui/clone-1"] == \
            ["openwebui:k-u1"]
    # the clone exported later, on its own: its repeats are only counted
    import_transcript(home, fixture("openwebui"))
    later = import_transcript(home, write_json(tmp_path / "clone.json", [clone]))
    assert later.appended == 0 and later.kept == []


def test_a_continued_transcript_session_ends_again_after_its_new_turns(
        home: Home, tmp_path: Path) -> None:
    turns = make_turns(5)
    import_transcript(home, write_transcript(tmp_path / "a.jsonl", turns[:3]))
    more = import_transcript(home, write_transcript(tmp_path / "b.jsonl", turns))
    assert (more.appended, more.skipped) == (3, 4)  # two turns and an end; start + 3 turns
    only_new = import_transcript(home, write_transcript(tmp_path / "c.jsonl", turns[4:]))
    assert (only_new.appended, only_new.skipped) == (0, 3)
    with EventLog.reader(home) as log:
        assert [e.type for e in log.read()] == [
            "SessionStarted", "UserTurn", "AssistantTurn", "UserTurn", "SessionEnded",
            "AssistantTurn", "UserTurn", "SessionEnded"]
        assert log.read()[-1].payload == {"session": "s1", "turns": 5}
        assert log.read()[0].payload["title"] == ""


def test_the_cli_names_the_format_and_what_was_left_out(home: Home) -> None:
    done = run("import", str(fixture("chatgpt")))
    assert (f"Imported {fixture('chatgpt')} (ChatGPT export): 6 turns in 2 sessions; 10 events "
            "appended, 0 already in the log.") in done.output
    assert "Left out: 2 system or tool messages; 3 hidden messages" in done.output
    bad = CliRunner().invoke(cli, ["import", "-"], input=b'[{"mapping": {}}]')
    assert bad.exit_code != 0
    assert "<stdin>: looks like a ChatGPT export but conversation 1 has no 'id'" in bad.output
    piped = CliRunner().invoke(cli, ["import", "-"], input=fixture("openwebui").read_bytes())
    assert piped.exit_code == 0, piped.output
    assert ("Imported standard input (Open WebUI export): 6 turns in 2 sessions; 10 events "
            "appended") in piped.output
    zipped = _zip(home.root.parent / "export.zip",
                  {"conversations.json": fixture("claude").read_bytes()})
    piped = CliRunner().invoke(cli, ["import", "-"], input=zipped.read_bytes())
    assert piped.exit_code == 0, piped.output
    assert "(Claude export): 8 turns in 2 sessions; 12 events appended" in piped.output
    with EventLog.reader(home) as log:
        assert log.count() == 32
