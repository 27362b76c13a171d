"""Write docs/cli.md from the commands' own --help (tests/test_docs.py fails on drift).

    python scripts/gen_cli_docs.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cli.main import cli  # noqa: E402


def walk(command: click.Command, path: list[str]):  # type: ignore[no-untyped-def]
    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            yield from walk(command.commands[name], path + [name])


def render() -> str:
    out = ["# CLI reference", "",
           "Generated from `--help` by `python scripts/gen_cli_docs.py`; do not edit by hand.", ""]
    for path, command in walk(cli, ["diarist"]):
        ctx = click.Context(command, info_name=" ".join(path), terminal_width=100,
                            help_option_names=["-h", "--help"])
        out += [f"## {' '.join(path)}", "", "```", command.get_help(ctx), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    (REPO / "docs" / "cli.md").write_text(render(), encoding="utf-8")
    print("wrote docs/cli.md")
