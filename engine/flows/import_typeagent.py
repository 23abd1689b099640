"""Import of TypeAgent recipes: step recipes (``typeagent-steps``) and script recipes (``typeagent-script``).

A step recipe's steps become nodes in order (``utility.llmTransform``/``claudeTask`` an
``agent``, ``utility.webFetch`` a ``fetch``, ``utility.webSearch`` an agent with web search,
any other action an ``action`` node), its ``${id.text}``/``${id.data.x}`` references become
the steps' output variables. A script recipe (ScriptFlow or TaskFlow) becomes one ``script``
node kept verbatim. Parameters become Start variables and ``grammarPatterns`` triggers
(:func:`typeagent_variables`, :func:`typeagent_patterns`, shared with the WebFlow import).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.flows.import_common import ImportBuilder, ImportResult, json_kind, start_node

__all__ = ["import_typeagent_steps", "import_typeagent_script", "typeagent_variables", "typeagent_patterns"]


_TA_TYPES = {
    "string": "string",
    "number": "number",
    "boolean": "boolean",
    "path": "string",
    "json": "json",
    "object": "json",
    "array": "json",
    "integer": "number",
}


def typeagent_variables(b: ImportBuilder, params: Any) -> list[dict[str, Any]]:
    """TypeAgent parameters (a list, or WebFlow's name → parameter map) as Start variables."""
    if isinstance(params, dict):
        params = [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in params.items()]
    if params is not None and not isinstance(params, list):
        raise b.refuse(
            f"parameters must be a list of parameters or a name → parameter object (found {json_kind(params)}); "
            "nothing was imported"
        )
    out: list[dict[str, Any]] = []
    for j, p in enumerate(params or []):
        if not isinstance(p, dict):
            raise b.refuse(f"parameters[{j}] must be an object with a name; nothing was imported")
        if not isinstance(p.get("name"), str) or not p["name"]:
            raise b.refuse(f"parameters[{j}] has no name")
        declared = str(p.get("type") or "string")
        kind = _TA_TYPES.get(declared)
        if kind is None:
            b.warn(f"parameter '{p['name']}' has the type '{declared}', read as string")
            kind = "string"
        var: dict[str, Any] = {"name": p["name"], "type": kind}
        if "default" in p:
            var["value"] = p["default"]
        if p.get("description"):
            var["description"] = p["description"]
        var["required"] = bool(p.get("required", False))
        if declared != kind:
            var["originalType"] = declared  # `path` → string, kept so an export can say so
        var.update({k: v for k, v in p.items() if k not in var and k not in ("default", "type")})
        out.append(var)
    return out


def typeagent_patterns(b: ImportBuilder, raw: Any) -> list[Any]:
    """TypeAgent's grammar patterns as triggers: a plain pattern as text; one with ``isAlias``
    or ``examples`` (seed 000's ``GrammarPattern``) as an object keeping them."""
    out: list[Any] = []
    for j, item in enumerate(raw or []):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("pattern"), str):
            kept = {"pattern": item["pattern"]}
            if isinstance(item.get("isAlias"), bool):
                kept["isAlias"] = item["isAlias"]
            if isinstance(item.get("examples"), list):
                kept["examples"] = [e for e in item["examples"] if isinstance(e, str)]
            out.append(kept if len(kept) > 1 else item["pattern"])
        else:
            b.warn(f"grammarPatterns[{j}] is neither a pattern nor {{pattern}}; kept in the metadata only")
    return out


_STEP_REF = re.compile(r"(\$\{\s*|\{\{\s*)([^\W\d]\w*)((?:\.[^\s.}\[]+|\[\s*-?\d+\s*\])*)(\s*\}\}?)")


def _rewrite_refs(value: Any, steps: Mapping[str, str]) -> Any:
    """``${id.text}`` → ``${var}``, ``${id.data.x}`` → ``${var.x}`` for each step id → output var."""
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            head, name, rest, tail = m.groups()
            if name not in steps:
                return m.group(0)
            if rest.startswith(".text"):
                rest = rest[len(".text") :]
            elif rest.startswith(".data"):
                rest = rest[len(".data") :]
            return f"{head}{steps[name]}{rest}{tail}"

        return _STEP_REF.sub(sub, value) if ("${" in value or "{{" in value) else value
    if isinstance(value, list):
        return [_rewrite_refs(v, steps) for v in value]
    if isinstance(value, dict):
        return {k: _rewrite_refs(v, steps) for k, v in value.items()}
    return value


def _text_param(params: Mapping[str, Any], *names: str) -> str:
    for n in names:
        v = params.get(n)
        if isinstance(v, str) and v:
            return v
    return ""


