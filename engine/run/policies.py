"""Step policies: one wrapper around any working step (docs/design.md, "Step policies").

A kind whose spec ``works`` has a :class:`~engine.nodes.base.PolicyData` (policy as data on
the node, as LangGraph's ``RetryPolicy``): ``timeoutMs`` limits each attempt, ``errorMode:
retry`` tries again ``maxRetries`` times after ``retryDelayMs`` (doubling), and when the step
still fails, ``errorMode: skip`` lets the branch go on with null, an ``error`` link takes the
message, else the run fails. The scheduler calls :func:`attempts` for a step with a timeout
or retries (a plain step calls ``execute`` directly: no wrapper on the hot path) and
:func:`failed` when a step raised; neither knows any kind.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.llm.base import NODE_RETRIES_ONLY
from engine.nodes.base import DEFAULT_MAX_RETRIES, DEFAULT_RETRY_DELAY_MS, ERROR_HANDLE, NodeError, NodeOutcome
from engine.run.context import RunContext
from engine.run.events import EventType

__all__ = ["has_policy", "attempts", "failed"]

_STEP_RETRY = EventType.STEP_RETRY.value
_STEP_SKIPPED = EventType.STEP_SKIPPED.value
_STEP_END = EventType.STEP_END.value


def has_policy(spec: Any, fields: dict[str, Any]) -> bool:
    """Whether a step needs :func:`attempts` (``fields``: the node data's ``__dict__``)."""
    return bool(spec.works and (fields.get("timeoutMs") or fields.get("errorMode") == "retry"))


async def attempts(ctx: RunContext, spec: Any, node: Any, value: Any) -> Any:
    """A working node's step under its policy: each attempt limited to ``timeoutMs``; with
    ``errorMode: retry``, up to ``maxRetries`` more attempts after ``retryDelayMs`` (doubling),
    each announced by ``step_retry``. Raises NodeError with the last attempt's error.

    With ``errorMode: retry`` this policy is the only retry layer: a model provider's own HTTP
    retries (a 429 or 5xx tried again) are turned off for the step (``NODE_RETRIES_ONLY``), so
    ``maxRetries: 2`` sends at most 3 requests, and each ``step_retry`` says so.
    """
    data = node.data
    timeout = data.timeoutMs
    retries = data.maxRetries if data.maxRetries is not None else DEFAULT_MAX_RETRIES
    tries = 1 + retries if data.errorMode == "retry" else 1
    delay = data.retryDelayMs if data.retryDelayMs is not None else DEFAULT_RETRY_DELAY_MS
    if tries > 1:
        token = NODE_RETRIES_ONLY.set(True)
        try:
            return await _attempts(ctx, spec, node, value, timeout, tries, delay)
        finally:
            NODE_RETRIES_ONLY.reset(token)
    return await _attempts(ctx, spec, node, value, timeout, tries, delay)


async def _attempts(
    ctx: RunContext, spec: Any, node: Any, value: Any, timeout: int | None, tries: int, delay: int
) -> Any:
    attempt = 1
    while True:
        try:
            if timeout:
                return await asyncio.wait_for(spec.execute(ctx, node, value), timeout / 1000)
            return await spec.execute(ctx, node, value)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            message = f"{spec.describe(node)} timed out after {timeout} ms"
        except NodeError as err:
            message = str(err)
        except Exception as err:
            message = f"'{node.title}' failed: {err!r}"
        if attempt >= tries:
            raise NodeError(message)
        attempt += 1
        ctx.emit(
            node.id,
            _STEP_RETRY,
            f"{message} — attempt {attempt} of {tries} in {delay} ms (the node's retry "
            "policy is the only retry: a provider's own HTTP retries are off)",
            {"attempt": attempt, "maxAttempts": tries, "delayMs": delay, "error": message},
        )
        await asyncio.sleep(delay / 1000)
        delay *= 2


def failed(ctx: RunContext, node: Any, message: str, started: float | None = None) -> tuple[Any, str]:
    """A step failed (after its retries): its outcome is recorded, then the node's policy applies.

    Returns ``((output, handle), status)`` for the branch to go on: with ``errorMode: skip``
    (``step_skipped``; null along the normal output) or along the node's ``error`` links
    (the message as the output); else ``(None, "failed")`` after failing the run.
    """
    node_id = node.id
    now = ctx.now()
    ms = round((now - started) * 1000) if started else 0
    if getattr(node.data, "errorMode", None) == "skip":
        ctx.set_outcome(node_id, NodeOutcome.SKIPPED)
        ctx.emit(node_id, _STEP_SKIPPED, message, {"error": message})
        ctx.emit(node_id, _STEP_END, "skipped", {"status": "skipped", "durationMs": ms})
        return (None, "output"), "skipped"
    ctx.set_outcome(node_id, NodeOutcome.FAILED)
    if any(h == ERROR_HANDLE for h, _t in ctx.links_out(node_id)):
        ctx.emit(node_id, _STEP_END, message, {"status": "failed", "durationMs": ms, "handle": ERROR_HANDLE})
        return (message, ERROR_HANDLE), "failed"
    ctx.emit(node_id, _STEP_END, message, {"status": "failed", "durationMs": ms})
    ctx.fail(node_id, message)
    return None, "failed"
