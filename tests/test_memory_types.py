"""The memory types' registry, events/memory_types.py: every type is complete, the mining
prompt built from it is the one it replaced, byte for byte, and no other module names a
type by its string."""
from __future__ import annotations

import ast
from pathlib import Path

from events import memory_types
from events.memory_types import DEFAULT, MEMORY_TYPES, PREFERENCE, PROFILE, PROJECT_FACT
from workers.mining import extract

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("events", "workers", "projections", "cli")
REGISTRY = REPO / "events" / "memory_types.py"

# extract.SYSTEM as it was written out by hand before the registry (the model's prompt is
# cached by the server: it must stay byte-identical)
OLD_SYSTEM = (
    "You turn a conversation into long-term memories. Reply with only JSON, on one line: "
    '{"memories": [...]}. Each memory is an object with:\n'
    '"content": one short sentence that names the person it is about;\n'
    '"type": "user_preference" (likes, habits, plans, events in their life), '
    '"workspace_profile" (only their name, home, job or employer), "project_fact" (a fact '
    'or decision about a project), "tool_use" (how a tool or command behaves) or '
    '"workflow" (steps someone follows);\n'
    '"subject": one to three words for what it is about (the same words for facts that '
    "would replace each other);\n"
    '"turns": the numbers of the lines it comes from.\n'
    "Keep only facts the speakers state about themselves, their work, plans, likes or "
    "lives. Skip greetings, questions and small talk. Lines marked (context) only explain "
    'the others. Reply {"memories": []} when nothing is worth keeping.')


def test_every_type_is_complete() -> None:
    assert len(set(memory_types.names())) == len(MEMORY_TYPES) == 5
    for kind in MEMORY_TYPES:
        assert kind.name and kind.prompt and kind.section, kind
        assert memory_types.by_name(kind.name) is kind
    assert len({kind.section for kind in MEMORY_TYPES}) == len(MEMORY_TYPES)
    assert DEFAULT is PREFERENCE and memory_types.by_name("nothing") is None


def test_orders_are_the_ones_outputs_depend_on() -> None:
    assert memory_types.names() == ("workspace_profile", "project_fact", "tool_use",
                                    "workflow", "user_preference")
    assert memory_types.head() == (PROFILE, PROJECT_FACT)
    assert memory_types.fading() == ("user_preference", "project_fact", "tool_use", "workflow")


def test_the_prompt_built_from_the_registry_is_byte_identical() -> None:
    assert extract.SYSTEM == OLD_SYSTEM
    assert extract.SYSTEM.encode() == OLD_SYSTEM.encode()


def test_no_other_module_names_a_type_by_its_string() -> None:
    type_names = set(memory_types.names())
    found = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            if path == REGISTRY:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and node.value in type_names:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}")
    assert found == [], "name memory types through events/memory_types.py:\n" + \
        "\n".join(found)
