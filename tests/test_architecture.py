"""The imports of the project, parsed from its files: layers point one way, no cycle, no private
name imported from another module, and the diagram of docs/architecture.md is this graph."""
from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("ssot", "tune", "analysis")

#: Cycles that exist only through imports under ``if TYPE_CHECKING:`` (never executed): none.
KNOWN_TYPING_CYCLES: set[frozenset[str]] = set()

#: Private names imported from another module in files other branches own (none left).
KNOWN_PRIVATE: set[str] = set()

#: Component -> the components it must never import (directly or lazily).
FORBIDDEN = {
    "analysis": ("tune", "ssot (method)", "ssot.data", "torch", "ray"),
    "tune": ("analysis",),
    "ssot": ("tune", "analysis"),
    "ssot.results": ("ssot (method)", "ssot.data", "ssot.cli", "torch", "ray"),
    "ssot.results (record, metrics, atomic)": ("ssot (method)", "ssot.data", "ssot.cli", "ssot.config", "ssot.results", "torch", "ray"),
    "ssot.config": ("ssot (method)", "ssot.data", "ssot.results", "torch", "ray"),
    "ssot.cli": ("ssot (method)", "ssot.data", "torch", "ray"),
    "ssot.errors": ("ssot (method)", "ssot.data", "ssot.results", "ssot.config", "torch", "ray"),
    "ssot.data.registry": ("ssot (method)", "ssot.data", "ssot.results", "ssot.config", "torch", "ray"),
}


def modules() -> dict[str, Path]:
    """Every module of the three packages, by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(name: str, path: Path) -> Iterator[tuple[str, str, bool]]:
    """``(imported module, imported name or "", under TYPE_CHECKING)`` of every import in a module,
    at any depth (lazy imports inside functions included)."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if _type_checking(node):
            typing_only |= {id(n) for n in ast.walk(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        guarded = id(node) in typing_only
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", guarded
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield base, alias.name, guarded


def resolve(target: str, name: str, known: dict[str, Path]) -> str | None:
    """The project module an import refers to (``from ssot import cli`` is ``ssot.cli``), else None."""
    if name and f"{target}.{name}" in known:
        return f"{target}.{name}"
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def graph(include_typing: bool) -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    known = modules()
    edges: dict[str, set[str]] = {m: set() for m in known}
    for name, path in known.items():
        for target, imported, guarded in imports(name, path):
            if guarded and not include_typing:
                continue
            module = resolve(target, imported, known)
            if module is not None and module != name:
                edges[name].add(module)
    return edges


def component(module: str) -> str:
    """The box of the diagram a module belongs to (a third-party module: its top-level package)."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return parts[0]
    if parts[0] == "analysis":
        return f"analysis.{parts[1]}" if len(parts) > 1 and parts[1] in ("data", "charts", "mpl", "dashboard", "style") else "analysis"
    if parts[0] == "tune":
        return "tune"
    if len(parts) > 1 and parts[1] == "results":
        return "ssot.results (record, metrics, atomic)" if len(parts) > 2 and parts[2] in ("record", "metrics", "atomic") else "ssot.results"
    if len(parts) > 1 and parts[1] == "data":
        return "ssot.data.registry" if len(parts) > 2 and parts[2] == "registry" else "ssot.data"
    if len(parts) > 1 and parts[1] in ("config", "cli", "errors"):
        return f"ssot.{parts[1]}"
    return "ssot (method)"


def component_edges() -> set[tuple[str, str]]:
    return {(component(a), component(b)) for a, targets in graph(include_typing=False).items() for b in targets
            if component(a) != component(b)}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    counter = itertools.count()

    def visit(v: str) -> None:
        index[v] = low[v] = next(counter)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def mermaid() -> str:
    """The diagram of docs/architecture.md: one box per component, an arrow per import between them
    (but not the arrows to ``ssot.errors``, which every component may import)."""
    lines = ["```mermaid", "graph TD"]
    ids: dict[str, str] = {}
    for a, b in sorted(e for e in component_edges() if e[1] != "ssot.errors"):
        for c in (a, b):
            ids.setdefault(c, "n" + re.sub(r"\W", "_", c))
        lines.append(f'    {ids[a]}["{a}"] --> {ids[b]}["{b}"]')
    return "\n".join([*lines, "```"])


def method_mermaid() -> str:
    """The second diagram of docs/architecture.md: the modules of the ``ssot (method)`` box and the
    imports between them (where the one step, :mod:`ssot.method`, sits)."""
    inside = {m for m in modules() if component(m) == "ssot (method)" and m != "ssot"}
    edges = sorted((a, b) for a, targets in graph(include_typing=False).items() if a in inside for b in targets if b in inside)
    lines = ["```mermaid", "graph TD"]
    for a, b in edges:
        lines.append(f'    {a.replace(".", "_")}["{a}"] --> {b.replace(".", "_")}["{b}"]')
    return "\n".join([*lines, "```"])


# ------------------------------------------------------------------------------------ the tests
def test_no_import_cycle_between_modules():
    assert cycles(graph(include_typing=False)) == []
    typing_cycles = [frozenset(c) for c in cycles(graph(include_typing=True))]
    assert set(typing_cycles) <= KNOWN_TYPING_CYCLES, typing_cycles


def test_imports_point_down_the_layers():
    known = modules()
    wrong = []
    for name, path in known.items():
        rules = FORBIDDEN.get(component(name)) or FORBIDDEN.get(name.split(".")[0], ())
        if name.split(".")[0] == "ssot" and component(name) in FORBIDDEN:
            rules = (*rules, *FORBIDDEN["ssot"])
        for target, imported, _ in imports(name, path):
            module = resolve(target, imported, known) or target
            if component(module) in rules or module.split(".")[0] in rules:
                wrong.append(f"{name} imports {module}")
    assert wrong == []


def test_no_private_name_is_imported_from_another_module():
    known = modules()
    private = [f"{name}: from {target} import {imported}" for name, path in known.items()
               for target, imported, _ in imports(name, path)
               if imported.startswith("_") and not imported.startswith("__") and resolve(target, "", known)]
    assert set(private) <= KNOWN_PRIVATE, private


def test_the_diagram_of_the_architecture_document_is_the_import_graph():
    text = (REPO / "docs" / "architecture.md").read_text()
    assert mermaid() in text, "regenerate the diagram: python -c 'import tests.test_architecture as t; print(t.mermaid())'"


def test_the_method_diagram_of_the_architecture_document_is_the_import_graph():
    text = (REPO / "docs" / "architecture.md").read_text()
    assert method_mermaid() in text, "regenerate it: python -c 'import tests.test_architecture as t; print(t.method_mermaid())'"
