"""The main window is a composition root: controllers own the concerns, no mixins share state."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMainWindow

EDITOR = Path(__file__).resolve().parents[2] / "editor"


def test_the_main_window_is_built_of_controllers_not_mixins(window) -> None:
    from editor.main_window import MainWindow

    assert MainWindow.__bases__ == (QMainWindow,)
    for name in (
        "files",
        "validation",
        "runs",
        "run_views",
        "providers",
        "library",
        "commands",
        "edit",
        "repair",
        "help",
    ):
        assert getattr(window, name).parent() is window, name


def test_no_window_module_is_over_600_lines() -> None:
    files = [EDITOR / "main_window.py", *(EDITOR / "controllers").glob("*.py"), *(EDITOR / "window").glob("*.py")]
    long = {f.name: n for f in files if (n := len(f.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long
