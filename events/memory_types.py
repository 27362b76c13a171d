"""The memory types in one registry: a new type is one entry in :data:`MEMORY_TYPES`.

Each type says what the mining prompt tells the model of it, the MEMORY.md section its
memories join, whether its relevancy fades (dreaming) and whether recall puts it first:
a type with a ``heading`` is in the fixed head of every injection, under that heading, in
registry order. Every other module names a type through this one, never by its string.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryType:
    name: str            # stored in events and projections: never rename one
    prompt: str          # what the mining prompt says of it, in brackets after its name
    section: str         # the MEMORY.md section its memories join (consolidation)
    fades: bool = True   # its relevancy decays unless it is said again (dreaming)
    heading: str = ""    # the injected block's heading: recall puts the type first

    @property
    def head(self) -> bool:
        """Whether recall puts every active memory of the type first (the fixed head)."""
        return bool(self.heading)


PROFILE = MemoryType("workspace_profile", "only their name, home, job or employer", "Profile",
                     fades=False, heading="[workspace profile]")
PROJECT_FACT = MemoryType("project_fact", "a fact or decision about a project", "Projects",
                          heading="[project facts]")
TOOL_USE = MemoryType("tool_use", "how a tool or command behaves", "Tools")
WORKFLOW = MemoryType("workflow", "steps someone follows", "Workflows")
PREFERENCE = MemoryType("user_preference", "likes, habits, plans, events in their life",
                        "Preferences")

# The order of the CLI's choices and of the mining schema's enum; the head's order.
MEMORY_TYPES = (PROFILE, PROJECT_FACT, TOOL_USE, WORKFLOW, PREFERENCE)
DEFAULT = PREFERENCE  # a note's type, and a mined memory's when no other fits
# The default first, then the rest: the order the mining prompt offers them in.
DEFAULT_FIRST = (DEFAULT, *(t for t in MEMORY_TYPES if t is not DEFAULT))
_BY_NAME = {t.name: t for t in MEMORY_TYPES}


def names(types: Iterable[MemoryType] = MEMORY_TYPES) -> tuple[str, ...]:
    return tuple(t.name for t in types)


def by_name(name: str) -> MemoryType | None:
    return _BY_NAME.get(name)


def fading() -> tuple[str, ...]:
    """The names of the types whose relevancy decays, the default first."""
    return names(t for t in DEFAULT_FIRST if t.fades)


def head() -> tuple[MemoryType, ...]:
    """The types recall puts first, in the order it puts them."""
    return tuple(t for t in MEMORY_TYPES if t.head)


def prompt_text() -> str:
    """What the mining prompt says of the types: each quoted with its description, the
    default first, the last after "or"."""
    said = [f'"{t.name}" ({t.prompt})' for t in DEFAULT_FIRST]
    return ", ".join(said[:-1]) + " or " + said[-1]
