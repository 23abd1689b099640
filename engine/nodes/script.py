"""The ``script`` node: an imported TypeAgent script recipe, run (docs/design.md, "Acting").

Data: ``language`` (``typescript`` for a TaskFlow recipe, ``powershell`` for a ScriptFlow
one), ``script`` (the source, kept verbatim), ``recipeKind``, for ScriptFlow ``sandbox`` (the
recipe's ``SandboxPolicy``), and optionally ``provider``/``model`` (what ``queryLLM`` asks),
``memoryMb`` and the step policy (``timeoutMs``: 300 s when unset, as TypeAgent's).

* TaskFlow: ``async function execute(api, params)`` runs in Deno (engine/code/deno.py) with
  TypeAgent's ``TaskFlowScriptAPI`` (engine/code/host.py); ``params`` are the run's values of
  the flow's Start variables (the recipe's parameters). The seed's blocked identifiers are
  refused at validation (``script_blocked``, naming the identifier and its line). A result
  with ``success: false`` fails the step with its ``error``; one without ``success`` is wrapped
  ``{success: true, message: String(value), data: value}``.
* ScriptFlow: the body runs through ``pwsh`` in a constrained runspace built from ``sandbox``
  (engine/code/pwsh.py); without ``pwsh`` on PATH the node is a validation error
  (``script_interpreter_missing``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import Field, field_validator

from engine.code.blocked import blocked_identifiers
from engine.code.deno import deno_available, run_deno
from engine.code.errors import EXTRA_HINT, CodeError
from engine.code.host import StepHost, network_warning
from engine.code.pwsh import PWSH_HINT, pwsh_binary, run_pwsh
from engine.graph.permissions import PermissionDenied
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, is_none

__all__ = ["ScriptData", "ScriptSpec", "DEFAULT_TIMEOUT_MS", "wrap_result", "js_string", "SPEC"]

DEFAULT_TIMEOUT_MS = 300_000
DEFAULT_MEMORY_MB = 512
TASKFLOW = ("typescript", "javascript")
_EXECUTE = re.compile(r"\bfunction\s+execute\s*\(|\b(?:const|let|var)\s+execute\s*=")


class ScriptData(PolicyData):
    language: str = ""
    script: str = ""
    memoryMb: int | None = Field(default=None, exclude_if=is_none)
    provider: str | None = Field(default=None, exclude_if=is_none)
    model: str | None = Field(default=None, exclude_if=is_none)

    @field_validator("language", "script", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)`` of a JSON value."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return "NaN" if math.isnan(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return ",".join("" if v is None else js_string(v) for v in value)
    return "[object Object]"


def wrap_result(value: Any) -> Any:
    """TypeAgent's rule for a script's value: ``success: false`` fails the step (its ``error``);
    a value without ``success`` is wrapped ``{success: true, message: String(value), data: value}``."""
    if isinstance(value, dict) and "success" in value:
        if value.get("success") is False:
            why = value.get("error") or value.get("message") or "the script reported a failure without an error"
            raise NodeError(f"the script failed: {why if isinstance(why, str) else json.dumps(why)}")
        return value
    return {"success": True, "message": js_string(value), "data": value}


def _params(ctx: Any) -> dict[str, Any]:
    """The recipe's parameters: the run's values of the Start variables (all variables when the
    workflow is not at hand, as on a remote worker)."""
    variables = dict(getattr(ctx, "variables", None) or {})
    workflow = getattr(ctx, "workflow", None)
    names: list[str] = []
    for node in getattr(workflow, "nodes", None) or []:
        if node.type == "start":
            for v in _start_vars(node):
                name = v.get("name") if isinstance(v, dict) else getattr(v, "name", None)
                if isinstance(name, str) and name:
                    names.append(name)
    return {n: variables.get(n) for n in names} if names else variables


def _start_vars(node: Any) -> list[Any]:
    data = node.data
    found = getattr(data, "variables", None)
    if found is None and isinstance(data, dict):
        found = data.get("variables")
    return list(found or [])


def _recipe_sandbox(workflow: Any) -> Any:
    """The ScriptFlow recipe's ``sandbox``, kept by the importer in ``imported.metadata``."""
    imported = getattr(workflow, "imported", None)
    if imported is None and workflow is not None:
        imported = (getattr(workflow, "model_extra", None) or {}).get("imported")
    metadata = imported.get("metadata") if isinstance(imported, dict) else None
    return metadata.get("sandbox") if isinstance(metadata, dict) else None


