"""The architecture, checked from the source's imports (AST), not from a diagram.

- Layers import one way: ``cli → workers → projections → events``; nothing imports ``cli``.
- No module cycle, counting every import that runs (module level or inside a function;
  ``if TYPE_CHECKING:`` blocks are left out: they never run).
- ``cli/`` is presentation: no SQL, no threads, no queue plumbing.
- Huey stays at the edge: no module of ``workers/`` but the edge's own imports the edge (a
  capability is handed a ``workers.queue_port.QueuePort`` instead).
- Outside ``events/`` an event type is named by its class, never by its name as a string.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("events", "projections", "workers", "cli")  # bottom to top


@dataclass(frozen=True)
class Import:
    source: str        # the importing module, e.g. "workers.chat.session"
    target: str        # the module imported, e.g. "projections.inject"
    line: int
    type_only: bool    # under ``if TYPE_CHECKING:``


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for layer in LAYERS for p in sorted((REPO / layer).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, type_only: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        inside = type_only or (isinstance(child, ast.If) and _is_type_checking(child.test))
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for grandchild in child.body:
                yield grandchild, True
                yield from _walk(grandchild, True)
            for grandchild in child.orelse:
                yield grandchild, type_only
                yield from _walk(grandchild, type_only)
            continue
        yield child, inside
        yield from _walk(child, inside)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """Every import in the module, resolved to the deepest module of ours it names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node, type_only in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin
                       for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]  # "events.clock.now" → "events.clock"
            if target and target != name:
                found.append(Import(name, target, getattr(node, "lineno", 0), type_only))
    return found


def all_imports() -> list[Import]:
    known = modules()
    return [imp for name, path in known.items() for imp in imports_of(name, path, known)]


def layer(module: str) -> int:
    return LAYERS.index(module.split(".")[0])


def test_the_scan_sees_the_code() -> None:
    """The checks below mean something only if the scan finds the imports it should."""
    imports = all_imports()
    pairs = {(i.source, i.target) for i in imports}
    assert ("cli.main", "cli.chat") in pairs
    assert ("workers.chat.session", "projections.inject") in pairs
    assert ("projections.engine", "events.db") in pairs
    assert any(i.type_only for i in imports)  # TYPE_CHECKING blocks are recognised
    assert len(modules()) > 60


def test_layers_import_one_way() -> None:
    wrong = [f"{i.source}:{i.line} imports {i.target}" for i in all_imports()
             if layer(i.target) > layer(i.source)]
    assert wrong == [], "imports must run cli → workers → projections → events:\n" + \
        "\n".join(wrong)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return out


