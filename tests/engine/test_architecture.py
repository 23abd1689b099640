"""The import graph of ``engine/`` and ``editor/`` has no cycle.

An AST scan (no module is imported): every ``import`` and ``from ... import`` statement,
at module level and inside functions alike, becomes an edge from the module that holds it
to the module it names. ``from engine.x import y`` names ``engine.x.y`` when ``y`` is a
submodule, else ``engine.x``. Imports under ``if TYPE_CHECKING:`` are left out: they never
run. A cycle is reported with its modules in order, so the failure says what to cut.

Function-level imports are allowed only for the optional extras (a project module that
imports an optional extra's package, directly or through another at its top); the engine's cheap ``import engine`` uses ``engine.__getattr__`` and its
``_LAZY`` table, which is not an import statement.

Run as a script (``python -m tests.engine.test_architecture``) to print the cycles and the
function-level imports of project modules.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import networkx as nx

from tests.ast_parse import parse as parse_source

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "editor")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Every module of the scanned packages: dotted name -> file."""
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Imports(ast.NodeVisitor):
    """Collects (target module, line, inside a function) for one module."""

    def __init__(self, module: str, is_package: bool, known: set[str]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known
        self.depth = 0
        self.found: list[tuple[str, int, bool]] = []

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            self.found.append((sub if sub in self.known else source, node.lineno, self.depth > 0))


# The optional extras' top-level packages (pyproject.toml's optional-dependencies): a module
# that imports one of these at its top needs the extra, and so does every module importing it
# at its top; such modules may be imported inside functions (the extra may be missing).
OPTIONAL_PACKAGES = (
    "temporalio",
    "xllamacpp",
    "pydantic_monty",
    "deno",
    "playwright",
    "mcp",
    "fastapi",
    "uvicorn",
    "pypdf",
)


@lru_cache(maxsize=1)
def scan() -> tuple[nx.DiGraph, list[tuple[str, int, str]]]:
    """The project's import graph, and its function-level imports of project modules that need
    no optional extra, as (module, line, imported module)."""
    modules = project_modules()
    known = set(modules)
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    inside_calls: list[tuple[str, int, str]] = []
    top_level = nx.DiGraph()
    needs_extra: set[str] = set()
    for name, path in modules.items():
        visitor = _Imports(name, path.name == "__init__.py", known)
        visitor.visit(parse_source(path.read_text(encoding="utf-8"), str(path)))
        for target, line, inside in visitor.found:
            if target not in known:
                if not inside and target.split(".")[0] in OPTIONAL_PACKAGES:
                    needs_extra.add(name)
                continue  # the standard library or a dependency
            if target != name:
                graph.add_edge(name, target, line=line)
                if not inside:
                    top_level.add_edge(name, target)
            if inside and (name, line, target) not in inside_calls:
                inside_calls.append((name, line, target))
    for module in list(needs_extra):
        if module in top_level:
            needs_extra |= nx.ancestors(top_level, module)
    lazy = [(m, line, t) for m, line, t in inside_calls if t not in needs_extra]
    return graph, lazy


def import_cycles(graph: nx.DiGraph) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module."""
    cycles = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            sub = graph.subgraph(component)
            cycles.append(nx.find_cycle(sub, source=min(component)))
    return [[edge[0] for edge in cycle] + [cycle[0][0]] for cycle in sorted(cycles)]


def _describe(graph: nx.DiGraph, cycle: list[str]) -> str:
    steps = [f"{a} (line {graph.edges[a, b]['line']})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(steps + [cycle[-1]])


def test_the_scanner_resolves_submodules_and_sees_function_level_imports() -> None:
    graph, lazy = scan()
    assert graph.has_edge("engine.graph.validate", "engine.graph.model")
    assert "engine" in graph and "engine.graph.model" in graph
    assert all(isinstance(line, int) for _, line, _ in lazy)
    small = nx.DiGraph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    for a, b in small.edges:
        small.edges[a, b]["line"] = 1
    assert import_cycles(small) == [["a", "b", "c", "a"]]
    assert _describe(small, ["a", "b", "c", "a"]) == "a (line 1) -> b (line 1) -> c (line 1) -> a"


def test_the_graph_layer_imports_no_kind_and_nothing_that_runs() -> None:
    """``engine.graph`` (the model, its index, validation) finds a kind through the registry
    (``engine.nodes``, which names the kinds without importing them) and imports no kind
    module, no runtime, store, command line or Temporal adapter."""
    graph, _ = scan()
    allowed_nodes = ("engine.nodes", "engine.nodes.base")
    above = ("engine.run", "engine.store", "engine.cli", "engine.temporal", "editor")
    bad = [
        f"{a} -> {b}"
        for a, b in graph.edges
        if a.startswith("engine.graph")
        and ((b.startswith("engine.nodes") and b not in allowed_nodes) or b.startswith(above))
    ]
    assert bad == []
    registry = [b for b in graph.successors("engine.nodes")]
    assert registry == ["engine.nodes.base"]


def test_no_import_cycle_in_engine_or_editor() -> None:
    graph, _ = scan()
    cycles = import_cycles(graph)
    assert cycles == [], "import cycles:\n" + "\n".join(_describe(graph, c) for c in cycles)


def test_no_function_level_import_of_a_project_module() -> None:
    """Lazy imports are for optional extras (not project modules); ``import engine`` is made
    cheap by ``engine.__getattr__``, not by imports inside functions."""
    _, lazy = scan()
    assert [f"{m}:{line} -> {t}" for m, line, t in lazy] == []


if __name__ == "__main__":  # pragma: no cover - a maintainer's report
    found_graph, found_lazy = scan()
    for found in import_cycles(found_graph):
        print("cycle:", _describe(found_graph, found))
    by_module: dict[str, int] = {}
    for module, line, target in found_lazy:
        by_module[module] = by_module.get(module, 0) + 1
        print(f"function-level: {module}:{line} -> {target}")
    print(len(found_lazy), "function-level imports;", by_module)