class ScriptSpec(NodeSpec):
    kind = "script"
    data_model = ScriptData
    label = "Script"
    description = "An imported TypeAgent script (TaskFlow in Deno, ScriptFlow in pwsh)."
    icon = "script"
    color = "#6e7681"
    category = "Imported"
    in_palette = False
    works = True
    verbatim = ("script",)

    def title(self, data: NodeData) -> str:
        language = getattr(data, "language", "")
        return f"Script ({language})" if language else "Script"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        lines = [ln.strip() for ln in (getattr(data, "script", "") or "").splitlines() if ln.strip()]
        return [(lines[0] if lines else "(empty script)", True)]

    def check(self, node: Any, checks: Any) -> None:
        data = node.data
        label = checks.label(node)
        language = (data.language or "").lower()
        if not data.script.strip():
            checks.error("script_empty", f"{label} has no script.")
            return
        if language in TASKFLOW:
            for name, line in blocked_identifiers(data.script):
                checks.error(
                    "script_blocked",
                    f"{label}: the script uses `{name}` (line {line}), which scripts may not use.",
                )
            if not _EXECUTE.search(data.script):
                checks.error(
                    "script_no_execute", f"{label}: the script defines no `async function execute(api, params)`."
                )
            if not deno_available():
                checks.warning("code_extra_missing", f"{label} cannot run here: Deno is missing; {EXTRA_HINT}.")
            network_warning(checks, node, data.script)
        elif language == "powershell":
            if pwsh_binary() is None:
                checks.error(
                    "script_interpreter_missing",
                    f"{label}: PowerShell scripts run with pwsh, which is not installed (not found on PATH); "
                    f"{PWSH_HINT}.",
                )
        else:
            checks.error(
                "script_unknown_language",
                f"{label}: '{data.language or '(none)'}' scripts cannot run; TypeScript and PowerShell can.",
            )

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        data = node.data
        language = (data.language or "").lower()
        timeout = int(data.timeoutMs or DEFAULT_TIMEOUT_MS)
        host = StepHost(ctx, node)
        params = _params(ctx)
        try:
            if language in TASKFLOW:
                blocked = blocked_identifiers(data.script)
                if blocked:
                    name, line = blocked[0]
                    raise NodeError(f"script_blocked: the script uses `{name}` (line {line}), which is not allowed")
                result = await run_deno(
                    data.script,
                    entry="execute",
                    arguments=[params],
                    api_methods=host.taskflow_api(),
                    access=host.access,
                    timeout_ms=timeout,
                    memory_mb=int(data.memoryMb or DEFAULT_MEMORY_MB),
                    on_log=host.log,
                    typescript=language == "typescript",
                )
            elif language == "powershell":
                sandbox = getattr(data, "sandbox", None) or _recipe_sandbox(getattr(ctx, "workflow", None))
                result = await run_pwsh(
                    data.script,
                    params,
                    sandbox if isinstance(sandbox, dict) else None,
                    timeout_ms=timeout,
                    on_log=host.log,
                )
                return result, "output"
            else:
                raise NodeError(f"{self.describe(node)}: '{data.language or '(none)'}' scripts cannot run.")
        except PermissionDenied as err:  # refused by the sandbox itself (a file, a host)
            if host.denied is None:
                host.deny(err)
            raise
        except CodeError:
            if host.denied is not None:
                raise host.denied from None
            raise
        if host.denied is not None:
            raise host.denied
        return wrap_result(result), "output"


SPEC = ScriptSpec()
