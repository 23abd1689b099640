"""Flow files of other systems: detection by shape, import into a Flowdesk workflow, export back.

Formats (see docs/design.md, "Reusable flows: library, triggers, import"):

* ``anythingllm`` — an AnythingLLM agent flow: ``{name, description, active, steps: [{type,
  config}]}`` with blocks ``start`` (``variables``), ``apiCall``, ``llmInstruction``,
  ``webScraping``, ``code`` (JavaScript: a ``code`` node); ``${…}`` references;
  ``responseVariable``/``resultVariable``; ``directOutput``.
* ``typeagent-steps`` — a TypeAgent step recipe: ``{name, description, parameters, steps: [{id,
  schemaName, actionName, parameters}], grammarPatterns}`` with ``${param}``, ``${id.text}`` and
  ``${id.data.path}`` references.
* ``typeagent-script`` — a TypeAgent script recipe: a ScriptFlow recipe (``actionName``,
  ``script: {language, body}``, ``grammarPatterns: [{pattern, isAlias, examples}]``, ``sandbox``)
  or a TaskFlow recipe (``name``, ``script`` as a string, ``grammarPatterns: [str]``).
* ``flowdesk`` — a Flowdesk (or AgentFlow) workflow: ``{nodes, connections}``.

:func:`import_flow` turns a decoded foreign document into a laid-out Flowdesk workflow dict
(start → blocks in order), with the document's other fields kept under the workflow's
``imported`` field so nothing is lost; :class:`ImportRefused` (a :class:`WorkflowLoadError`)
names the format and what cannot be represented. :func:`load_any_workflow` reads a file of any
of these formats (Flowdesk files go through :func:`engine.graph.model.load_workflow` unchanged).
:func:`export_anythingllm` (in :mod:`engine.flows.export`, named here too) writes a chain
workflow back as an AnythingLLM agent flow.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from engine.flows.export import EXPORT_FORMATS, ExportRefused, export_anythingllm
from engine.flows.grammar import TriggerPatternError, compile_trigger, trigger_text
from engine.flows.webflow import WEBFLOW_FIELDS, webflow_node_data, webflow_parameters
from engine.graph.formats import FLOW_FORMATS, detect_flow_format, format_label
from engine.graph.model import (
    Workflow,
    WorkflowLoadError,
    load_workflow,
    loads_workflow,
    parse_workflow,
    workflow_to_dict,
)
from engine.nodes.credentials import (
    URL_PASSWORD,
    looks_like_literal_credential,
    url_credential_params,
)

__all__ = [
    "FLOW_FORMATS",
    "ImportResult",
    "ImportRefused",
    "ExportRefused",
    "detect_flow_format",
    "format_label",
    "import_flow",
    "load_any_workflow",
    "export_anythingllm",
    "EXPORT_FORMATS",
]

_X0, _Y0, _DX, _Y_UNLINKED = 80, 120, 320, 360


class ImportRefused(WorkflowLoadError):
    """A foreign file that cannot be imported; the message names its format and the reason."""

    def __init__(self, message: str, *, fmt: str, path: str | os.PathLike[str] | None = None):
        self.format = fmt
        super().__init__(message, path=path)


@dataclass
class ImportResult:
    """A converted document: ``workflow`` (a Flowdesk workflow dict), ``warnings`` (text)."""

    format: str
    workflow: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return FLOW_FORMATS[self.format]

    def note(self, path: str | os.PathLike[str] | None = None) -> str:
        """One line for a status bar or stderr: what was converted from what."""
        name = Path(path).name if path else "the file"
        text = f"{name} is a {self.label}; converted to a Flowdesk workflow"
        if self.warnings:
            text += f" ({len(self.warnings)} warning{'s' if len(self.warnings) != 1 else ''})"
        return text


# ------------------------------------------------------------------------------- building blocks
class _Builder:
    def __init__(self, fmt: str, path: Any) -> None:
        self.fmt = fmt
        self.path = path
        self.nodes: list[dict[str, Any]] = []
        self.connections: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.chain: list[str] = []  # node ids linked from start, in order
        self.unlinked = 0

    def refuse(self, message: str) -> ImportRefused:
        return ImportRefused(f"{format_label(self.fmt)}: {message}", fmt=self.fmt, path=self.path)

    def warn(self, message: str) -> None:
        self.warnings.append(f"{format_label(self.fmt)}: {message}")

    def add(self, kind: str, data: dict[str, Any], *, linked: bool = True) -> str:
        nid = f"n{len(self.nodes) + 1}"
        if linked:
            x, y = _X0 + _DX * len(self.chain), _Y0
            if self.chain:
                self.connections.append(
                    {"source": self.chain[-1], "target": nid, "sourceHandle": "output", "targetHandle": "input"}
                )
            self.chain.append(nid)
        else:
            x, y = _X0 + _DX * (len(self.chain) + self.unlinked - 1), _Y_UNLINKED
            self.unlinked += 1
        self.nodes.append({"id": nid, "type": kind, "x": x, "y": y, "data": data})
        return nid

    def workflow(
        self,
        raw: Mapping[str, Any],
        *,
        name: Any,
        description: Any,
        variables: list[dict[str, Any]],
        triggers: list[Any],
        used: set[str],
    ) -> dict[str, Any]:
        wf: dict[str, Any] = {}
        if isinstance(name, str) and name:
            wf["name"] = name
        if isinstance(description, str) and description:
            wf["description"] = description
        wf["version"] = 1
        if triggers:
            wf["triggers"] = triggers
        wf["nodes"] = self.nodes
        wf["connections"] = self.connections
        metadata = {k: v for k, v in raw.items() if k not in used}
        wf["imported"] = {
            "format": self.fmt,
            "formatLabel": format_label(self.fmt),
            **({"file": Path(self.path).name} if self.path else {}),
            "metadata": metadata,
        }
        self._check_triggers(triggers)
        return wf

    def _check_triggers(self, triggers: list[Any]) -> None:
        for item in triggers:
            pattern = trigger_text(item) or ""
            try:
                compile_trigger(pattern)
            except TriggerPatternError as err:
                self.warn(f"the grammar pattern '{pattern}' is not valid in Flowdesk ({err}); kept as written")


def _start_node(b: _Builder, variables: list[dict[str, Any]], extra: Mapping[str, Any] | None = None) -> str:
    data: dict[str, Any] = {"initialInput": ""}
    if variables:
        data["variables"] = variables
    if extra:
        data.update(extra)
    return b.add("start", data)


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words (for a refusal): ``a list``, ``text``, ``a number``…"""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else "an object"


