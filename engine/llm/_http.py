"""HTTP plumbing shared by the HTTP providers: retries, error mapping, SSE, the tool loop.

Invariants
* Every request has connect/read/write/pool timeouts (``httpx.Timeout``); a read timeout
  bounds the gap between two chunks of a stream, so a stalled server cannot hang a run.
* Retries happen only before a response body is consumed: on HTTP 429 and 5xx, at most
  ``RetryPolicy.max_retries`` times, with exponential backoff and jitter, or the server's
  ``Retry-After`` when it gives one. A connection that cannot be opened (nothing was
  sent yet) is tried again twice by httpx's transport. Nothing else is retried.
* A response stream is always closed when its ``async with`` block exits, also on
  cancellation, so cancelling a run closes the HTTP connection at once.
* Every failure surfaces as :class:`LLMError` with a message for people (the URL for
  connection problems, what to check for authentication or model errors); secrets are
  redacted from anything a server echoes back.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from engine.graph.templates import SECRET_MASK
from engine.llm.base import (
    NODE_RETRIES_ONLY,
    AgentInvocation,
    DirectOutput,
    LLMError,
    LLMResult,
    ModelNotFound,
    ProviderConfigError,
    ProviderContext,
    ProviderUnavailable,
)
from engine.llm.config import HttpSettings, is_local_url, redact, split_url_credentials
from engine.llm.tools import Tool, ToolApprovalPending, ToolCall, WebSearch, build_tools, run_tool_calls
from engine.llm.vision import model_accepts_images

CONNECT_RETRIES = 2

__all__ = ["RetryPolicy", "make_timeout", "post_stream", "iter_sse", "HttpChatProvider", "Turn", "parse_retry_after"]

log = logging.getLogger("flowdesk.llm")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before retrying a 429/5xx answer (data, so tests can shrink it)."""

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0  # a server asking for a longer wait is not waited for
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, compare=False)

    @classmethod
    def from_settings(cls, s: HttpSettings) -> RetryPolicy:
        return cls(max_retries=max(0, s.maxRetries), base_delay=s.retryBaseDelay, max_delay=s.retryMaxDelay)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(0.0, retry_after)
        backoff = min(self.max_delay, self.base_delay * (2**attempt))
        return backoff * random.uniform(0.5, 1.0)  # "equal jitter": spread clients that failed together


def make_timeout(s: HttpSettings) -> httpx.Timeout:
    return httpx.Timeout(connect=s.connectTimeout, read=s.readTimeout, write=s.writeTimeout, pool=s.connectTimeout)


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _error_detail(body: bytes, *secrets: str | None) -> tuple[str, str]:
    """(message, code) from an error body in the OpenAI or Anthropic shape, or its text."""
    text = body.decode("utf-8", "replace").strip()
    message, code = text, ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            message = str(err.get("message") or err.get("detail") or text)
            code = str(err.get("code") or err.get("type") or "")
        elif isinstance(err, str):
            message = err
    if len(message) > 300:
        message = message[:297] + "..."
    return redact(message, *secrets), code


def _describe_transport_error(
    err: httpx.HTTPError, url: str, secret: str | None, timeout: httpx.Timeout | None = None
) -> LLMError:
    detail = redact(str(err) or type(err).__name__, secret)
    if isinstance(err, httpx.ConnectTimeout):
        after = f" after {timeout.connect:g} s" if timeout and timeout.connect else ""
        return ProviderUnavailable(f"Timed out connecting to {url}{after}. Is the server reachable?")
    if isinstance(err, httpx.ConnectError):
        return ProviderUnavailable(
            f"Could not connect to {url}: connection refused or host unreachable ({detail}). "
            "Is the server running, and is the base URL right?"
        )
    if isinstance(err, httpx.TimeoutException):
        quiet = f"sent nothing for {timeout.read:g} s" if timeout and timeout.read else "did not answer in time"
        return LLMError(
            f"Timed out waiting for {url}: the server {quiet} ({type(err).__name__}). "
            "Raise http.readTimeout in the settings for slow models."
        )
    if isinstance(err, (httpx.RemoteProtocolError, httpx.ReadError)):
        return LLMError(f"The connection to {url} was cut before the answer was complete ({detail}).")
    return LLMError(f"HTTP error talking to {url}: {detail}")


