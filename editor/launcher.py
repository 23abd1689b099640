"""The ``flowdesk`` console entry point.

Headless commands (``run``, ``validate``, ...) go to :mod:`engine.cli` without importing
Qt, so they start fast and work on machines with no display; anything else (no
arguments, or a file to open) starts the GUI.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from importlib import import_module

EXIT_CANCELLED = 4  # engine.cli's code for a cancelled run, not imported: it is set up before any import


def _interrupted_early(signum: int, frame: object) -> None:
    """Ctrl+C before a command has set up its own handling (while the engine is imported, the
    file read and checked): nothing has started, so leave at once and quietly, as cancelled."""
    try:
        os.write(2, b"flowdesk: cancelled\n")
    finally:
        os._exit(EXIT_CANCELLED)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # First, before the heavy imports: a Ctrl+C during them would print a traceback.
    previous = None
    if argv is None:
        try:
            previous = signal.signal(signal.SIGINT, _interrupted_early)
        except ValueError:  # not the main thread
            previous = None
    # Loaded by name, not imported at the top: after the handler above, and only the half that
    # runs. The command line loads the modules of the one command it runs (engine.cli's
    # docstring); Qt and the window load only for the GUI, never for a headless command.
    cli = import_module("engine.cli")
    if args and (args[0] in cli.COMMANDS or args[0] in ("-h", "--help", "--version")):
        return cli.main(args)
    if previous is not None:
        signal.signal(signal.SIGINT, previous)  # the GUI keeps Python's own Ctrl+C handling
    # before Qt loads: Qt aborts when its platform plugin cannot load
    problem = import_module("editor.startup_check").startup_problem()
    if problem:
        sys.stderr.write(problem)
        return 2
    return import_module("editor.app").main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
