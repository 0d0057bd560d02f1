"""The import layers of docs/architecture.md, read from the source (every import
statement, those inside functions and under TYPE_CHECKING included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "server", "bots", "client_tui")


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the modules of this project it imports."""
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = _module(path)
            found: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    found |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module)
                    found |= {f"{node.module}.{alias.name}" for alias in node.names}
            graph[module] = {name for name in found if name.split(".")[0] in PACKAGES}
    return graph


def _known(graph: dict[str, set[str]], name: str) -> str | None:
    """``name`` as a module of the graph (``from x import y`` may name a function y)."""
    while name and name not in graph:
        name = name.rpartition(".")[0]
    return name or None


GRAPH = _imports()


def _offences(source: str, target: str) -> list[str]:
    return sorted(
        f"{mod} -> {name}"
        for mod, names in GRAPH.items()
        if mod.split(".")[0] == source
        for name in names
        if name.split(".")[0] == target
    )


def test_the_rules_import_only_the_rules_and_the_error_tree() -> None:
    bad = sorted(
        f"{mod} -> {name}"
        for mod, names in GRAPH.items()
        if mod.startswith("protocol.rules")
        for name in names
        if not (name.startswith("protocol.rules") or name.startswith("protocol.errors"))
    )
    assert bad == []


def test_protocol_imports_no_shell() -> None:
    assert [o for shell in ("server", "bots", "client_tui") for o in _offences("protocol", shell)] == []


def test_shells_do_not_import_each_other() -> None:
    assert _offences("bots", "server") == []
    assert _offences("server", "bots") == []
    assert _offences("client_tui", "server") == []
    assert _offences("server", "client_tui") == []


def test_no_import_cycle_inside_the_server() -> None:
    edges = {
        mod: {
            known
            for name in names
            if (known := _known(GRAPH, name)) and known.startswith("server") and known != mod
        }
        for mod, names in GRAPH.items()
        if mod.startswith("server")
    }
    seen: dict[str, int] = {}  # 1: on the path, 2: done
    cycles: list[list[str]] = []

    def visit(mod: str, path: list[str]) -> None:
        seen[mod] = 1
        for nxt in sorted(edges.get(mod, ())):
            if seen.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[mod] = 2

    for mod in sorted(edges):
        if mod not in seen:
            visit(mod, [mod])
    assert cycles == []


def test_the_probe_sees_real_imports() -> None:
    """The checks above would pass on an empty graph: make sure it is not."""
    assert "server.arena" in GRAPH["server.events"]
    assert any(name.startswith("protocol.rules") for name in GRAPH["server.room"])
