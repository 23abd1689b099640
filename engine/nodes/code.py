"""The ``code`` node: a snippet run in a sandbox (docs/design.md, "Acting").

Data: ``language`` (``python`` default, ``javascript``, ``typescript``), ``code``, ``inputs``
(``{name: template}``, resolved like any data), ``timeoutMs`` (default 30,000), ``memoryMb``
(default 256), ``outputVar``; ``provider``/``model`` choose the model ``llm``/``queryLLM`` ask
(the run's default when empty). Python runs in pydantic-monty (engine/code/monty.py): the
inputs are variables, the last expression is the output, ``await llm(prompt)`` and ``await
call_flow(flow_id, **arguments)`` call the host. JavaScript and TypeScript run in Deno
(engine/code/deno.py): the code is the body of ``async function (inputs, api)``, each input is
also a constant, the return value is the output and ``api`` is TypeAgent's TaskFlow API
(engine/code/host.py). ``print``/``console.log`` become ``code_log`` events; a failure names
the line of this code; what the code may reach is bounded by the workflow's ``permissions``
(nothing without them). Both runtimes come with the ``code`` extra.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from pydantic import Field, field_validator

from engine.code.deno import deno_available, run_deno
from engine.code.errors import EXTRA_HINT, CodeError
from engine.code.host import StepHost, flow_access, network_warning
from engine.code.monty import flows_called, monty_available, python_problems, run_python
from engine.graph.permissions import PermissionDenied, permissions_of
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, is_none, resolve_for_step

__all__ = ["CodeData", "CodeSpec", "LANGUAGES", "js_source", "SPEC"]

LANGUAGES = ("python", "javascript", "typescript")
DEFAULT_TIMEOUT_MS = 30_000
DEFAULT_MEMORY_MB = 256
JS_ENTRY = "__flowdesk_code"
_JS_NAME = re.compile(r"[A-Za-z_$][\w$]*\Z")
_JS_RESERVED = frozenset(
    "break case catch class const continue debugger default delete do else enum export extends false finally for "
    "function if implements import in instanceof interface let new null package private protected public return "
    "static super switch this throw true try typeof var void while with yield await arguments eval api inputs".split()
)


class CodeData(PolicyData):
    language: str = "python"
    code: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)
    timeoutMs: int = DEFAULT_TIMEOUT_MS
    memoryMb: int = DEFAULT_MEMORY_MB
    provider: str | None = Field(default=None, exclude_if=is_none)
    model: str | None = Field(default=None, exclude_if=is_none)

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


def js_source(code: str, names: Any = ()) -> str:
    """The module Deno runs for JavaScript/TypeScript ``code``: the body of ``async function
    (inputs, api)`` with each input name that is a plain identifier bound as a constant. The
    header shares the code's first line, so the module's lines are the code's lines."""
    consts = [n for n in names if isinstance(n, str) and _JS_NAME.match(n) and n not in _JS_RESERVED]
    bind = f"const {{ {', '.join(consts)} }} = inputs; " if consts else ""
    return f"async function {JS_ENTRY}(api, inputs) {{ {bind}{{ {code}\n}} }}"


def python_names(names: Any) -> list[str]:
    return [n for n in names if isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n)]


