"""Docs that cannot drift: every command has help, a README line, and an up-to-date reference."""
from __future__ import annotations

import re
import subprocess
import sys

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
        "docs/architecture.md's tree is stale: run `python scripts/gen_tree.py`")
