"""The engine's boundary: it imports no Qt, and its public API is what ``__all__`` says.

The import check runs in a fresh interpreter, because this test process may already have
Qt loaded by other tests (pytest-qt).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import engine

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = ("PySide6", "shiboken6", "qasync", "PyQt5", "PyQt6", "editor")

CHILD = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""


def modules_loaded_by(*names: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", CHILD, *names], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "names",
    [
        ("engine",),
        ("engine.cli",),
        ("engine.llm",),
        ("engine", "engine.cli", "engine.llm", "engine.run.scheduler", "engine.graph.validate"),
    ],
)
def test_engine_imports_no_qt(names: tuple[str, ...]) -> None:
    loaded = modules_loaded_by(*names)
    assert set(names) <= set(loaded)
    bad = [m for m in loaded if m.split(".")[0] in FORBIDDEN]
    assert bad == []


def test_child_check_would_see_qt() -> None:
    """The check is real: importing a module in the child does show up in its sys.modules."""
    assert "json" in modules_loaded_by("json")


def test_all_names_exist() -> None:
    missing = [name for name in engine.__all__ if not hasattr(engine, name)]
    assert missing == []
    assert len(engine.__all__) == len(set(engine.__all__))


def test_star_import_exports_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from engine import *", namespace)
    exported = {k for k in namespace if k != "__builtins__"}
    assert exported == set(engine.__all__)


def test_core_api_is_public() -> None:
    for name in (
        "Workflow",
        "Node",
        "Connection",
        "WorkflowLoadError",
        "load_workflow",
        "loads_workflow",
        "parse_workflow",
        "save_workflow",
        "validate",
        "check_connection",
        "Issue",
        "Severity",
        "GraphIndex",
        "ConnectionCheck",
        "Run",
        "RunEvent",
        "EchoProvider",
        "LLMProvider",
    ):
        assert name in engine.__all__, name