class CodeSpec(NodeSpec):
    kind = "code"
    data_model = CodeData
    label = "Code"
    description = "Run a Python or TypeScript snippet in a sandbox."
    icon = "code"
    color = "#8250df"
    category = "Steps"
    works = True
    verbatim = ("code",)

    def title(self, data: NodeData) -> str:
        language = getattr(data, "language", "python") or "python"
        return f"Code ({language})"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        lines = [ln.strip() for ln in (getattr(data, "code", "") or "").splitlines() if ln.strip()]
        return [(lines[0] if lines else "(no code)", True)]

    def check(self, node: Any, checks: Any) -> None:
        data = node.data
        label = checks.label(node)
        if data.language not in LANGUAGES:
            checks.error(
                "code_unknown_language",
                f"{label}: the language '{data.language}' is not one of {', '.join(LANGUAGES)}.",
            )
            return
        if not data.code.strip():
            checks.error("code_empty", f"{label} has no code.")
            return
        python = data.language == "python"
        if not (monty_available() if python else deno_available()):
            runtime = "pydantic-monty" if python else "Deno"
            checks.warning("code_extra_missing", f"{label} cannot run here: {runtime} is missing; {EXTRA_HINT}.")
        bad = [n for n in data.inputs if n not in (python_names if python else _js_names)([n])]
        if bad:
            checks.warning(
                "code_input_name",
                f"{label}: the input {', '.join(repr(n) for n in bad)} is not a variable name the code can use"
                + ("" if python else " (read it as inputs[…])")
                + ".",
            )
        if python:
            for severity, code, message in python_problems(data.code):
                getattr(checks, severity)(code, f"{label}: {message}")
            flows = flows_called(data.code)
        else:
            flows = re.findall(r"""callAction\(\s*["'][^"']*["']\s*,\s*["']([^"']+)["']""", data.code)
        if not python:
            network_warning(checks, node, data.code)
        workflow = getattr(checks, "workflow", None)
        if flows and permissions_of(workflow) is not None:
            access = flow_access(_Holder(workflow))
            for flow in flows:
                if not access.allows_flow(flow):
                    checks.warning(
                        "permission_flow",
                        f"{label} calls the flow '{flow}', which the workflow's permissions.flows does not list.",
                    )

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        data = node.data
        resolved, secrets = resolve_for_step(ctx, node, value)
        inputs = resolved.get("inputs") or {}
        if not isinstance(inputs, dict):
            raise NodeError(f"{self.describe(node)}: 'inputs' must be an object of names and values.")
        host = StepHost(ctx, node, secrets)
        timeout = int(data.timeoutMs or DEFAULT_TIMEOUT_MS)
        memory = int(data.memoryMb or DEFAULT_MEMORY_MB)
        try:
            if data.language == "python":
                output = await run_python(
                    data.code,
                    inputs={n: inputs[n] for n in python_names(inputs)},
                    host_functions=python_host(host),
                    timeout_ms=timeout,
                    memory_mb=memory,
                    on_log=host.log,
                    folders=host.access.folders(),
                )
            elif data.language in ("javascript", "typescript"):
                output = await run_deno(
                    js_source(data.code, inputs),
                    entry=JS_ENTRY,
                    arguments=[inputs],
                    api_methods=host.taskflow_api(),
                    access=host.access,
                    timeout_ms=timeout,
                    memory_mb=memory,
                    on_log=host.log,
                    typescript=data.language == "typescript",
                )
            else:
                raise NodeError(
                    f"{self.describe(node)}: the language '{data.language}' is not one of {', '.join(LANGUAGES)}."
                )
        except PermissionDenied as err:  # refused by the sandbox itself (a file, a host)
            if host.denied is None:
                host.deny(err)
            raise
        except CodeError as err:
            if host.denied is not None:
                raise host.denied from None
            raise CodeError(str(ctx.mask(str(err), secrets))) from None
        if host.denied is not None:
            raise host.denied
        return ctx.mask(output, secrets), "output"


def _js_names(names: Any) -> list[str]:
    return [n for n in names if isinstance(n, str) and _JS_NAME.match(n) and n not in _JS_RESERVED]


class _Holder:
    """A stand-in context holding only a workflow (validation has no run)."""

    def __init__(self, workflow: Any) -> None:
        self.workflow = workflow


def python_host(host: StepHost) -> dict[str, Any]:
    """``llm`` and ``call_flow`` as the Python sandbox's host functions."""

    async def llm(prompt: Any = "") -> Any:
        return await host.llm(prompt)

    async def call_flow(flow_id: Any = "", **arguments: Any) -> Any:
        return await host.run_flow(flow_id, arguments)

    return {"llm": llm, "call_flow": call_flow}


SPEC = CodeSpec()