async def _send(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    *,
    policy: RetryPolicy,
    model: str,
    secret: str | None,
) -> httpx.Response:
    """POST ``payload``; a streaming response with status < 400, after retries."""
    attempt = 0
    while True:
        request = client.build_request("POST", url, json=payload, headers=headers)
        log.debug("POST %s model=%s attempt=%d", url, model, attempt + 1)
        try:
            resp = await client.send(request, stream=True)
        except httpx.HTTPError as err:
            raise _describe_transport_error(err, url, secret, client.timeout) from None
        status = resp.status_code
        if status < 400:
            return resp
        try:
            body = await resp.aread()
        except httpx.HTTPError:
            body = b""
        finally:
            await resp.aclose()
        message, code = _error_detail(body, secret)
        if status in (401, 403):
            raise LLMError(
                f"Authentication failed at {url} (HTTP {status}): {message}. Check the API key "
                "(environment variable or OS keyring).",
                status=status,
            )
        if status == 404 or code == "model_not_found":
            raise ModelNotFound(
                f"Model '{model}' was not found at {url} (HTTP {status}): {message}. Check the model "
                "name and the base URL.",
                model=model,
                status=status,
            )
        if status == 429 or status >= 500:
            retry_after = parse_retry_after(resp.headers)
            own_retries = 0 if NODE_RETRIES_ONLY.get() else policy.max_retries  # the node's policy retries instead
            if attempt < own_retries and (retry_after is None or retry_after <= policy.max_retry_after):
                delay = policy.delay(attempt, retry_after)
                log.info(
                    "HTTP %d from %s; retrying in %.2f s (%d/%d)", status, url, delay, attempt + 1, policy.max_retries
                )
                attempt += 1
                await policy.sleep(delay)
                continue
            tries = attempt + 1
            if status == 429:
                raise LLMError(
                    f"Rate limited by {url}: still HTTP 429 after {tries} attempt(s): {message}",
                    retryable=True,
                    status=status,
                )
            raise LLMError(
                f"The server at {url} failed with HTTP {status} after {tries} attempt(s): {message}",
                retryable=True,
                status=status,
            )
        raise LLMError(f"The server at {url} rejected the request (HTTP {status}): {message}", status=status)


@asynccontextmanager
async def post_stream(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str],
    *,
    policy: RetryPolicy,
    model: str,
    secret: str | None,
) -> AsyncIterator[httpx.Response]:
    """A response to read (streamed); errors while reading it become :class:`LLMError`; always closed."""
    resp = await _send(client, url, payload, headers, policy=policy, model=model, secret=secret)
    try:
        yield resp
    except httpx.HTTPError as err:
        raise _describe_transport_error(err, url, secret, client.timeout) from None
    finally:
        await resp.aclose()


async def iter_sse(resp: httpx.Response) -> AsyncIterator[tuple[str, str]]:
    """(event, data) pairs of a ``text/event-stream`` body (W3C SSE framing)."""
    event = ""
    data: list[str] = []
    async for line in resp.aiter_lines():
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event or "message", "\n".join(data)


def is_event_stream(resp: httpx.Response) -> bool:
    return "text/event-stream" in resp.headers.get("content-type", "")


def malformed(url: str, what: str) -> LLMError:
    return LLMError(f"Malformed response from {url}: {what}.")


def token_usage(prompt: Any, completion: Any) -> dict[str, int] | None:
    """A server's token counts as ``{prompt_tokens, completion_tokens}`` (the shape every
    provider reports); a count it did not give, or that is not a number, is left out."""
    out = {}
    for key, value in (("prompt_tokens", prompt), ("completion_tokens", completion)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = int(value)
    return out or None


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:12]}"


MIN_MASKED_SECRET = 8


