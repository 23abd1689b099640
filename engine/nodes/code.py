"""The ``code`` node: a snippet run in a sandbox (docs/design.md, "Acting").

Data: ``language`` (``python`` default, ``javascript``, ``typescript``), ``code``, ``inputs``
(``{name: template}``, resolved like any data), ``timeoutMs`` (default 30,000), ``memoryMb``
(default 256), ``outputVar``. Python runs in pydantic-monty, JavaScript and TypeScript in Deno
(the ``code`` extra); what the code may reach is bounded by the workflow's ``permissions``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData

LANGUAGES = ("python", "javascript", "typescript")
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_MEMORY_MB = 256


class CodeData(PolicyData):
    language: str = "python"
    code: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    timeoutMs: int = DEFAULT_TIMEOUT_MS
    memoryMb: int = DEFAULT_MEMORY_MB

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, v: Any) -> Any:
        return "python" if v in (None, "") else (v.lower() if isinstance(v, str) else v)

    @field_validator("code", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("inputs", mode="before")
    @classmethod
    def _inputs(cls, v: Any) -> Any:
        return {} if v is None else v


class CodeSpec(NodeSpec):
    kind = "code"
    data_model = CodeData
    label = "Code"
    description = "Run a Python or TypeScript snippet in a sandbox."
    icon = "code"
    color = "#8250df"
    category = "Steps"
    works = True

    def title(self, data: NodeData) -> str:
        language = getattr(data, "language", "python") or "python"
        return f"Code ({language})"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        lines = [ln.strip() for ln in (getattr(data, "code", "") or "").splitlines() if ln.strip()]
        return [(lines[0] if lines else "(no code)", True)]

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        raise NodeError("the code node's sandbox is not installed yet")


SPEC = CodeSpec()
