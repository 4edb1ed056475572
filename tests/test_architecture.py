"""The package's import graph: no circles, and each layer imports only the ones below it.

Read with ``ast`` (nothing is imported), counting every import: top-level, deferred inside
functions, and those under ``TYPE_CHECKING``, since a circle that only type-checking sees
still ties two modules together.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import fencecall

PACKAGE = Path(fencecall.__file__).parent

LAYERS = (
    ("fencecall._lazy", "fencecall.defaults", "fencecall.errors", "fencecall.jsonl",
     "fencecall.message", "fencecall.parsing", "fencecall.realpath", "fencecall.secrecy",
     "fencecall.telemetry"),
    ("fencecall.images",),
    ("fencecall.accounting", "fencecall.log_records"),
    ("fencecall.sandbox",),
    ("fencecall.environments",),
    ("fencecall.tools",),
    ("fencecall.config", "fencecall.checkpoints"),
    ("fencecall.execution", "fencecall.providers"),
    ("fencecall.agent", "fencecall.serve"),
    ("fencecall.assembly",),
    ("fencecall.export",),
    ("fencecall.batch",),
    ("fencecall.evaluation",),
    ("fencecall.cli",),
    ("fencecall.acp",),
)
"""Bottom to top: a module may import from its own layer's other parts only where the test
below allows it, and from any layer beneath."""

ALLOWED_SIDEWAYS: set[tuple[str, str]] = set()
"""(importer, imported) pairs of parts of one layer that may import each other."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _resolve(importer: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = importer.split(".")
    if not is_package:
        base.pop()
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The package's modules that ``name`` imports (``from pkg import sub`` counts as
    importing ``pkg.sub`` when that is a module, else ``pkg``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("fencecall") and target != name:
                yield target


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: set(imports_of(name, path, known)) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
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
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def layer_of(module: str) -> tuple[int, str] | None:
    for level, parts in enumerate(LAYERS):
        for part in parts:
            if module == part or module.startswith(part + "."):
                return level, part
    return None


def test_the_graph_reader_sees_real_edges() -> None:
    edges = graph()
    assert "fencecall.tools.spec" in edges["fencecall.execution._pipeline"]
    assert "fencecall.parsing.formats._markdown" in edges["fencecall.parsing.formats"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    assert cycles(graph()) == []


def test_layers_import_only_downwards() -> None:
    wrong = []
    for importer, targets in graph().items():
        mine = layer_of(importer)
        if mine is None:
            continue
        for target in targets:
            theirs = layer_of(target)
            if theirs is None or theirs[1] == mine[1]:
                continue
            upward = theirs[0] > mine[0]
            sideways = theirs[0] == mine[0] and (mine[1], theirs[1]) not in ALLOWED_SIDEWAYS
            if upward or sideways:
                wrong.append(f"{importer} -> {target}")
    assert wrong == []


def test_every_module_has_a_layer() -> None:
    assert [m for m in modules() if m != "fencecall" and layer_of(m) is None] == []


FORMAT_QUESTION = re.compile(
    r"""\b(?:is|is not|==|!=)\s*(?:MARKDOWN|XML|TOOL)\b"""
    r"""|\.name\s*[!=]=\s*["'](?:markdown|xml|tool)"""
    r"""|\b(?:fmt|format)\s*[!=]=\s*["']""")


def test_nothing_outside_parsing_asks_which_format_it_holds() -> None:
    assert FORMAT_QUESTION.search('if session.format is TOOL:')
    assert FORMAT_QUESTION.search('if fmt == "xml":')
    asking = [f"{path.relative_to(PACKAGE)}:{number}"
              for path in PACKAGE.rglob("*.py") if "parsing" not in path.parts
              for number, line in enumerate(path.read_text().splitlines(), 1)
              if FORMAT_QUESTION.search(line)]
    assert asking == []
