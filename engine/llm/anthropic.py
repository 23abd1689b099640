"""Anthropic's Messages API over httpx (no vendor SDK): streaming and tool use.

Invariants
* ``POST {base}/v1/messages`` with ``x-api-key`` and ``anthropic-version``; the key goes
  into that header only.
* Streams are read event by event (``message_start`` … ``message_stop``); text deltas go
  to ``ctx.delta``; ``tool_use`` blocks become tool calls whose results are sent back as
  ``tool_result`` blocks, in the same loop as the OpenAI provider.
* A stream without ``message_stop`` is an error (cut stream); an ``error`` event or data
  that is not JSON is reported as such.
* Usage is reported as ``prompt_tokens``/``completion_tokens`` like every provider.
* An invocation's images go before the user's text as ``image`` blocks (base64 from a data URL,
  or an http(s) URL) when the model accepts images (engine.llm.vision); otherwise the text alone.
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
from engine.llm.structured import schema_of
from engine.llm.tools import Tool, ToolCall
from engine.llm.vision import split_data_url

__all__ = ["AnthropicProvider", "ANTHROPIC_VERSION"]

ANTHROPIC_VERSION = "2023-06-01"
#: The tool a structured answer is asked through: its input schema is the wanted schema and the
#: model is made to call it; the call's input is the answer (never run as a tool).
ANSWER_TOOL = "structured_answer"


def _image_block(url: str) -> dict[str, Any] | None:
    """An ``image`` content block for an image data URL (or an http(s) URL); None for anything else."""
    parts = split_data_url(url)
    if parts is not None:
        return {"type": "image", "source": {"type": "base64", "media_type": parts[0], "data": parts[1]}}
    if isinstance(url, str) and url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    return None


class AnthropicProvider(HttpChatProvider):
    name = "anthropic"
    kind = "anthropic"

    @property
    def url(self) -> str:
        base = self.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def _headers(self) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION, "Accept": "text/event-stream, application/json"}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def _initial_messages(self, inv: AgentInvocation) -> list[dict[str, Any]]:
        blocks = [_image_block(url) for url in self._images_for(inv)]
        if not any(blocks):
            return [{"role": "user", "content": inv.user_content}]
        # Anthropic reads images best before the text that asks about them.
        return [{"role": "user", "content": [b for b in blocks if b] + [{"type": "text", "text": inv.user_content}]}]

    async def _turn(
        self,
        client: httpx.AsyncClient,
        model: str,
        inv: AgentInvocation,
        messages: list[dict[str, Any]],
        tools: dict[str, Tool],
        ctx: ProviderContext,
    ) -> Turn:
        turn = await self._one_turn(client, model, inv, messages, tools, ctx)
        schema = schema_of(inv.response_format)
        if schema is not None and not tools and schema.get("type") != "object" and not turn.calls:
            try:  # the answer of a wrapped schema (see _one_turn): the wrapper's "value"
                wrapped = json.loads(turn.text)
                if isinstance(wrapped, dict) and "value" in wrapped:
                    turn.text = json.dumps(wrapped["value"], ensure_ascii=False)
            except ValueError:
                pass
        return turn

    async def _one_turn(
        self,
        client: httpx.AsyncClient,
        model: str,
        inv: AgentInvocation,
        messages: list[dict[str, Any]],
        tools: dict[str, Tool],
        ctx: ProviderContext,
    ) -> Turn:
        payload: dict[str, Any] = {
            "model": model,
            "max_tokens": self.http.maxTokens,
            "system": inv.system_prompt,
            "messages": messages,
            "stream": True,
        }
        if tools:
            payload["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools.values()
            ]
        schema = schema_of(inv.response_format)
        if schema is not None and not tools:
            # Anthropic's structured output: one tool whose input is the answer, its use forced.
            # (An object schema is needed for a tool's input: anything else is wrapped in one.)
            wrapped = (
                schema
                if schema.get("type") == "object"
                else {"type": "object", "properties": {"value": schema}, "required": ["value"]}
            )
            payload["tools"] = [
                {
                    "name": ANSWER_TOOL,
                    "description": "Give the answer in the required structure.",
                    "input_schema": wrapped,
                }
            ]
            payload["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        async with post_stream(
            client, self.url, payload, self._headers(), policy=self.retry, model=model, secret=self._api_key
        ) as resp:
            if is_event_stream(resp):
                return await self._read_stream(resp, ctx)
            body = await resp.aread()
        return self._read_whole(body)

    def _turn_from_blocks(self, blocks: list[dict[str, Any]], usage: dict[str, int] | None, model: str | None) -> Turn:
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        answer = next((b for b in blocks if b.get("type") == "tool_use" and b.get("name") == ANSWER_TOOL), None)
        if answer is not None:  # a structured answer (see _turn): its input is the answer's JSON
            value = answer.get("input") or {}
            return Turn(json.dumps(value, ensure_ascii=False), [], usage, model, raw=blocks)
        for b in blocks:
            if b.get("type") == "tool_use" and not b.get("id"):
                b["id"] = new_call_id()  # the replayed block and its tool_result must agree
        calls = [
            ToolCall(b["id"], b.get("name", ""), json.dumps(b.get("input") or {}))
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        return Turn(text, calls, usage, model, raw=blocks)

    def _read_whole(self, body: bytes) -> Turn:
        try:
            data = json.loads(body)
            blocks = data["content"]
            if not isinstance(blocks, list):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise malformed(self.url, "expected a message with a 'content' list") from None
        u = data.get("usage") or {}
        return self._turn_from_blocks(
            blocks, token_usage(u.get("input_tokens"), u.get("output_tokens")), data.get("model")
        )

    async def _read_stream(self, resp: httpx.Response, ctx: ProviderContext) -> Turn:
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, list[str]] = {}
        input_tokens = output_tokens = None
        model: str | None = None
        stopped = False
        async for event, data in iter_sse(resp):
            try:
                ev = json.loads(data)
            except ValueError:
                raise malformed(self.url, f"a stream event is not JSON ({data[:60]!r})") from None
            if not isinstance(ev, dict):
                raise malformed(self.url, "a stream event is not a JSON object")
            kind = ev.get("type") or event
            if kind == "message_start":
                msg = ev.get("message") or {}
                model = msg.get("model") or model
                u = msg.get("usage") or {}
                input_tokens = u.get("input_tokens", input_tokens)
                output_tokens = u.get("output_tokens", output_tokens)
            elif kind == "content_block_start":
                block = dict(ev.get("content_block") or {})
                blocks[int(ev.get("index", len(blocks)))] = block
            elif kind == "content_block_delta":
                idx = int(ev.get("index", 0))
                delta = ev.get("delta") or {}
                block = blocks.setdefault(idx, {"type": "text", "text": ""})
                if delta.get("type") == "text_delta":
                    text = delta.get("text", "")
                    block["text"] = block.get("text", "") + text
                    if text:
                        ctx.delta(text)
                elif delta.get("type") == "input_json_delta":
                    partial.setdefault(idx, []).append(delta.get("partial_json", ""))
            elif kind == "message_delta":
                u = ev.get("usage") or {}
                output_tokens = u.get("output_tokens", output_tokens)
            elif kind == "message_stop":
                stopped = True
                break
            elif kind == "error":
                err = ev.get("error") or {}
                raise LLMError(
                    f"The server at {self.url} reported an error mid-stream: "
                    f"{redact(str(err.get('message') or err), self._api_key)}"
                )
        if not stopped:
            raise LLMError(f"The stream from {self.url} was cut before the model finished its answer.")
        for idx, pieces in partial.items():
            text = "".join(pieces)
            try:
                blocks[idx]["input"] = json.loads(text) if text.strip() else {}
            except ValueError:
                raise malformed(self.url, "a tool call's input is not JSON") from None
        ordered = [blocks[i] for i in sorted(blocks)]
        return self._turn_from_blocks(ordered, token_usage(input_tokens, output_tokens), model)

    def _append_round(self, messages: list[dict[str, Any]], turn: Turn, results: list[str]) -> None:
        content = [
            b
            for b in (turn.raw or [])
            if b.get("type") in ("text", "tool_use") and (b.get("type") != "text" or b.get("text"))
        ]
        messages.append({"role": "assistant", "content": content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": c.id,
                        "content": r,
                        **({"is_error": True} if r.startswith("Error:") else {}),
                    }
                    for c, r in zip(turn.calls, results, strict=True)
                ],
            }
        )
