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
    # Imported here, on purpose: after the handler above, and only the command line (engine.cli
    # loads the modules of the one command that runs; see its docstring).
    from engine import CLI_COMMANDS, cli_main

    if args and (args[0] in CLI_COMMANDS or args[0] in ("-h", "--help", "--version")):
        return cli_main(args)
    if previous is not None:
        signal.signal(signal.SIGINT, previous)  # the GUI keeps Python's own Ctrl+C handling
    from editor.app import main as gui_main  # Qt and the window: the GUI only, never a headless command

    return gui_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
