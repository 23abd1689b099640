"""The ``flowdesk`` console entry point.

Headless commands (``run``, ``validate``, ...) go to :mod:`engine.cli` without importing
Qt, so they start fast and work on machines with no display; anything else (no
arguments, or a file to open) starts the GUI.

Ctrl+C at any moment of a command's start is a quiet cancel (exit 4, never a traceback): the
handler below is set while this module loads, before anything slow is imported (``_signal``
is the interpreter's built-in half of :mod:`signal`, which itself imports :mod:`enum`), and
stays until the command sets up its own handling. Only the interpreter's own start-up, before
this module runs, is out of reach.
"""

from __future__ import annotations

import _signal  # built in: no import time, unlike `signal`
import os
import sys

EXIT_CANCELLED = 4  # engine.cli's code for a cancelled run, not imported: it is set up before any import


def _interrupted_early(signum: int, frame: object) -> None:
    """Ctrl+C before a command has set up its own handling (while the engine is imported, the
    file read and checked): nothing has started, so leave at once and quietly, as cancelled."""
    try:
        os.write(2, b"flowdesk: cancelled\n")
    finally:
        os._exit(EXIT_CANCELLED)


def _started_as_flowdesk() -> bool:
    """Whether this module is loading to run flowdesk (``python -m editor.launcher`` or the
    ``flowdesk`` script), not imported by a test or a tool, whose Ctrl+C is its own."""
    if __name__ == "__main__":
        return True
    script = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    return os.path.basename(script).split(".")[0] in ("flowdesk", "flowdesk-script")


_PYTHON_HANDLER = None  # Ctrl+C's handler before ours, given back to the GUI
if _started_as_flowdesk():
    try:
        _PYTHON_HANDLER = _signal.signal(_signal.SIGINT, _interrupted_early)
    except (ValueError, OSError):  # not the main thread
        _PYTHON_HANDLER = None

from collections.abc import Sequence  # noqa: E402 (after the handler, on purpose)
from importlib import import_module  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    global _PYTHON_HANDLER
    args = list(sys.argv[1:] if argv is None else argv)
    # Before the heavy imports: a Ctrl+C during them would print a traceback (already set when
    # this module was loaded to run flowdesk; set here when main() is called otherwise).
    if argv is None and _PYTHON_HANDLER is None:
        try:
            _PYTHON_HANDLER = _signal.signal(_signal.SIGINT, _interrupted_early)
        except ValueError:  # not the main thread
            _PYTHON_HANDLER = None
    # Loaded by name, not imported at the top: after the handler above, and only the half that
    # runs. The command line loads the modules of the one command it runs (engine.cli's
    # docstring); Qt and the window load only for the GUI, never for a headless command.
    cli = import_module("engine.cli")
    if args and (args[0] in cli.COMMANDS or args[0] in ("-h", "--help", "--version")):
        try:
            code = cli.main(args)
            if argv is None:  # the flowdesk process itself: it exits now
                cli.before_exit(code)
            return code
        except KeyboardInterrupt:  # in the instant after a run's own handling ended: as cancelled
            os.write(2, b"flowdesk: cancelled\n")
            return EXIT_CANCELLED
    if _PYTHON_HANDLER is not None:
        _signal.signal(_signal.SIGINT, _PYTHON_HANDLER)  # the GUI keeps Python's own Ctrl+C handling
    # before Qt loads: Qt aborts when its platform plugin cannot load
    problem = import_module("editor.startup_check").startup_problem()
    if problem:
        sys.stderr.write(problem)
        return 2
    return import_module("editor.app").main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
