"""Docs that cannot drift: every command has help, a README line, and an up-to-date reference."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cli.main import cli

from .conftest import REPO

sys.path.insert(0, str(REPO / "scripts"))
from gen_cli_docs import render, walk

COMMANDS = [(path, command) for path, command in walk(cli, ["diarist"])]


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_and_option_has_help(path: list[str], command: click.Command) -> None:
    assert command.help, f"{' '.join(path)} has no help"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(path)} {param.opts} has no help"


def test_every_top_level_command_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in cli.commands:
        assert re.search(rf"`diarist {name}\b", readme), f"README does not mention `diarist {name}`"


def test_cli_reference_is_current() -> None:
    assert (REPO / "docs" / "cli.md").read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run `python scripts/gen_cli_docs.py`")


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    setup, test = blocks[0], blocks[1]
    assert setup in ci and test in ci


def test_the_console_script_is_installed() -> None:
    done = subprocess.run(["diarist", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "import" in done.stdout


def test_architecture_tree_is_current() -> None:
    from gen_tree import DOC, render

    text = DOC.read_text(encoding="utf-8")
    assert text == render(text), (
        "docs/tree.md is stale: run `python scripts/gen_tree.py`")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_links_resolve(doc: Path) -> None:
    """Every relative link of the README and the docs names a file that exists and, with an
    anchor into a markdown file, a heading of that file."""
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.name}: link to a missing file {target}"
        if anchor and file.suffix == ".md":
            assert anchor in _anchors(file), f"{doc.name}: no heading for {target}"


@pytest.mark.parametrize("doc, limit", [("README.md", 10_000), ("docs/architecture.md", 25_000),
                                        ("docs/benchmarks.md", 30_000)])
def test_the_docs_stay_short(doc: str, limit: int) -> None:
    """A newcomer reads these first: dated notes go to docs/experiments.md."""
    assert len((REPO / doc).read_bytes()) <= limit
