"""OpenAI Chat Completions, and every server that speaks it (Ollama, LM Studio, vLLM,
llama.cpp's server, OpenRouter), over httpx with no vendor SDK.

Invariants
* Requests stream (``stream: true`` with ``stream_options.include_usage``); text deltas
  go to ``ctx.delta`` as they arrive. A server that answers with plain JSON instead is
  understood too.
* ``reasoning_effort`` is sent only to models whose catalogue entry says they accept it.
* The node's model is sent as is (``--model`` overrides it upstream).
* A stream that ends without ``[DONE]`` or a ``finish_reason`` is an error (cut stream),
  as is data that is not a chat completion (malformed).
* The API key goes into the ``Authorization`` header only.
* An invocation's images go with the user's text as ``image_url`` parts when the model accepts
  images (engine.llm.vision); otherwise the text is sent alone.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from engine.llm._http import (
    HttpChatProvider,
    Turn,
    is_event_stream,
    iter_sse,
    malformed,
    new_call_id,
    post_stream,
    token_usage,
)
from engine.llm.base import AgentInvocation, LLMError, ProviderContext
from engine.llm.config import redact
from engine.llm.tools import Tool, ToolCall

__all__ = ["OpenAIProvider"]


def _usage(raw: Any) -> dict[str, int] | None:
    return token_usage(raw.get("prompt_tokens"), raw.get("completion_tokens")) if isinstance(raw, dict) else None


class OpenAIProvider(HttpChatProvider):
    name = "openai"
    kind = "openai"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _initial_messages(self, inv: AgentInvocation) -> list[dict[str, Any]]:
        images = self._images_for(inv)
        content: Any = inv.user_content
        if images:  # the text, then each image as an image_url part (a data URL)
            content = [{"type": "text", "text": inv.user_content}] + [
                {"type": "image_url", "image_url": {"url": url}} for url in images
            ]
        return [{"role": "system", "content": inv.system_prompt}, {"role": "user", "content": content}]

    def _payload(
        self, model: str, inv: AgentInvocation, messages: list[dict[str, Any]], tools: dict[str, Tool]
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            payload["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in tools.values()
            ]
        if inv.response_format:
            payload["response_format"] = inv.response_format
        info = self.models.get(model)
        if info is not None and info.supportsReasoningEffort and inv.reasoning_effort:
            if not info.reasoningEfforts or inv.reasoning_effort in info.reasoningEfforts:
                payload["reasoning_effort"] = inv.reasoning_effort
        return payload

    async def _turn(
        self,
        client: httpx.AsyncClient,
        model: str,
        inv: AgentInvocation,
        messages: list[dict[str, Any]],
        tools: dict[str, Tool],
        ctx: ProviderContext,
    ) -> Turn:
        payload = self._payload(model, inv, messages, tools)
        async with post_stream(
            client, self.url, payload, self._headers(), policy=self.retry, model=model, secret=self._api_key
        ) as resp:
            if is_event_stream(resp):
                return await self._read_stream(resp, ctx)
            body = await resp.aread()
        return self._read_whole(body)

    def _read_whole(self, body: bytes) -> Turn:
        try:
            data = json.loads(body)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise malformed(self.url, "expected a chat completion with choices[0].message") from None
        calls = []
        for tc in message.get("tool_calls") or []:
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            calls.append(
                ToolCall(
                    tc.get("id") or new_call_id(),
                    fn.get("name") or "",
                    args if isinstance(args, str) else json.dumps(args or {}),
                )
            )
        return Turn(message.get("content") or "", calls, _usage(data.get("usage")), data.get("model"))

    async def _read_stream(self, resp: httpx.Response, ctx: ProviderContext) -> Turn:
        parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage: dict[str, int] | None = None
        model: str | None = None
        finished = done = False
        async for _event, data in iter_sse(resp):
            if data.strip() == "[DONE]":
                done = True
                break
            try:
                chunk = json.loads(data)
            except ValueError:
                raise malformed(self.url, f"a stream event is not JSON ({data[:60]!r})") from None
            if not isinstance(chunk, dict):
                raise malformed(self.url, "a stream event is not a JSON object")
            if "error" in chunk:
                err = chunk["error"]
                message = err.get("message") if isinstance(err, dict) else str(err)
                raise LLMError(
                    f"The server at {self.url} reported an error mid-stream: {redact(str(message), self._api_key)}"
                )
            usage = _usage(chunk.get("usage")) or usage
            model = chunk.get("model") or model
            choices = chunk.get("choices") or []
            if not isinstance(choices, list):
                raise malformed(self.url, "'choices' is not a list")
            for choice in choices:
                delta = choice.get("delta") or {}
                text = delta.get("content")
                if text:
                    parts.append(text)
                    ctx.delta(text)
                for tc in delta.get("tool_calls") or []:
                    idx = tc.get("index")
                    if idx is None:  # servers that omit it: a new id starts a call, fragments extend the last
                        idx = len(calls) if tc.get("id") or not calls else max(calls)
                    entry = calls.setdefault(int(idx), {"id": "", "name": "", "args": []})
                    if tc.get("id"):
                        entry["id"] = tc["id"]
                    fn = tc.get("function") or {}
                    if fn.get("name") and not entry["name"]:
                        entry["name"] = fn["name"]
                    args = fn.get("arguments")
                    if args:
                        entry["args"].append(args if isinstance(args, str) else json.dumps(args))
                if choice.get("finish_reason"):
                    finished = True
        if not (done or finished):
            raise LLMError(f"The stream from {self.url} was cut before the model finished its answer.")
        tool_calls = [
            ToolCall(e["id"] or new_call_id(), e["name"], "".join(e["args"])) for _, e in sorted(calls.items())
        ]
        return Turn("".join(parts), tool_calls, usage, model)

    def _append_round(self, messages: list[dict[str, Any]], turn: Turn, results: list[str]) -> None:
        messages.append(
            {
                "role": "assistant",
                "content": turn.text or None,
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in turn.calls
                ],
            }
        )
        for call, result in zip(turn.calls, results, strict=True):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
