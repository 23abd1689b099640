"""The root of the engine's errors.

Every error the engine raises on purpose derives from :class:`FlowdeskError`, so a caller
that wants "anything the engine refused" catches one class. Each error keeps the builtin
base it had before (``ValueError`` for bad input, ``RuntimeError`` for a wrong state), so
code that catches those still works.
"""

from __future__ import annotations

__all__ = ["FlowdeskError"]


class FlowdeskError(Exception):
    """Base class of every error the engine raises on purpose (load, run state, provider, store)."""
