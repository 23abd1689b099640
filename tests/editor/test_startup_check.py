"""Qt start-up failures explained: missing xcb libraries are named, with the apt and dnf
commands, before Qt is loaded (Qt would abort); the CLI never needs them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from editor.startup_check import GUI_LIBS, XCB_LIBS, missing_libraries, needs_xcb, startup_problem

ROOT = Path(__file__).resolve().parents[2]


def without(*missing: str):
    return lambda soname: soname not in missing


def test_missing_xcb_libraries_are_named_with_the_install_commands():
    text = startup_problem(
        {"DISPLAY": ":0"},
        without("libxcb-cursor.so.0", "libxkbcommon-x11.so.0", "libxcb-randr.so.0", "libxcb-shape.so.0"),
        platform="linux",
    )
    assert text is not None
    assert "libxcb-cursor.so.0, libxkbcommon-x11.so.0, libxcb-randr.so.0, libxcb-shape.so.0" in text
    assert "sudo apt install libxcb-cursor0 libxkbcommon-x11-0 libxcb-randr0 libxcb-shape0\n" in text
    assert "sudo dnf install xcb-util-cursor libxkbcommon-x11 libxcb\n" in text  # one package, named once
    assert "xcb" in text and "flowdesk run FILE" in text


def test_nothing_missing_nothing_said():
    assert startup_problem({"DISPLAY": ":0"}, lambda _so: True, platform="linux") is None
    assert startup_problem({"DISPLAY": ":0"}, without("libxcb-cursor.so.0"), platform="darwin") is None


def test_the_platform_decides_which_libraries_count():
    assert needs_xcb({"DISPLAY": ":0"}) and needs_xcb({"QT_QPA_PLATFORM": "xcb"})
    assert not needs_xcb({"QT_QPA_PLATFORM": "offscreen"})
    assert not needs_xcb({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"})
    only_gui = missing_libraries({"QT_QPA_PLATFORM": "offscreen"}, lambda _so: False)
    assert set(only_gui) == set(GUI_LIBS)  # offscreen needs no xcb library
    assert set(missing_libraries({"DISPLAY": ":0"}, lambda _so: False)) == set(GUI_LIBS) | set(XCB_LIBS)
    egl = startup_problem({"QT_QPA_PLATFORM": "offscreen"}, without("libEGL.so.1"), platform="linux")
    assert egl is not None and "apt install libegl1" in egl and "dnf install libglvnd-egl" in egl


def test_no_display_is_said_plainly():
    text = startup_problem({}, lambda _so: True, platform="linux")
    assert text is not None and "needs a display" in text


def run_launcher(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env
    )


def test_flowdesk_exits_2_before_loading_qt():
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(DISPLAY=":0", PYTHONPATH=str(ROOT))
    res = run_launcher(
        """
        import sys
        import editor.startup_check as check
        check.library_present = lambda soname: soname != "libxcb-cursor.so.0"  # as on a stock desktop
        from editor.launcher import main
        code = main([])
        assert not any(m.startswith("PySide6") for m in sys.modules), "Qt was loaded"
        sys.exit(code)
        """,
        env,
    )
    assert res.returncode == 2, res.stderr
    assert "libxcb-cursor.so.0" in res.stderr and "apt install libxcb-cursor0" in res.stderr
    assert "dnf install xcb-util-cursor" in res.stderr and "Traceback" not in res.stderr


def test_cli_commands_never_need_qt_or_the_check():
    res = run_launcher(
        f"""
        import sys
        from editor.launcher import main
        code = main(["validate", {str(ROOT / "samples" / "hello.flow.json")!r}])
        assert not any(m.startswith("PySide6") or m == "editor.startup_check" for m in sys.modules)
        sys.exit(code)
        """,
        {**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
