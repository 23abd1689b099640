"""What the sandboxes raise: a step's failure with the line of the node's own code.

All derive from :class:`~engine.nodes.base.NodeError`, so a kind lets them through and the
run's step policy (retries, the ``error`` handle) decides.
"""

from __future__ import annotations

from engine.nodes.base import NodeError

__all__ = ["CodeError", "CodeUnavailable", "CodeTimeout", "CodeMemoryError", "EXTRA_HINT"]

#: How the product tells a user to get the sandboxes.
EXTRA_HINT = "install the `code` extra: pip install 'flowdesk[code]'"


class CodeError(NodeError):
    """The code failed. ``line`` counts lines of the node's own code (None when unknown);
    the message starts ``line N: `` when it is known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}" if line else message)


class CodeUnavailable(NodeError):
    """The sandbox's runtime (pydantic-monty, Deno) is not installed."""


class CodeTimeout(CodeError):
    """The code ran past its time limit and was stopped."""


class CodeMemoryError(CodeError):
    """The code went past its memory limit and was stopped (the message says "memory")."""
