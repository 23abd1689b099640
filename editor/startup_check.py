"""Why the editor would not start, said before Qt is loaded (Qt aborts the process instead).

On Linux, Qt's X11 platform plugin (xcb) needs a dozen system libraries that a stock desktop
may lack (``libxcb-cursor0`` above all, since Qt 6.5); without them Qt prints "no Qt platform
plugin could be initialized" and aborts. :func:`startup_problem` looks the libraries up first
(one ``ldconfig -p``, plus ``LD_LIBRARY_PATH``) and returns a message naming the missing ones
and the commands that install them on Debian/Ubuntu and Fedora, or None when nothing is
missing. The lists are what PySide6's ``libqxcb.so``, ``libQt6XcbQpa``, ``libQt6Gui`` and
``libQt6DBus`` link against (``readelf -d``). This module imports no Qt; the command-line
sub-commands never come here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from functools import lru_cache

__all__ = ["GUI_LIBS", "XCB_LIBS", "library_present", "needs_xcb", "missing_libraries", "startup_problem"]

# soname: (Debian/Ubuntu package, Fedora package)
GUI_LIBS: dict[str, tuple[str, str]] = {
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libX11.so.6": ("libx11-6", "libX11"),
}
XCB_LIBS: dict[str, tuple[str, str]] = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
}


@lru_cache(maxsize=1)
def _known_sonames() -> frozenset[str] | None:
    """Every library the dynamic linker knows (``ldconfig -p`` and ``LD_LIBRARY_PATH``); None if unknowable."""
    names: set[str] = set()
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.access(p, os.X_OK)), None
    )
    if ldconfig is None:
        return None
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines()[1:]:
        name = line.strip().split(" ", 1)[0]
        if name:
            names.add(name)
    for folder in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if folder and os.path.isdir(folder):
            names.update(os.listdir(folder))
    return frozenset(names) if names else None


def library_present(soname: str) -> bool:
    """Whether the dynamic linker would find ``soname`` (True when that cannot be told)."""
    known = _known_sonames()
    return True if known is None else soname in known  # no ldconfig (musl, Nix...): do not guess "missing"


def needs_xcb(env: Mapping[str, str]) -> bool:
    """Whether Qt would use its X11 plugin: asked for (``QT_QPA_PLATFORM``), or the default outside Wayland."""
    asked = env.get("QT_QPA_PLATFORM", "").strip()
    if asked:
        return asked.split(";")[0].split(":")[0].strip() == "xcb"
    return not (env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE", "").lower() == "wayland")


def missing_libraries(
    env: Mapping[str, str], present: Callable[[str], bool] | None = None
) -> dict[str, tuple[str, str]]:
    """The libraries the editor needs here and the linker does not know, with their packages."""
    present = present or library_present
    wanted = dict(GUI_LIBS)
    if needs_xcb(env):
        wanted.update(XCB_LIBS)
    return {so: pkgs for so, pkgs in wanted.items() if not present(so)}


def startup_problem(
    env: Mapping[str, str] | None = None, present: Callable[[str], bool] | None = None, platform: str | None = None
) -> str | None:
    """A message saying why the editor cannot start here, or None (always None off Linux)."""
    env = os.environ if env is None else env
    if (platform or sys.platform) != "linux":
        return None
    asked = env.get("QT_QPA_PLATFORM", "").strip()
    if needs_xcb(env) and not env.get("DISPLAY") and not asked:
        return (
            "flowdesk: the editor needs a display, and none is set (no DISPLAY or WAYLAND_DISPLAY).\n"
            "The command-line tools work without one: flowdesk run FILE, flowdesk validate FILE "
            "(see flowdesk --help).\n"
        )
    missing = missing_libraries(env, present)
    if not missing:
        return None
    apt = " ".join(dict.fromkeys(p[0] for p in missing.values()))
    dnf = " ".join(dict.fromkeys(p[1] for p in missing.values()))
    plugin = "Qt's X11 platform plugin (xcb)" if any(so in XCB_LIBS for so in missing) else "Qt"
    return (
        f"flowdesk: the editor cannot start: {plugin} needs system libraries that are not installed:\n"
        f"  {', '.join(missing)}\n"
        "Install them, then start flowdesk again:\n"
        f"  Debian/Ubuntu: sudo apt install {apt}\n"
        f"  Fedora:        sudo dnf install {dnf}\n"
        "The command-line tools work without them: flowdesk run FILE, flowdesk validate FILE "
        "(see flowdesk --help).\n"
    )
