"""What a ``code`` or ``script`` step's sandboxed code may ask of Flowdesk: :class:`StepHost`.

One object per step, bound to the run (``RunContext``) and the node. It offers:

* ``llm(prompt, input=None, parse_json=False)``: the node's provider (``provider``/``model`` of
  its data), like an agent with no tools; the answer is logged as ``llm_response``;
* ``run_flow(ref, arguments, by_name)``: a library flow run nested, as the ``flow`` kind (by id)
  or the ``action`` kind (by name) runs one;
* ``fetch(url)`` and ``search(query)``: the ``fetch`` kind's reading of a page and the web
  search backend (SearxNG), both bounded by the workflow's ``permissions.network``;
* :meth:`taskflow_api`: those four as TypeAgent's ``TaskFlowScriptAPI`` (``callAction``,
  ``queryLLM``, ``webSearch``, ``webFetch``), each returning ``{text, data, error?}`` and each
  call logged as ``api_call_start``/``api_call_end`` with ``{method, args}`` (secrets masked).

Permissions (engine/graph/permissions.py): network and files are closed when the workflow has
no ``permissions`` (sandboxes deny by default); flows are open then, as for the ``flow`` kind.
A refusal raises :class:`~engine.graph.permissions.PermissionDenied`, logs ``permission_denied``
``{what, field}`` on the node and is remembered in :attr:`StepHost.denied`: the step fails with
it even when the script catches the error.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from engine.errors import FlowdeskError
from engine.graph.permissions import Access, PermissionDenied, access_for
from engine.llm.base import AgentInvocation, LLMError, LLMResult, NoToolsContext
from engine.llm.config import searxng_url
from engine.llm.tools import WebSearch
from engine.nodes.base import NodeError, as_text
from engine.nodes.http_request import WebRequestError, own_client
from engine.nodes.web_fetch import fetch_page
from engine.run.events import EventType, RunStatus

__all__ = ["StepHost", "sandbox_access", "flow_access", "unreachable_hosts", "network_warning"]


def _base(ctx: Any) -> Path | None:
    path = getattr(ctx, "path", None)
    return Path(path).parent if path else None


def sandbox_access(ctx: Any) -> Access:
    """What a sandbox may reach of the network and the files (nothing without ``permissions``)."""
    return access_for(getattr(ctx, "workflow", None), open_by_default=False, base=_base(ctx))


def flow_access(ctx: Any) -> Access:
    """Which library flows a step may run (any without ``permissions``, as the ``flow`` kind)."""
    return access_for(getattr(ctx, "workflow", None), open_by_default=True, base=_base(ctx))


_LITERAL_URL = re.compile(r"""https?://([A-Za-z0-9.-]+(?::\d+)?)""")


def unreachable_hosts(source: str, access: Access) -> list[str]:
    """The hosts of the literal ``http(s)://`` URLs in code that ``access`` does not grant (for
    validation's ``permission_network`` warning)."""
    out: list[str] = []
    for host in _LITERAL_URL.findall(source or ""):
        if host not in out and not access.allows_network(f"http://{host}"):
            out.append(host)
    return out


