"""The activity that runs one agent step's model call on a worker.

The workflow sends the invocation (prompts, model, the subagent tree) and the run's provider
settings (``provider``/``model``/``baseUrl`` names, never keys); the worker builds the provider
with its own environment and keyring (:func:`engine.make_resolver`). Subagent calls run here
too, inside the same activity, through the engine's own subagent path (so their
``subagent_call_*`` events have the usual fields); every event the call makes (streamed text,
subagent calls) is returned with the answer and logged by the workflow in order.

While the call lasts the activity heartbeats, so a worker that dies is noticed within the
heartbeat timeout and the step is retried elsewhere; a cancelled step (the run was cancelled)
cancels the call's task, which closes its HTTP request.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ..llm.base import AgentInvocation, LLMError, LLMResult, SubagentSpec
from ..llm.registry import make_resolver
from ..nodes.agent import ProviderCall
from ..runtime import Run, uuid_ids
from . import AGENT_ACTIVITY

__all__ = ["agent_call", "invocation_to_json", "invocation_from_json", "HEARTBEAT_EVERY"]

HEARTBEAT_EVERY = 1.0  # seconds between heartbeats (the SDK throttles what reaches the server)
_resolvers: dict[tuple, Any] = {}


def invocation_to_json(inv: AgentInvocation) -> dict[str, Any]:
    return asdict(inv)


def _subagent(d: dict[str, Any]) -> SubagentSpec:
    return SubagentSpec(**{**d, "children": [_subagent(c) for c in d.get("children") or ()]})


def invocation_from_json(d: dict[str, Any]) -> AgentInvocation:
    return AgentInvocation(**{**d, "subagents": [_subagent(c) for c in d.get("subagents") or ()]})


def _resolver(meta: dict[str, Any]) -> Any:
    key = (meta.get("provider"), meta.get("model"), meta.get("baseUrl"))
    resolver = _resolvers.get(key)
    if resolver is None:
        resolver = _resolvers[key] = make_resolver(key[0], model=key[1], base_url=key[2])
    return resolver


class _CallHost:
    """What a provider call needs of a run (emit, subagents, ids), recording events to return."""

    _call_subagent = Run._call_subagent  # the engine's own subagent path, events and all

    def __init__(self, resolve: Any) -> None:
        self._resolve = resolve
        self._clock = time.time
        self._id_source = uuid_ids
        self._call_counter = 0
        self.delta_interval = 0.05
        self.events: list[list[Any]] = []

    def _emit(self, node_id: str, type: str, content: str = "", extra: dict[str, Any] | None = None,
              ts: float | None = None, extra_json: str | None = None) -> None:
        from ..events import _encode

        self.events.append([node_id, str(type), content, _encode(extra) if extra else extra_json])


@activity.defn(name=AGENT_ACTIVITY)
async def agent_call(request: dict[str, Any]) -> dict[str, Any]:
    """One model call: ``{text, usage, model, events}``; a model failure is a non-retryable
    ``LLMError`` application error (the node's own policy decides), with the events so far."""
    inv = invocation_from_json(request["invocation"])
    try:
        resolve = _resolver(request.get("meta") or {})
    except LLMError as err:
        raise ApplicationError(str(err), [], type="LLMError", non_retryable=True) from None
    host = _CallHost(resolve)
    call = ProviderCall(host, inv.node_id, 0, None)
    task = asyncio.ensure_future(resolve(inv).complete(inv, call))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_EVERY)
            if done:
                break
            activity.heartbeat()
        result = task.result()
        if not isinstance(result, LLMResult):
            raise LLMError(f"the provider returned {type(result).__name__}, not an answer")
    except asyncio.CancelledError:
        task.cancel()  # closes the provider's HTTP request
        try:
            await task
        except BaseException:
            pass
        raise
    except LLMError as err:
        call.flush()
        raise ApplicationError(str(err), host.events, type="LLMError", non_retryable=True) from None
    except Exception as err:  # a provider bug: reported like the local engine does
        call.flush()
        raise ApplicationError(f"Unexpected error from the model provider: {err!r}", host.events, type="LLMError",
                               non_retryable=True) from None
    call.flush()
    return {"text": result.text, "usage": result.usage, "model": result.model, "events": host.events}
