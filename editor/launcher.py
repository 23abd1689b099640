"""The ``flowdesk`` console entry point.

Headless commands (``run``, ``validate``, ...) go to :mod:`engine.cli` without importing
Qt, so they start fast and work on machines with no display; anything else (no
arguments, or a file to open) starts the GUI.
"""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from engine import CLI_COMMANDS

    if args and (args[0] in CLI_COMMANDS or args[0] in ("-h", "--help")):
        from engine import cli_main

        return cli_main(args)
    from editor.app import main as gui_main

    return gui_main(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