def mask_known(text: str, secrets: list[str]) -> str:
    """``text`` with each secret replaced by ``••••`` (as ``{{secrets.*}}`` are masked)."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, SECRET_MASK)
    return text


class _MaskingContext:
    """A :class:`ProviderContext` whose streamed text has the provider's own secrets masked (a
    server that echoes the API key in its answer). A secret may arrive split over two deltas,
    so the end of a delta that could begin one is held back until the next delta, or
    :meth:`flush`."""

    def __init__(self, ctx: ProviderContext, secrets: list[str]) -> None:
        self._ctx = ctx
        self._secrets = sorted(secrets, key=len, reverse=True)
        self._held = ""
        self.node_id = getattr(ctx, "node_id", "")

    def __getattr__(self, name: str) -> Any:  # call_subagent, call_flow and the rest: the run's own
        return getattr(self._ctx, name)

    def delta(self, text: str) -> None:
        text = mask_known(self._held + text, self._secrets)
        keep = 0
        for secret in self._secrets:
            for n in range(min(len(secret) - 1, len(text)), keep, -1):
                if text.endswith(secret[:n]):
                    keep = n
                    break
        self._held = text[len(text) - keep :] if keep else ""
        out = text[: len(text) - keep]
        if out:
            self._ctx.delta(out)

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self._ctx.delta(held)


@dataclass(slots=True)
class Turn:
    """One model answer: its text, the tools it asked for and the tokens it used."""

    text: str
    calls: list[ToolCall]
    usage: dict[str, int] | None
    model: str | None
    raw: Any = None  # provider-specific data needed to replay the turn (Anthropic content blocks)


def kept_conversation(
    kind: str, tail: list[dict[str, Any]], turn: Turn, usage: dict[str, int], secrets: list[str]
) -> dict[str, Any]:
    """A conversation paused at a tool call's approval, as JSON (kept in the run's snapshot): the
    messages after the first ones (those are made again from the agent's prompt, which may hold
    secrets), the turn whose calls wait, and the tokens used so far. The provider's own secrets
    are masked (a server may have echoed one)."""
    raw = json.loads(json.dumps(turn.raw)) if turn.raw is not None else None
    kept = {
        "provider": kind,
        "messages": tail,
        "turn": {
            "text": turn.text,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in turn.calls],
            "usage": turn.usage,
            "model": turn.model,
            "raw": raw,
        },
        "usage": dict(usage),
    }
    if secrets:
        kept = json.loads(mask_known(json.dumps(kept, ensure_ascii=False), secrets))
    return kept


def resumed_turn(kept: Any, kind: str, messages: list[dict[str, Any]], usage: dict[str, int]) -> Turn | None:
    """The turn a kept conversation (:func:`kept_conversation`) waits at, with its messages added to
    ``messages`` and its tokens to ``usage``; None when there is none, or it is another
    provider's (the step then asks the model afresh)."""
    if not isinstance(kept, dict) or kept.get("provider") != kind or not isinstance(kept.get("turn"), dict):
        return None
    messages.extend(kept.get("messages") or [])
    for k, v in (kept.get("usage") or {}).items():
        usage[k] = usage.get(k, 0) + int(v)
    t = kept["turn"]
    calls = [ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"])) for c in t.get("calls") or ()]
    return Turn(t.get("text") or "", calls, t.get("usage"), t.get("model"), t.get("raw"))


class HttpChatProvider(ABC):
    """The tool loop over HTTP: ask, run the requested tools concurrently, answer them, repeat.

    Subclasses implement one model turn (:meth:`_turn`) and how a turn and its tool
    results are appended to the conversation (:meth:`_append_round`).
    """

    name = "http"
    kind = "http"

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        provider_id: str | None = None,
        models: dict[str, Any] | None = None,
        default_model: str = "",
        http: HttpSettings | None = None,
        retry: RetryPolicy | None = None,
        searxng_url: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        supports_images: bool | None = None,
    ) -> None:
        # user:password@ in the URL is sent as Basic auth and kept out of the URL (and so out
        # of every message that names it).
        base_url, self._url_auth = split_url_credentials(base_url)
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key  # never logged, never in repr or messages
        self.provider_id = provider_id or self.name
        self.models = models or {}
        self.default_model = default_model
        self.http = http or HttpSettings()
        self.retry = retry or RetryPolicy.from_settings(self.http)
        self.max_turns = max(1, self.http.maxTurns)
        self.searxng_url = searxng_url
        self._transport = transport
        self.supports_images = supports_images  # the provider's ``supportsImages`` (engine.llm.vision)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider_id={self.provider_id!r}, base_url={self.base_url!r})"

    def accepts_images(self, model: str) -> bool:
        """Whether ``model`` (empty: the default model) is sent the invocation's images."""
        model = model.strip() or self.default_model
        return model_accepts_images(model, self.models.get(model), self.supports_images)

    def _images_for(self, inv: AgentInvocation) -> list[str]:
        """The invocation's images when its model takes them, else none (the text goes alone)."""
        return list(inv.images) if inv.images and self.accepts_images(inv.model) else []

    # -- subclass hooks
    @abstractmethod
    def _initial_messages(self, inv: AgentInvocation) -> list[dict[str, Any]]: ...

    @abstractmethod
    async def _turn(
        self,
        client: httpx.AsyncClient,
        model: str,
        inv: AgentInvocation,
        messages: list[dict[str, Any]],
        tools: dict[str, Tool],
        ctx: ProviderContext,
    ) -> Turn: ...

    @abstractmethod
    def _append_round(self, messages: list[dict[str, Any]], turn: Turn, results: list[str]) -> None: ...

    # -- the loop
    def _client(self) -> httpx.AsyncClient:
        # Proxy settings from the environment apply to remote servers only: a proxy must not
        # swallow requests meant for a server on this machine.
        # A refused or failed connection is tried again twice (httpcore waits 0.5 s, then
        # 1 s): a local server that is still starting is not reported down at once.
        transport = self._transport or httpx.AsyncHTTPTransport(retries=CONNECT_RETRIES)
        return httpx.AsyncClient(
            timeout=make_timeout(self.http),
            transport=transport,
            auth=httpx.BasicAuth(*self._url_auth) if self._url_auth else None,
            follow_redirects=True,
            trust_env=not is_local_url(self.base_url),
        )

    def _own_secrets(self) -> list[str]:
        """What this provider sends that a server must not get to show: the API key and a base
        URL's password (long enough not to be a placeholder such as ``ollama``)."""
        found = [self._api_key or "", self._url_auth[1] if self._url_auth else ""]
        return [s for s in found if len(s) >= MIN_MASKED_SECRET]

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        secrets = self._own_secrets()
        if not secrets:
            return await self._complete(invocation, ctx)
        masked = _MaskingContext(ctx, secrets)
        try:
            result = await self._complete(invocation, masked)
        finally:
            masked.flush()
        result.text = mask_known(result.text, secrets)
        return result

    async def _complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        model = invocation.model.strip() or self.default_model
        if not model:
            raise ProviderConfigError(
                f"Agent '{invocation.name}' has no model, and provider '{self.provider_id}' has no default model. "
                "Set the agent's model or pass --model."
            )
        usage: dict[str, int] = {}
        async with self._client() as client:
            search = WebSearch(self.searxng_url, client) if invocation.tools.get("web_search") else None
            tools = build_tools(invocation, ctx, search)
            messages = self._initial_messages(invocation)
            first = len(messages)
            # A step taken again after a tool call's approval goes on from the kept conversation.
            waiting = resumed_turn(getattr(ctx, "resumed_conversation", None), self.kind, messages, usage)
            for _ in range(self.max_turns):
                if waiting is not None:
                    turn, waiting = waiting, None
                else:
                    turn = await self._turn(client, model, invocation, messages, tools, ctx)
                    for k, v in (turn.usage or {}).items():
                        usage[k] = usage.get(k, 0) + int(v)
                if not turn.calls:
                    if not turn.text:  # `choices: []` then [DONE], or `content: null`: no answer at all
                        raise LLMError(
                            f"The server at {self.base_url} sent an empty answer (no text and no tool call)."
                        )
                    return LLMResult(text=turn.text, usage=usage or None, model=turn.model or model)
                try:
                    results = await run_tool_calls(turn.calls, tools, ctx)
                except ToolApprovalPending as pause:
                    pause.conversation = kept_conversation(
                        self.kind, messages[first:], turn, usage, self._own_secrets()
                    )
                    raise
                except DirectOutput as direct:  # a flow's output is the answer: no further model turn
                    return LLMResult(text=direct.text, usage=usage or None, model=turn.model or model)
                self._append_round(messages, turn, results)
        raise LLMError(
            f"The model kept calling tools for {self.max_turns} turns without giving an answer; "
            "stopped. Raise http.maxTurns in the settings if this is expected."
        )
