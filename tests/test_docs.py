"""Docs that cannot drift: every command has help, a README line, and an up-to-date reference."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cli.main import cli
from events import Home

from .conftest import REPO, subprocess_env

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


def _readme_commands() -> list[list[str]]:
    """Every `diarist …` command in the README's code blocks, as its arguments."""
    import shlex

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```[a-z]*\n(.*?)\n```", readme, re.S):
        for line in block.splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                words = shlex.split(part)
                if words and words[0] == "diarist":
                    commands.append(words[1:])
    return commands


README_COMMANDS = _readme_commands()


@pytest.mark.parametrize("args", README_COMMANDS, ids=[" ".join(a) for a in README_COMMANDS])
def test_every_readme_command_parses_as_written(args: list[str]) -> None:
    """Each command of the README names a real command with options it takes (parsed by
    click as `diarist` would, not run)."""
    ctx = cli.make_context("diarist", list(args))
    command: click.Command = cli
    while isinstance(command, click.Group):
        rest = [*ctx._protected_args, *ctx.args]
        name, found, rest = command.resolve_command(ctx, rest)
        assert found is not None, f"no command {name!r} in `diarist {' '.join(args)}`"
        ctx = found.make_context(name or "", rest, parent=ctx)
        command = found


def test_the_readme_has_commands_to_check() -> None:
    assert len(README_COMMANDS) >= 10


def test_the_readme_first_job_runs_as_written(home: Home) -> None:
    """The README's first job, its line run by a shell in a fresh home (embedding off, as
    every test has it: lexical recall alone puts the move first here)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines()
                if line.startswith("diarist import examples/"))
    done = subprocess.run(["bash", "-c", line], cwd=REPO, env=subprocess_env(home),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.index("Plymouth") < done.stdout.index("Bristol")


def test_the_readme_night_gives_the_memory_md_line_it_quotes(home: Home) -> None:
    """The README's night, run as written after the first job's import, and the MEMORY.md
    line the README quotes from it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    night = next(line for line in lines if line.startswith("diarist mine && "))
    imported = next(line for line in lines if line.startswith("diarist import examples/"))
    first = imported.split(" && ")[0]
    quoted = re.search(r'\("(Maya moved to Plymouth[^"]+)"\)', " ".join(lines))
    assert quoted, "the README no longer quotes Maya's Plymouth line"
    run_night = night.replace("cat var/", f"cat {home.root}/")
    done = subprocess.run(["bash", "-c", f"{first} && {run_night}"], cwd=REPO,
                          env=subprocess_env(home), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"- {quoted.group(1)}" in done.stdout, done.stdout