def test_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _without_package_inits(imports: list[Import]) -> dict[str, set[str]]:
    """The run-time import graph. A package's ``__init__`` re-exporting its own modules is
    not a dependency of those modules on each other: an import of ``events.log`` from
    ``events/__init__.py`` runs before ``events.log`` can import ``events`` back, so edges
    from a package to its own submodules are left out."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        if i.type_only or i.target.startswith(i.source + "."):
            continue
        edges.setdefault(i.source, set()).add(i.target)
    return edges


def test_no_module_cycles() -> None:
    assert _cycles(_without_package_inits(all_imports())) == []


def test_a_cycle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """The loop the queue once had, hidden by imports inside functions: the tasks import the
    shadow journal, which reaches the chat's hand-off, which enqueued through ``dispatch``,
    which imported the tasks when called."""
    sources = {
        "pkg/__init__.py": "",
        "pkg/chat/__init__.py": "",
        "pkg/tasks.py": "from .chat.shadow_journal import journal\n",
        "pkg/chat/shadow_journal.py": "def journal():\n    from .handoff import after\n",
        "pkg/chat/handoff.py": "from ..dispatch import after_append\n",
        "pkg/dispatch.py": "def after_append():\n    from .tasks import enqueue\n",
    }
    known = {}
    for file, text in sources.items():
        path = tmp_path / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        parts = Path(file).with_suffix("").parts
        known[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    imports = [i for name, path in known.items() for i in imports_of(name, path, known)]
    assert _cycles(_without_package_inits(imports)) == [
        ["pkg.chat.handoff", "pkg.chat.shadow_journal", "pkg.dispatch", "pkg.tasks"]]


# The Huey side: the queue, its tasks, the queue handed to capabilities, the consumer.
EDGE = ("workers.app", "workers.tasks", "workers.dispatch", "workers.worker")


def test_capabilities_never_import_the_edge() -> None:
    """A capability takes a ``QueuePort`` argument: no module of ``workers/`` outside the
    edge imports it, at any level (module top, inside a function, under TYPE_CHECKING)."""
    assert set(EDGE) <= set(modules())
    wrong = sorted({f"{i.source}:{i.line} imports {i.target}" for i in all_imports()
                    if i.source.startswith("workers") and i.source not in EDGE
                    and i.target in EDGE})
    assert wrong == [], "only cli/ and the edge may import the Huey side:\n" + "\n".join(wrong)


def test_the_edge_scan_sees_function_level_imports(tmp_path: Path) -> None:
    """An import inside a function, relative or absolute, counts like one at the top."""
    path = tmp_path / "remember.py"
    path.write_text("def f():\n    from ..dispatch import QUEUE\n\n"
                    "def g():\n    import workers.tasks\n", encoding="utf-8")
    known = {**modules(), "workers.memory.remember": path}
    assert {i.target for i in imports_of("workers.memory.remember", path, known)} == {
        "workers.dispatch", "workers.tasks"}


# cli/ may import workers.dispatch: it passes the queue to a library function (QueuePort).
CLI_FORBIDDEN_IMPORTS = ("sqlite3", "threading", "huey", "workers.app", "workers.tasks",
                         "concurrent")


@pytest.mark.parametrize("name", sorted(m for m in modules() if m.startswith("cli")))
def test_cli_is_presentation_only(name: str) -> None:
    """No SQL, no threads, no queue plumbing in cli/: it parses, calls one library function
    and prints."""
    path = modules()[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""])
            problems += [f"line {node.lineno}: imports {n}" for n in names
                         if n.startswith(CLI_FORBIDDEN_IMPORTS)]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("execute", "executemany", "executescript"):
            problems.append(f"line {node.lineno}: runs SQL (.{node.func.attr})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "Thread":
            problems.append(f"line {node.lineno}: starts a thread")
    assert problems == []


def test_nothing_imports_cli() -> None:
    wrong = [f"{i.source}:{i.line}" for i in all_imports()
             if i.target.startswith("cli") and not i.source.startswith("cli")]
    assert wrong == []


def event_names_as_strings(path: Path, root: Path = REPO) -> list[str]:
    """Where a module spells an event type's name as a string literal ("UserTurn")."""
    from events.types import registry

    names = set(registry.names())
    return [f"{path.relative_to(root)}:{node.lineno} {node.value!r}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names]


def test_event_types_are_named_by_their_classes() -> None:
    """Outside ``events/`` an event type is its class (``UserTurn``, ``UserTurn.type_name()``,
    ``log.read(types=[UserTurn])``), never its name as a string: mypy then checks every name
    and every field a projector or a worker reads."""
    found = [hit for name, path in modules().items() if not name.startswith("events")
             for hit in event_names_as_strings(path)]
    assert found == [], "name event types by their classes (events/types.py):\n" + \
        "\n".join(found)


def test_the_event_name_scan_sees_a_literal(tmp_path: Path) -> None:
    path = tmp_path / "stats.py"
    path.write_text('HANDLES = {"UserTurn", "MemoryForgotten", "user"}\n', encoding="utf-8")
    assert event_names_as_strings(path, tmp_path) == ["stats.py:1 'UserTurn'",
                                                      "stats.py:1 'MemoryForgotten'"]


def names_bound_twice(path: Path, root: Path = REPO) -> list[str]:
    """The module-level names a module binds more than once (an assignment, a function, a
    class): a second pattern of the same name silently replaces the first for every
    function that reads it at call time."""
    seen: dict[str, int] = {}
    found: list[str] = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            names = [node.target.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        else:
            continue
        for name in names:
            if name in seen:
                found.append(f"{path.relative_to(root)}:{node.lineno} {name} "
                             f"(first bound on line {seen[name]})")
            seen.setdefault(name, node.lineno)
    return found


def test_no_module_binds_a_name_twice() -> None:
    """readable.py's regular expressions are module constants read at call time; a new
    ``_OPENING`` below an old one once changed what ``without_opening`` cut."""
    found = [hit for path in modules().values() for hit in names_bound_twice(path)]
    assert found == [], "rename one of them:\n" + "\n".join(found)


def test_the_rebinding_scan_sees_a_second_pattern(tmp_path: Path) -> None:
    path = tmp_path / "readable.py"
    path.write_text('import re\n_OPENING = re.compile("a")\n\n\ndef f() -> None:\n'
                    '    _OPENING = 1\n\n\n_OPENING = re.compile("b")\n', encoding="utf-8")
    assert names_bound_twice(path, tmp_path) == [
        "readable.py:9 _OPENING (first bound on line 2)"]
