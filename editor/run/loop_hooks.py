"""What qasync's event loop does not do by itself, done for the run bridge.

qasync's ``run_forever`` does not install asyncio's async-generator hooks, so a streamed
HTTP response left unfinished (a cancelled run) would be finalised by the garbage collector
outside the loop ("async generator ignored GeneratorExit"). :func:`ensure_asyncgen_hooks`
installs the running loop's hooks when none are set, as ``BaseEventLoop.run_forever`` does,
so such generators are closed on the loop. Split from :mod:`editor.run.bridge`.
"""

from __future__ import annotations

import asyncio
import sys

__all__ = ["ensure_asyncgen_hooks"]


def ensure_asyncgen_hooks(loop: asyncio.AbstractEventLoop) -> None:
    """Let ``loop`` finalise async generators (qasync does not install the hooks itself)."""
    hooks = sys.get_asyncgen_hooks()
    if hooks.finalizer is None and hasattr(loop, "_asyncgen_finalizer_hook"):
        sys.set_asyncgen_hooks(
            firstiter=loop._asyncgen_firstiter_hook,  # type: ignore[attr-defined]
            finalizer=loop._asyncgen_finalizer_hook,
        )  # type: ignore[attr-defined]
