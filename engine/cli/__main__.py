"""``python -m engine.cli``: the command line."""

import sys

from engine.cli import before_exit, main

if __name__ == "__main__":
    code = main()
    before_exit(code)
    sys.exit(code)
