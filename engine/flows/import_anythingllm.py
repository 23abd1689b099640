"""Import of AnythingLLM agent flows: ``{name, description, active, steps: [{type, config}]}``.

Blocks ``start`` (its ``variables`` become the Start node's), ``apiCall`` (an ``http`` node),
``llmInstruction`` (``agent``), ``webScraping`` (``fetch``) and ``code`` (JavaScript: a ``code``
node); ``responseVariable``/``resultVariable`` become ``outputVar``; ``directOutput`` ends the
flow there. Literal credentials in an ``apiCall``'s headers or URL become ``{{secrets.NAME}}``
references with a warning. Any other block refuses the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from engine.flows.import_common import ImportBuilder, ImportResult, json_kind, start_node
from engine.nodes.credentials import URL_PASSWORD, looks_like_literal_credential, url_credential_params

__all__ = ["import_anythingllm"]


def _credential_safe_headers(b: ImportBuilder, where: str, headers: Any) -> Any:
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


def _credential_safe_url(b: ImportBuilder, where: str, url: Any) -> Any:
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


def import_anythingllm(raw: Mapping[str, Any], path: Any) -> ImportResult:
    b = ImportBuilder("anythingllm", path)
    steps = raw.get("steps") or []
    variables: list[dict[str, Any]] = []
    start_extra: dict[str, Any] = {}
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise b.refuse(f"steps[{i}] is not an object")
        kind = step.get("type")
        config = step.get("config")
        if config is not None and not isinstance(config, dict):
            raise b.refuse(f"steps[{i}].config is not an object (found {json_kind(config)}); nothing was imported")
        if kind == "start":
            config = config or {}
            if not isinstance(config.get("variables") or [], list):
                raise b.refuse(
                    f"steps[{i}].config.variables is not a list (found "
                    f"{json_kind(config.get('variables'))}); nothing was imported"
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
        else:
            _check_fields(b, i, kind, config or {})
    start_node(b, variables, start_extra)
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

# The fields of each block read as text, and what else they may be (None: nothing else).
_TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "apiCall": ("url", "method", "bodyType"),
    "llmInstruction": ("instruction",),
    "webScraping": ("url",),
    "code": ("code", "language"),
}


def _check_fields(b: ImportBuilder, i: int, kind: str, config: Mapping[str, Any]) -> None:
    """Refuse a block whose field has the wrong type, naming the block and the field (rather than
    the converted node's field, which the user never wrote)."""
    where = f"steps[{i}] ({kind}): config"
    for name in _TEXT_FIELDS[kind]:
        value = config.get(name)
        if value is not None and not isinstance(value, str):
            raise b.refuse(f"{where}.{name} must be text (found {json_kind(value)}); nothing was imported")
    if kind != "apiCall":
        return
    headers = config.get("headers")
    if headers is not None and not isinstance(headers, (list, Mapping)):
        raise b.refuse(
            f"{where}.headers must be a list of {{key, value}} rows (found {json_kind(headers)}); nothing was imported"
        )
    for j, row in enumerate(headers if isinstance(headers, list) else ()):
        if not isinstance(row, Mapping):
            raise b.refuse(
                f"{where}.headers[{j}] must be a {{key, value}} row (found {json_kind(row)}); nothing was imported"
            )
    form = config.get("formData")
    if form is not None and not isinstance(form, list):
        raise b.refuse(
            f"{where}.formData must be a list of {{key, value}} rows (found {json_kind(form)}); nothing was imported"
        )


def _anythingllm_code(b: ImportBuilder, i: int, config: dict[str, Any], defined: list[str]) -> dict[str, Any]:
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
