"""The built-in deterministic ``echo`` provider.

It answers with the user content. When the agent has subagents it calls each of
them (concurrently) with the same content and appends their answers, so a flow with
subagents exercises the whole subagent path offline. Library flows offered as tools are
called the same way (each string parameter given the content; :func:`flow_tool_arguments`), and so
are MCP tools (arguments built from the tool's schema with the content for strings). When a tool
asks for approval, every tool is called in one turn through
:func:`engine.llm.tools.each_tool_once`, so the call waits for its decision. ``delay`` (seconds) makes it
slow, for tests and demos of concurrency and cancellation.

A structured answer asked (``response_format`` with a JSON schema: an agent's
``responseFormat``, a router's choice) is answered deterministically with a value built from the
schema and the user content (:func:`engine.llm.structured.example_for_schema`): strings are the
content, an enum's value is the one sharing the most words with the content (its own words and
those of its description; the first value on a tie or when none shares any), numbers 0.
"""

from __future__ import annotations

import asyncio
import json

from engine.llm.base import (
    AgentInvocation,
    DirectOutput,
    LLMError,
    LLMResult,
    ProviderContext,
    flow_tool_arguments,
)
from engine.llm.structured import example_for_schema, schema_of
from engine.llm.tools import each_tool_once, has_asking_tools

__all__ = ["EchoProvider"]


class EchoProvider:
    name = "echo"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        text = invocation.user_content
        schema = schema_of(invocation.response_format)
        if schema is not None:
            answer = json.dumps(example_for_schema(schema, text), ensure_ascii=False)
            return LLMResult(
                answer, {"prompt_tokens": len(text) // 4 + 1, "completion_tokens": len(answer) // 4 + 1}, "echo"
            )
        if has_asking_tools(invocation):  # one turn of every tool, so that the asking ones wait
            try:
                done = await each_tool_once(invocation, ctx, text)
            except DirectOutput as direct:  # a flow's output is the answer
                return LLMResult(direct.text, None, "echo")
            text = text + "".join(f"\n\n[{label}] {result}" for label, result in done)
            return self._answer(invocation, text)
        if invocation.subagents:
            answers = await asyncio.gather(*(ctx.call_subagent(child, text) for child in invocation.subagents))
            text = text + "".join(
                f"\n\n[{child.name or child.node_id}] {answer}" for child, answer in zip(invocation.subagents, answers)
            )
        if invocation.flows:
            # Each flow offered as a tool is called once, its string parameters given the content.
            async def call(flow):
                try:
                    return await ctx.call_flow(flow, flow_tool_arguments(flow, invocation.user_content))
                except LLMError as err:
                    return f"Error: {err}"

            try:
                results = await asyncio.gather(*(call(f) for f in invocation.flows))
            except DirectOutput as direct:  # a flow's output is the answer
                return LLMResult(direct.text, None, "echo")
            text = text + "".join(f"\n\n[{flow.name}] {result}" for flow, result in zip(invocation.flows, results))
        if invocation.mcp_tools:
            done = await each_tool_once(invocation, ctx, invocation.user_content, subagents=False, flows=False)
            text = text + "".join(f"\n\n[{label}] {result}" for label, result in done)
        return self._answer(invocation, text)

    @staticmethod
    def _answer(invocation: AgentInvocation, text: str) -> LLMResult:
        # Token counts estimated as characters / 4 (the usual rule of thumb); cheap on purpose,
        # since echo also serves as the "instant provider" of the engine benchmarks. The model
        # that answered is echo, whatever the node names (a dry run costs nothing).
        return LLMResult(
            text,
            {"prompt_tokens": len(invocation.user_content) // 4 + 1, "completion_tokens": len(text) // 4 + 1},
            "echo",
        )