def _json_answer(text: str) -> Any:
    """A model's answer read as JSON (a fenced block or the first JSON value in it)."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    candidate = (fenced.group(1) if fenced else text).strip()
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    for opener in ("[", "{"):
        start = candidate.find(opener)
        if start >= 0:
            try:
                return json.JSONDecoder().raw_decode(candidate[start:])[0]
            except ValueError:
                continue
    raise ValueError("the model's answer is not JSON")


def network_warning(checks: Any, node: Any, source: str) -> None:
    """``permission_network`` (a warning) for each literal host in ``source`` a sandbox of this
    workflow could not reach (none without ``permissions``)."""
    access = sandbox_access(_Holder(getattr(checks, "workflow", None)))
    hosts = unreachable_hosts(source, access)
    if hosts:
        where = "the workflow has no permissions" if access.permissions is None else "permissions.network does not list"
        checks.warning(
            "permission_network",
            f"{checks.label(node)} requests {', '.join(hosts)}, but {where} "
            + ("(a sandbox reaches no network without them)." if access.permissions is None else "it."),
        )


class _Holder:
    """A stand-in context holding only a workflow (validation has no run)."""

    def __init__(self, workflow: Any) -> None:
        self.workflow = workflow
        self.path = None


class StepHost:
    """The host side of one code/script step (see the module docstring)."""

    def __init__(self, ctx: Any, node: Any, secrets: list[str] | None = None) -> None:
        self.ctx = ctx
        self.node = node
        self.secrets = list(secrets or [])
        self.access = sandbox_access(ctx)
        self.flows = flow_access(ctx)
        self.denied: PermissionDenied | None = None
        self.calls = 0

    # ------------------------------------------------------------------ helpers
    def mask(self, value: Any) -> Any:
        return self.ctx.mask(value, self.secrets) if self.secrets else value

    def deny(self, err: PermissionDenied) -> PermissionDenied:
        """Log a refusal on the node and remember it (the step fails with it)."""
        if self.denied is None:
            self.denied = err
        self.ctx.emit(self.node.id, EventType.PERMISSION_DENIED, str(err), {"what": err.what, "field": err.field})
        return err

    def check_network(self, url: str) -> None:
        try:
            self.access.check_network(url)
        except PermissionDenied as err:
            raise self.deny(err) from None

    def log(self, stream: str, text: str) -> None:
        """A line the code printed: a ``code_log`` event (secrets masked)."""
        text = self.mask(text)
        self.ctx.emit(self.node.id, EventType.CODE_LOG, text, {"stream": stream, "text": text})

    # ------------------------------------------------------------------ what code may call
    async def llm(self, prompt: Any, input: Any = None, parse_json: bool = False, model: Any = None) -> Any:
        """The node's provider answers ``prompt`` (with ``input`` after it); the text, or its
        JSON with ``parse_json``."""
        data = self.node.data
        content = as_text(prompt)
        if input not in (None, ""):
            content = f"{content}\n\n{as_text(input)}"
        inv = AgentInvocation(
            self.node.id,
            getattr(data, "label", "") or self.node.id,
            "Answer the request directly; reply with JSON only when asked for JSON." if parse_json else "",
            content,
            str(model or getattr(data, "model", "") or ""),
            "low",
            {"web_search": False, "subagents": False},
            [],
            getattr(data, "provider", None) or None,
        )
        try:
            provider = self.ctx.resolve(inv)
            result = await provider.complete(inv, NoToolsContext(self.node.id))
            if not isinstance(result, LLMResult):
                raise LLMError(f"the provider returned {type(result).__name__}, not an answer")
        except LLMError as err:
            self.ctx.emit(self.node.id, EventType.LLM_ERROR, str(err))
            raise NodeError(f"the model call failed: {err}") from None
        extra: dict[str, Any] = {}
        if result.usage:
            extra["usage"] = result.usage
        if result.model:
            extra["model"] = result.model
        self.ctx.emit(self.node.id, EventType.LLM_RESPONSE, self.mask(result.text), extra or None)
        return _json_answer(result.text) if parse_json else result.text

    async def run_flow(self, ref: Any, arguments: Any = None, by_name: bool = False) -> Any:
        """A library flow run nested with ``arguments`` as its variables; its result."""
        ref = str(ref or "").strip()
        what = f"the action {ref!r}" if by_name else f"the flow {ref!r}"
        if not ref:
            raise NodeError("no flow named: give a library flow's id")
        if arguments is not None and not isinstance(arguments, dict):
            raise NodeError(f"the arguments of {what} must be an object of variable names and values")
        library = self.ctx.library() if hasattr(self.ctx, "library") else None
        if library is None or not hasattr(self.ctx, "child_run"):
            raise NodeError(f"{what} cannot run here: this worker runs no nested flows")
        entry = library.resolve(ref, base=getattr(self.ctx, "path", None), by_name=by_name)
        if entry is None:
            raise NodeError(f"there is no library flow for {what}")
        if not any(self.flows.allows_flow(name) for name in {ref, entry.id, entry.name}):
            raise self.deny(PermissionDenied(f"the flow {entry.id!r}", "flows"))
        try:
            workflow = library.load_path(entry.path)
            child = self.ctx.child_run(workflow, entry.path, self.node.id, dict(arguments or {}))
        except FlowdeskError as err:
            raise NodeError(f"the flow '{entry.name}' cannot start: {err}") from None
        try:
            status = await child.start()
        except asyncio.CancelledError:
            child.cancel()
            raise
        if status == RunStatus.PAUSED:
            child.cancel("A flow called from code cannot wait for an approval.")
            raise NodeError(f"the flow '{entry.name}' waited for an approval, which a call from code cannot do")
        if status != RunStatus.COMPLETED:
            raise NodeError(f"the flow '{entry.name}' {status}: {child.error or 'no reason given'}")
        return child.result

    async def fetch(self, url: Any) -> Any:
        """The page at ``url`` as the ``fetch`` kind reads it (Markdown)."""
        url = str(url or "").strip()
        self.check_network(url)
        try:
            page = await fetch_page(
                {"url": url, "format": "markdown"},
                secrets=self.secrets,
                check_target=self.check_network,
                on_event=self._http_event,
            )
        except WebRequestError as err:
            raise NodeError(f"fetching {url} failed: {err}") from None
        return page

    async def search(self, query: Any) -> str:
        """The web search backend's top results as text (``webSearch.searxngUrl``)."""
        backend = searxng_url()
        if not backend:
            raise NodeError("no web search backend is configured (webSearch.searxngUrl in the settings)")
        self.check_network(backend)
        async with own_client() as client:
            return await WebSearch(backend, client)(str(query or ""))

    def _http_event(self, kind: str, data: dict[str, Any]) -> None:
        content = f"{data.get('method', '')} {data.get('url', '')}" if kind == "http_request" else ""
        self.ctx.emit(self.node.id, kind, self.mask(content), self.mask(data))

    # ------------------------------------------------------------------ TypeAgent's TaskFlowScriptAPI
    def taskflow_api(self) -> dict[str, Any]:
        """``callAction``, ``queryLLM``, ``webSearch``, ``webFetch`` for :func:`~engine.code.deno.run_deno`."""

        async def call_action(schema: Any = "", action: Any = "", params: Any = None) -> Any:
            result = await self.run_flow(action, params if isinstance(params, dict) else {}, by_name=True)
            return {"text": as_text(result), "data": result}

        async def query_llm(prompt: Any = "", options: Any = None) -> Any:
            opts = options if isinstance(options, dict) else {}
            parse = bool(opts.get("parseJson"))
            text = await self.llm(prompt, opts.get("input"))  # (a recipe's model hint is not ours to use)
            if not parse:
                return {"text": text, "data": text}
            try:
                return {"text": text, "data": _json_answer(text)}
            except ValueError as err:
                return {"text": text, "data": None, "error": str(err)}

        async def web_search(query: Any = "") -> Any:
            text = await self.search(query)
            return {"text": text, "data": text}

        async def web_fetch(url: Any = "") -> Any:
            page = await self.fetch(url)
            return {
                "text": page.output,
                "data": {"url": page.url, "title": page.title, "status": page.status, "truncated": page.truncated},
            }

        methods = {"callAction": call_action, "queryLLM": query_llm, "webSearch": web_search, "webFetch": web_fetch}
        return {name: self._logged(name, fn) for name, fn in methods.items()}

    def _logged(self, method: str, fn: Any) -> Any:
        async def call(*args: Any) -> Any:
            self.calls += 1
            shown = self.mask(list(args))
            text = json.dumps(shown, ensure_ascii=False)[:2000]
            node_id = self.node.id
            self.ctx.emit(
                node_id, EventType.API_CALL_START, f"{method}({text[1:-1]})", {"method": method, "args": shown}
            )
            try:
                result = await fn(*args)
            except PermissionDenied as err:
                self.ctx.emit(
                    node_id, EventType.API_CALL_END, str(err), {"method": method, "args": shown, "error": str(err)}
                )
                raise
            except (NodeError, FlowdeskError) as err:
                message = str(self.mask(str(err)))
                self.ctx.emit(
                    node_id, EventType.API_CALL_END, message, {"method": method, "args": shown, "error": message}
                )
                return {"text": "", "data": None, "error": message}
            result = self.mask(result)
            self.ctx.emit(
                node_id,
                EventType.API_CALL_END,
                as_text(result.get("text") if isinstance(result, dict) else result)[:2000],
                {"method": method, "args": shown},
            )
            return result

        return call
