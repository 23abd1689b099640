"""The editor's layers: the document's model imports neither the commands nor the canvas,
and the document, commands, editing and layout modules form no import cycle.

Imports are read with ``ast`` (function-level imports count; ``if TYPE_CHECKING:`` blocks
do not, since they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from tests.ast_parse import parse as parse_source

EDITOR = Path(__file__).resolve().parents[2] / "editor"


def _module_name(path: Path) -> str:
    rel = path.relative_to(EDITOR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_imports(path: Path, source: str | None = None) -> set[str]:
    """The ``editor.*`` modules ``path`` (or ``source`` as if it were at ``path``) imports when it runs."""
    tree = parse_source(path.read_text(encoding="utf-8") if source is None else source)
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                found.add(
                    f"{mod}.{alias.name}"
                    if (EDITOR.parent / f"{mod}.{alias.name}".replace(".", "/")).with_suffix(".py").exists()
                    else mod
                )
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m == "editor" or m.startswith("editor.")}


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in EDITOR.rglob("*.py"):
        name = _module_name(path)
        g.add_node(name)
        for target in _runtime_imports(path):
            g.add_edge(name, target)
    return g


def test_the_model_imports_neither_commands_nor_canvas() -> None:
    imports = _runtime_imports(EDITOR / "document.py")
    assert not {
        m
        for m in imports
        if m in ("editor.commands", "editor.editing", "editor.layout") or m.startswith("editor.canvas")
    }, imports


def test_commands_call_the_model_and_do_not_import_it() -> None:
    assert _runtime_imports(EDITOR / "commands.py") == set()
    assert "editor.commands" in _runtime_imports(EDITOR / "editing.py")


def test_no_cycle_through_document_commands_editing_layout() -> None:
    g = _graph()
    core = {"editor.document", "editor.commands", "editor.editing", "editor.layout", "editor.canvas.style"}
    assert core <= set(g)
    cycles = [
        c
        for c in nx.simple_cycles(g.subgraph(nx.descendants(g, "editor.layout") | {"editor.layout", "editor.editing"}))
        if core & set(c)
    ]
    assert cycles == []


def test_the_import_reader_sees_function_level_imports() -> None:
    # the checker is real: the old document.py imported the commands and the layout lazily
    old = (
        "class D:\n    def add(self):\n        from .commands import AddItemsCommand\n"
        "    def lay(self):\n        from .layout import layered_positions\n"
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .canvas.style import node_size\n"
    )
    assert _runtime_imports(EDITOR / "document.py", old) == {"editor.commands", "editor.layout"}
    assert {"editor.document", "editor.canvas.style"} <= _runtime_imports(EDITOR / "layout.py")


def test_every_editor_import_resolves() -> None:
    """Function-level imports run late; a module moved to another package must not break them."""
    import importlib
    import importlib.util

    missing = []
    for path in sorted(EDITOR.rglob("*.py")):
        package = _module_name(path).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        for node in ast.walk(parse_source(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                mod = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                if importlib.util.find_spec(mod) is None:
                    missing.append(f"{path.relative_to(EDITOR.parent)}:{node.lineno}: {mod}")
                    continue
                module = importlib.import_module(mod)
                for alias in node.names:
                    if not hasattr(module, alias.name) and importlib.util.find_spec(f"{mod}.{alias.name}") is None:
                        missing.append(f"{path.relative_to(EDITOR.parent)}:{node.lineno}: {mod}.{alias.name}")
    assert missing == []