def _credential_safe_headers(b: _Builder, where: str, headers: Any) -> Any:
    """Header rows with any literal credential replaced by a ``{{secrets.NAME}}`` reference
    (a workflow file never holds a secret); each replacement is a warning naming the header."""
    if isinstance(headers, Mapping):  # {name: value} written by hand
        headers = [{"key": str(k), "value": v} for k, v in headers.items()]
    if not isinstance(headers, list):
        return headers
    out = []
    for row in headers:
        if isinstance(row, dict) and looks_like_literal_credential(row.get("value"), str(row.get("key") or "")):
            key = str(row.get("key") or "header")
            secret = re.sub(r"\W+", "_", key).strip("_").upper() or "API_KEY"
            value = str(row.get("value"))
            scheme = re.match(r"\s*(Bearer|Token|Basic|Digest|ApiKey|Api-Key)\s+", value, re.IGNORECASE)
            row = {**row, "value": (scheme.group(0) if scheme else "") + f"{{{{secrets.{secret}}}}}"}
            b.warn(
                f"{where}: the header '{key}' held a literal credential; it now reads {{{{secrets.{secret}}}}} "
                f"(set {secret} in the environment or the keyring)"
            )
        out.append(row)
    return out


def _credential_safe_url(b: _Builder, where: str, url: Any) -> Any:
    """The URL with each query parameter holding a literal credential (``?api_key=abc``) made a
    ``{{secrets.NAME}}`` reference, and a userinfo password dropped; each change is a warning."""
    names = url_credential_params(url)
    if not names:
        return url
    parts = urlsplit(url.strip())
    netloc = parts.netloc
    if URL_PASSWORD in names:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}@{host}"
        b.warn(f"{where}: the URL held a password; it was removed (put it in the keyring and use a header)")
    pairs = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in names:
            secret = re.sub(r"\W+", "_", key).strip("_").upper() or "API_KEY"
            value = f"{{{{secrets.{secret}}}}}"
            b.warn(
                f"{where}: the URL's query parameter '{key}' held a literal credential; it now reads {value} "
                f"(set {secret} in the environment or the keyring)"
            )
        pairs.append(f"{quote(key, safe='')}={value if value.startswith('{{secrets.') else quote(value, safe='')}")
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(pairs), parts.fragment))


