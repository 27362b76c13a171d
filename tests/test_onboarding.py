"""Onboarding: project facts detected from the project's files, the profile questions, and
`/memory profile` in the chat."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import EventLog, Home
from projections import open_store
from projections.memories import list_memories
from projections.recall import recall
from workers.chat.onboarding import (
    clean_remote,
    detect_project_facts,
    needs_onboarding,
    onboarding_declined,
    record_declined,
    record_profile,
    record_project_facts,
)

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def write_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "beekeeper"\ndescription = "Hive logs"\nrequires-python = ">=3.11"\n'
        'dependencies = ["click>=8", "httpx[http2]; python_version>\'3.10\'"]\n'
        '[project.scripts]\nbees = "beekeeper.cli:main"\n')
    (root / "package.json").write_text(json.dumps({
        "name": "hive-ui", "description": "The web side", "scripts": {"build": "vite build"},
        "dependencies": {"react": "^18"}, "engines": {"node": ">=18"}}))
    (root / "go.mod").write_text("module example.com/hive\n\ngo 1.22\n\nrequire (\n"
                                 "\tgithub.com/spf13/cobra v1.8.0 // indirect\n)\n")
    (root / "codemeta.json").write_text(json.dumps({
        "name": "Beekeeper", "programmingLanguage": ["Python", {"name": "Go"}],
        "license": "https://spdx.org/licenses/MIT"}))
    git = root / ".git"
    git.mkdir()
    (git / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n'
        f'\turl = https://ann:{TOKEN}@github.com/ann/beekeeper.git\n'
        '\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch "main"]\n\tremote = origin\n')
    return root


def facts_by_key(facts: list[dict]) -> dict[str, str]:
    return {f["key"]: f["value"] for f in facts}


def test_detects_every_file_type_without_credentials(tmp_path: Path) -> None:
    facts = detect_project_facts(write_project(tmp_path))
    values = facts_by_key(facts)
    assert values["python.name"] == "beekeeper" and values["python.requires_python"] == ">=3.11"
    assert values["python.dependencies"] == "click, httpx" and values["python.scripts"] == "bees"
    assert values["node.name"] == "hive-ui" and values["node.scripts"] == "build"
    assert values["node.dependencies"] == "react" and values["node.engines"] == "node >=18"
    assert values["go.module"] == "example.com/hive" and values["go.version"] == "1.22"
    assert values["go.requires"] == "github.com/spf13/cobra"
    assert values["codemeta.programming_language"] == "Python, Go"
    assert values["git.origin"] == "https://github.com/ann/beekeeper.git"
    assert values["git.default_branch"] == "main"
    assert TOKEN not in json.dumps(facts) and "ann:" not in json.dumps(facts)
    assert {f["sources"][0] for f in facts} == {"pyproject.toml", "package.json", "go.mod",
                                                "codemeta.json", ".git/config"}
    assert facts == detect_project_facts(tmp_path)  # deterministic


def test_poetry_fallback_and_remote_cleaning(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.poetry]\nname = "old"\ndescription = "d"\n'
        '[tool.poetry.dependencies]\npython = "^3.9"\nrequests = "*"\n')
    values = facts_by_key(detect_project_facts(tmp_path))
    assert values == {"python.name": "old", "python.description": "d",
                      "python.requires_python": "^3.9", "python.dependencies": "requests"}
    assert clean_remote("git@github.com:a/b.git") == "git@github.com:a/b.git"
    assert clean_remote("ssh://git:pw@host/x") == "ssh://host/x"
    assert clean_remote("https://x.org/r?access_token=abc#f") == "https://x.org/r"


def test_malformed_files_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\nname = ")
    (tmp_path / "package.json").write_text("{not json")
    (tmp_path / "codemeta.json").write_text("[1, 2]")
    (tmp_path / "go.mod").write_bytes(b"\xff\xfe module")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text('[remote "origin"]\n\turl = git@h:a/b.git\n')
    warnings: list[str] = []
    facts = detect_project_facts(tmp_path, warnings)
    assert facts == [{"key": "git.origin", "value": "git@h:a/b.git", "sources": [".git/config"]}]
    assert [w.split(":")[0] for w in warnings] == ["pyproject.toml", "package.json", "go.mod",
                                                    "codemeta.json"]
    assert detect_project_facts(tmp_path / "missing") == []


def test_record_project_facts_is_idempotent_and_becomes_memory(home: Home, log: EventLog,
                                                               tmp_path: Path) -> None:
    root = write_project(tmp_path / "proj")
    assert record_project_facts(log, root) is not None
    assert record_project_facts(log, root) is None
    assert len(log.read(types=["ProjectFactsDetected"])) == 1
    assert TOKEN not in json.dumps([e.payload for e in log.read()])

    (root / "go.mod").write_text("module example.com/hive\n\ngo 1.23\n")
    changed = record_project_facts(log, root)
    assert changed is not None and len(log.read(types=["ProjectFactsDetected"])) == 2
    (root / "go.mod").write_text("module example.com/hive\n\ngo 1.22\n\nrequire (\n"
                                 "\tgithub.com/spf13/cobra v1.8.0 // indirect\n)\n")
    assert record_project_facts(log, root) is not None  # A → B → A is recorded again

    with open_store(home, log) as store:
        store.catch_up_all()
        memories = {m.id: m.content for m in list_memories(store.db, "project_fact")}
        assert memories["project:go.version"] == "go.version: 1.22"
        assert memories["project:python.name"] == "python.name: beekeeper"
        head = recall(store.db, "anything at all", budget=0)
        assert any(i.source == "project_fact" and "beekeeper" in i.content for i in head.items)


def test_profile_and_needs_onboarding(home: Home, log: EventLog) -> None:
    with open_store(home, log) as store:
        store.catch_up_all()
        assert needs_onboarding(store)
        assert record_profile(log, {"name": "  ", "role": ""}) is None
        event = record_profile(log, {"name": "Ann", "role": " ", "tools": "Python,  Go"})
        assert (event is not None
                and event.payload["fields"] == {"name": "Ann", "tools": "Python, Go"})
        store.catch_up_all()
        assert not needs_onboarding(store)
        head = recall(store.db, "bees", budget=0)
        assert [i.content for i in head.items if i.source == "workspace_profile"] == \
            ["name: Ann", "tools: Python, Go"]


def test_chat_onboarding_and_memory_profile(home: Home, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    write_project(tmp_path)
    monkeypatch.chdir(tmp_path)  # home is tmp_path/home: this directory is its project
    keys = "Ann\n\nPython and Go\n\n/memory profile\n/memory profile set editor vim\n" \
           "/memory profile\n/exit\n"
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--onboard"], input=keys,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "What should I call you?" in out and "Anything else I should always remember?" in out
    assert "name: Ann" in out and "tools: Python and Go" in out and "editor: vim" in out
    with EventLog(home.events_db) as log:
        profiles = [e.payload["fields"] for e in log.read(types=["ProfileSet"])]
        detected = log.read(types=["ProjectFactsDetected"])
        everything = json.dumps([e.payload for e in log.read()])
    assert profiles == [{"name": "Ann", "tools": "Python and Go"}, {"editor": "vim"}]
    assert len(detected) == 1 and TOKEN not in everything

    again = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--onboard"],
                               input="/memory profile\n/exit\n", catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "What should I call you?" not in again.output and "editor: vim" in again.output
    with EventLog(home.events_db) as log:
        assert len(log.read(types=["ProfileSet"])) == 2
        assert len(log.read(types=["ProjectFactsDetected"])) == 1  # nothing changed
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output


def test_chat_outside_the_workspace_project_detects_nothing(home: Home) -> None:
    """The home (tmp) is not inside the current directory (the repo): no facts recorded."""
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted"], input="/exit\n",
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    with EventLog(home.events_db) as log:
        assert log.read(types=["ProjectFactsDetected", "ProfileSet"]) == []


# --- a declined onboarding sticks ---------------------------------------------------------------


def test_declining_is_recorded_and_read_back(home: Home, log: EventLog) -> None:
    assert not onboarding_declined(log)
    event = record_declined(log)
    assert event.type == "OnboardingDeclined" and event.stream == "profile"
    assert event.payload["questions"] == ["name", "role", "tools", "notes"]
    assert onboarding_declined(log)
    with open_store(home, log) as store:
        store.catch_up_all()
        assert needs_onboarding(store)  # still no profile: the decline is not a memory
        assert list_memories(store.db) == []


def test_skipping_every_question_appends_a_decline(home: Home) -> None:
    result = CliRunner().invoke(cli, ["chat", "--backend", "scripted", "--onboard"],
                                input="\n\n\n\n/exit\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "I will not ask again" in result.output
    with EventLog(home.events_db) as log:
        assert [e.type for e in log.read(stream="profile")] == ["OnboardingDeclined"]
    verified = CliRunner().invoke(cli, ["replay", "--verify"], catch_exceptions=False)
    assert verified.exit_code == 0 and "DIFFERS" not in verified.output


@pytest.mark.slow
def test_a_declined_onboarding_is_not_asked_again_in_a_terminal(home: Home, tmp_path: Path) -> None:
    from .conftest import diarist_cmd, subprocess_env
    from .terminal import Terminal

    chat = [*diarist_cmd(), "chat", "--backend", "scripted"]

    def session(*args: str) -> str:
        term = Terminal([*chat, *args], subprocess_env(home), tmp_path)
        try:
            screen = term.expect(r"What should I call you\?|/help for commands")
            if "What should I call you?" in screen:
                for n, question in enumerate(("role", "languages", "Anything else")):
                    term.send("Ann" if args and n == 0 else "")
                    term.expect(question)
                term.send("")
                term.expect(r"/help for commands")
            term.send("/exit")
            return term.expect(r"Session ended")
        finally:
            assert term.close() == 0, term.screen[-2000:]

    first = session()
    assert "What should I call you?" in first and "I will not ask again" in first
    second = session()  # a terminal, no profile — but declined: no questions
    assert "What should I call you?" not in second
    third = session("--onboard")  # --onboard still asks
    assert "What should I call you?" in third and "Saved." in third
    with EventLog(home.events_db) as log:
        assert [e.type for e in log.read(stream="profile")] == ["OnboardingDeclined", "ProfileSet"]
        (profile,) = log.read(types=["ProfileSet"])
    assert profile.payload["fields"] == {"name": "Ann"}
