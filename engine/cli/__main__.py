"""``python -m engine.cli``: the command line."""

import sys

from engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