# ------------------------------------------------------------------------------- AnythingLLM
def _import_anythingllm(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = _Builder("anythingllm", path)
    steps = raw.get("steps") or []
    variables: list[dict[str, Any]] = []
    start_extra: dict[str, Any] = {}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise b.refuse(f"steps[{i}] is not an object")
        kind = step.get("type")
        config = step.get("config")
        if config is not None and not isinstance(config, dict):
            raise b.refuse(f"steps[{i}].config is not an object (found {_json_kind(config)}); nothing was imported")
        if kind == "start":
            config = config or {}
            if not isinstance(config.get("variables") or [], list):
                raise b.refuse(
                    f"steps[{i}].config.variables is not a list (found "
                    f"{_json_kind(config.get('variables'))}); nothing was imported"
                )
            for j, var in enumerate(config.get("variables") or []):
                if not isinstance(var, dict) or not isinstance(var.get("name"), str) or not var["name"]:
                    if isinstance(var, dict) and not var.get("name"):
                        continue  # AnythingLLM's editor leaves an empty row; it defines nothing
                    raise b.refuse(f"steps[{i}].config.variables[{j}] has no name")
                value = var.get("value")
                item = {"name": var["name"], "value": "" if value is None else value, "type": "string"}
                if var.get("description"):
                    item["description"] = var["description"]
                item.update({k: v for k, v in var.items() if k not in item and k not in ("value",)})
                variables.append(item)
            start_extra = {k: v for k, v in config.items() if k != "variables"}
        elif kind not in _ANYTHINGLLM_BLOCKS:
            what = f"a '{kind}' block" if isinstance(kind, str) else "a block without a type"
            raise b.refuse(f"{what} at steps[{i}] cannot be imported; nothing was imported")
    _start_node(b, variables, start_extra)
    ended_at: int | None = None
    defined = [v["name"] for v in variables]  # the flow variables so far: a code block sees them all
    for i, step in enumerate(steps):
        kind = step.get("type")
        if kind == "start":
            continue
        config = dict(step.get("config") or {})
        out_var = config.pop("responseVariable", None) or config.pop("resultVariable", None)
        config.pop("responseVariable", None)
        config.pop("resultVariable", None)
        direct = bool(config.get("directOutput"))
        if kind == "apiCall":
            data: dict[str, Any] = {
                "method": str(config.pop("method", "GET") or "GET").upper(),
                "url": _credential_safe_url(b, f"steps[{i}] (apiCall)", config.pop("url", "") or ""),
            }
            headers = config.pop("headers", None)
            if headers:
                data["headers"] = _credential_safe_headers(b, f"steps[{i}] (apiCall)", headers)
            body_type = config.pop("bodyType", None)
            body = config.pop("body", None)
            form = config.pop("formData", None)
            if body_type:
                data["bodyType"] = str(body_type).lower()
            elif body not in (None, ""):
                data["bodyType"] = "json"
            if body not in (None, ""):
                data["body"] = body
            if form:
                data["formData"] = form
            kind_out = "http"
        elif kind == "llmInstruction":
            data = {
                "agentName": f"Instruction {i}",
                "userPrompt": config.pop("instruction", "") or "",
                "tools": {"web_search": False, "subagents": False},
            }
            kind_out = "agent"
        elif kind == "code":
            data = _anythingllm_code(b, i, config, defined)
            kind_out = "code"
        else:  # webScraping
            data = {"url": config.pop("url", "") or "", "format": "markdown"}
            kind_out = "fetch"
        if out_var:
            data["outputVar"] = out_var
            if out_var not in defined:
                defined.append(out_var)
        data.update({k: v for k, v in config.items() if k not in data})  # directOutput and the rest, kept
        linked = ended_at is None
        b.add(kind_out, data, linked=linked)
        if not linked:
            continue
        if direct:
            ended_at = i
    if ended_at is not None and any(s.get("type") != "start" for s in steps[ended_at + 1 :]):
        later = len([s for s in steps[ended_at + 1 :] if s.get("type") != "start"])
        b.warn(
            f"steps[{ended_at}] ({steps[ended_at].get('type')}) has directOutput: the flow ends there; the "
            f"{later} later block{'s are' if later != 1 else ' is'} kept below the chain, unlinked"
        )
    wf = b.workflow(
        raw,
        name=raw.get("name"),
        description=raw.get("description"),
        variables=variables,
        triggers=[],
        used={"name", "description", "steps"},
    )
    return ImportResult("anythingllm", wf, b.warnings)


_ANYTHINGLLM_BLOCKS = ("apiCall", "llmInstruction", "webScraping", "code")


def _anythingllm_code(b: _Builder, i: int, config: dict[str, Any], defined: list[str]) -> dict[str, Any]:
    """A ``code`` block as a ``code`` node (docs/design.md, "Contract details"): JavaScript whose
    ``inputs`` bind every flow variable defined before the block (``{name: "{{name}}"}``), as
    AnythingLLM hands its code the whole variable map. ``config`` loses the keys used here."""
    language = str(config.pop("language", "") or "javascript").strip().lower()
    if language not in ("javascript", "js"):
        b.warn(
            f"steps[{i}] (code) says its language is '{language}'; AnythingLLM runs JavaScript, so it is kept as such"
        )
    return {
        "language": "javascript",
        "code": str(config.pop("code", "") or ""),
        "inputs": {name: "{{" + name + "}}" for name in defined},
    }


# ------------------------------------------------------------------------------- TypeAgent
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


def _typeagent_variables(b: _Builder, params: Any) -> list[dict[str, Any]]:
    """TypeAgent parameters (a list, or WebFlow's name → parameter map) as Start variables."""
    if isinstance(params, dict):
        params = [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in params.items()]
    out: list[dict[str, Any]] = []
    for j, p in enumerate(params or []):
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not p["name"]:
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


def _patterns(b: _Builder, raw: Any) -> list[Any]:
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


def _import_typeagent_steps(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = _Builder("typeagent-steps", path)
    variables = _typeagent_variables(b, raw.get("parameters"))
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
    _start_node(b, variables)
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
        triggers=_patterns(b, raw.get("grammarPatterns")),
        used={"name", "description", "parameters", "steps"},
    )
    return ImportResult("typeagent-steps", wf, b.warnings)


def _import_typeagent_script(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = _Builder("typeagent-script", path)
    variables = _typeagent_variables(b, raw.get("parameters"))
    _start_node(b, variables)
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
        triggers=_patterns(b, raw.get("grammarPatterns")),
        used={"name", "actionName", "description", "parameters", "script"},
    )
    # grammarPatterns also stays in the metadata as written; the triggers keep isAlias/examples
    return ImportResult("typeagent-script", wf, b.warnings)


def _import_webflow(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = _Builder("webflow", path)
    variables = _typeagent_variables(b, webflow_parameters(dict(raw)))
    _start_node(b, variables)
    b.add("browser", webflow_node_data(dict(raw), b.warn))
    triggers = _patterns(b, raw.get("grammarPatterns"))
    wf = b.workflow(
        raw,
        name=raw.get("name"),
        description=raw.get("description"),
        variables=variables,
        triggers=triggers,
        used=WEBFLOW_FIELDS,
    )
    return ImportResult("webflow", wf, b.warnings)


_IMPORTERS = {
    "anythingllm": _import_anythingllm,
    "typeagent-steps": _import_typeagent_steps,
    "typeagent-script": _import_typeagent_script,
    "webflow": _import_webflow,
}


def import_flow(raw: Any, *, path: str | os.PathLike[str] | None = None) -> ImportResult:
    """Convert a decoded foreign document. Raises :class:`ImportRefused` (format named) when it
    cannot be represented, :class:`WorkflowLoadError` when it is no known format."""
    fmt = detect_flow_format(raw)
    if fmt is None:
        raise WorkflowLoadError(
            "not a workflow graph (no 'nodes' list), and not a flow file Flowdesk can import "
            "(AnythingLLM agent flow, TypeAgent step or script recipe)",
            where="nodes",
            path=path,
        )
    if fmt == "flowdesk":
        wf = parse_workflow(raw, path=path)
        return ImportResult("flowdesk", workflow_to_dict(wf))
    result = _IMPORTERS[fmt](raw, path)
    try:
        parse_workflow(result.workflow, path=path)  # what we made must load
    except WorkflowLoadError as err:
        raise ImportRefused(f"{format_label(fmt)}: {err.reason}", fmt=fmt, path=path) from None
    return result


def load_any_workflow(path: str | os.PathLike[str]) -> tuple[Workflow, ImportResult | None]:
    """A workflow from a file of any known format; the :class:`ImportResult` when it was converted.

    Flowdesk files are read by :func:`engine.graph.model.load_workflow` (no second parse)."""
    p = Path(path)
    try:
        head = p.read_bytes() if p.is_file() else None
    except OSError:
        head = None
    if head is None or b'"nodes"' in head:
        return load_workflow(p), None
    try:
        raw = json.loads(head)
    except (ValueError, RecursionError):
        return loads_workflow(head, path=p), None  # the model's message says what is wrong
    fmt = detect_flow_format(raw)
    if fmt is None or fmt == "flowdesk":
        return loads_workflow(head, path=p), None
    result = import_flow(raw, path=p)
    return parse_workflow(result.workflow, path=p), result