def import_typeagent_steps(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = ImportBuilder("typeagent-steps", path)
    variables = typeagent_variables(b, raw.get("parameters"))
    names = {v["name"] for v in variables}
    steps = raw.get("steps") or []
    out_vars: dict[str, str] = {}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise b.refuse(f"steps[{i}] is not an object")
        if not isinstance(step.get("actionName"), str) or not step["actionName"]:
            raise b.refuse(f"steps[{i}] has no actionName")
        sid = step.get("id")
        if isinstance(sid, str) and sid:
            var = re.sub(r"\W+", "_", sid)
            if not re.match(r"[^\W\d]", var):
                var = f"step_{var}"
            while var in names or var in out_vars.values():
                var += "_result"
            out_vars[sid] = var
    start_node(b, variables)
    for i, step in enumerate(steps):
        schema = str(step.get("schemaName") or "")
        action = step["actionName"]
        params = _rewrite_refs(step.get("parameters") or {}, out_vars)
        if not isinstance(params, dict):
            raise b.refuse(f"steps[{i}].parameters is not an object")
        full = f"{schema}.{action}" if schema else action
        origin = {k: v for k, v in step.items() if k != "parameters"}
        if full in ("utility.llmTransform", "utility.claudeTask"):
            prompt = _text_param(params, "prompt", "instruction", "task", "goal", "request")
            extra = params.get("input")
            if isinstance(extra, str) and extra:
                prompt = f"{prompt}\n\n{extra}" if prompt else extra
            if not prompt:
                prompt = json.dumps(params, ensure_ascii=False)
            data: dict[str, Any] = {
                "agentName": str(step.get("id") or action),
                "userPrompt": prompt,
                "tools": {"web_search": False, "subagents": False},
            }
            if isinstance(params.get("model"), str):
                data["model"] = params["model"]
            kind = "agent"
        elif full == "utility.webFetch":
            data = {"url": _text_param(params, "url", "uri", "address"), "format": "markdown"}
            kind = "fetch"
        elif full == "utility.webSearch":
            query = _text_param(params, "query", "q", "search", "text")
            data = {
                "agentName": str(step.get("id") or "Web search"),
                "systemPrompt": "Search the web and answer with what you found, citing the sources.",
                "userPrompt": query or json.dumps(params, ensure_ascii=False),
                "tools": {"web_search": True, "subagents": False},
            }
            kind = "agent"
        else:
            data = {"schema": schema, "action": action, "parameters": params}
            kind = "action"
        if kind != "action":
            data["typeagentParameters"] = params  # the step's own parameters, kept as written
        sid = step.get("id")
        if isinstance(sid, str) and sid in out_vars:
            data["outputVar"] = out_vars[sid]
        data["typeagentStep"] = origin
        b.add(kind, data)
    wf = b.workflow(
        raw,
        name=raw.get("name") or raw.get("actionName"),
        description=raw.get("description"),
        variables=variables,
        triggers=typeagent_patterns(b, raw.get("grammarPatterns")),
        used={"name", "description", "parameters", "steps"},
    )
    return ImportResult("typeagent-steps", wf, b.warnings)


def import_typeagent_script(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = ImportBuilder("typeagent-script", path)
    variables = typeagent_variables(b, raw.get("parameters"))
    start_node(b, variables)
    script = raw.get("script")
    if isinstance(script, dict):  # ScriptFlow: {language, body, expectedOutputFormat}
        data = {"language": str(script.get("language") or "powershell"), "script": str(script.get("body") or "")}
        data.update({k: v for k, v in script.items() if k not in ("language", "body")})
        flavour = "ScriptFlow"
    else:  # TaskFlow: the TypeScript source as a string
        data = {"language": "typescript", "script": str(script or "")}
        flavour = "TaskFlow"
    data["recipeKind"] = flavour
    b.add("script", data)
    runner = "pwsh (when installed)" if flavour == "ScriptFlow" else "Deno (the `code` extra)"
    b.warn(f"the {data['language']} script is kept verbatim in a script node, which runs it with {runner}")
    name = raw.get("actionName") or raw.get("name")
    wf = b.workflow(
        raw,
        name=name,
        description=raw.get("description"),
        variables=variables,
        triggers=typeagent_patterns(b, raw.get("grammarPatterns")),
        used={"name", "actionName", "description", "parameters", "script"},
    )
    # grammarPatterns also stays in the metadata as written; the triggers keep isAlias/examples
    return ImportResult("typeagent-script", wf, b.warnings)
