"""Test set-up: Qt offscreen before any Qt import; no test touches the user's real
settings, run history or keyring; no test reaches the network."""

import os
import tempfile

# Imported now, while the session is young: hypothesis's pytest plug-in imports it at the end
# of a session that did not (a run of tests/editor, say), and pytest's assertion rewriting
# then parses its modules late, where CPython 3.11's ast.parse fails at random with
# "SystemError: AST constructor recursion depth mismatch" (see tests/ast_parse.py).
import hypothesis  # noqa: F401
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["FLOWDESK_TESTING"] = "1"
# One throw-away data and config folder for the whole session (subprocesses inherit it).
_root = tempfile.mkdtemp(prefix="flowdesk-tests-")
os.environ["FLOWDESK_DATA_DIR"] = os.path.join(_root, "data")
os.environ["FLOWDESK_CONFIG_DIR"] = os.path.join(_root, "config")


# The example node plug-in (tests/plugins, with a *.dist-info beside it that names its entry
# point): "installed" for a test by putting its folder on sys.path and PYTHONPATH (for CLI
# subprocesses) and loading the entry points again.
PLUGINS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins")


@pytest.fixture
def example_plugin(monkeypatch):
    import sys

    import engine

    monkeypatch.syspath_prepend(PLUGINS_DIR)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (PLUGINS_DIR, os.environ.get("PYTHONPATH")) if p))
    engine.load_plugins(reload=True)
    spec = engine.spec_for("template")
    assert spec is not None, "the example plug-in was not found through its entry point"
    yield spec
    engine.unregister_node_spec("template")
    sys.modules.pop("flowdesk_example_nodes", None)
