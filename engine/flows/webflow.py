"""TypeAgent WebFlow definitions (seed 000 ``WebFlowDefinition``) as Flowdesk workflows.

A definition ``{name, description, version, parameters: {name: {type, required, description,
default?, valueOptions?}}, script, grammarPatterns, scope: {type, domains?, urlPatterns?},
source}`` becomes a workflow with one ``browser`` node running the script, its parameters the
Start node's variables (``valueOptions`` → ``enum``) handed to the script as ``params``, and its
grammar patterns the workflow's triggers. :mod:`engine.flows.importers` builds the workflow
around what this module makes of the definition (detection: a ``script`` text with a ``scope``
object; or, as TypeAgent stores definitions, a ``scope`` and ``parameters`` with the script in a
``.js`` file of its own: :func:`webflow_script_file` finds it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["is_webflow", "webflow_parameters", "webflow_node_data", "webflow_script_file", "WEBFLOW_FIELDS"]

#: The definition's fields the workflow represents (the others stay in its import metadata).
WEBFLOW_FIELDS = {"name", "description", "parameters", "script", "grammarPatterns", "scope"}


def is_webflow(raw: Any) -> bool:
    """Whether a decoded document has a WebFlow definition's shape."""
    return isinstance(raw, dict) and isinstance(raw.get("script"), str) and isinstance(raw.get("scope"), dict)


def webflow_parameters(raw: dict[str, Any]) -> Any:
    """The definition's parameters as TypeAgent parameters, ``valueOptions`` made ``enum``."""
    params = raw.get("parameters")
    if not isinstance(params, dict):
        return params
    out: dict[str, Any] = {}
    for name, spec in params.items():
        if isinstance(spec, dict) and "valueOptions" in spec:
            spec = {k: v for k, v in spec.items() if k != "valueOptions"}
            options = params[name]["valueOptions"]
            if isinstance(options, list):
                spec["enum"] = options
        out[name] = spec
    return out


def webflow_node_data(raw: dict[str, Any], warn: Callable[[str], None]) -> dict[str, Any]:
    """The ``browser`` node's data: the script, its scope, and each parameter passed by name."""
    scope = dict(raw.get("scope") or {})
    if scope.get("urlPatterns"):
        warn("the scope's urlPatterns are kept but not enforced; its domains are")
    if scope.get("type") == "site" and not scope.get("domains"):
        origin = (raw.get("source") or {}).get("originUrl") if isinstance(raw.get("source"), dict) else None
        warn(
            "the site scope names no domains"
            + (f" (its source was {origin}); add them before running" if origin else "; add them before running")
        )
    params = raw.get("parameters") if isinstance(raw.get("parameters"), dict) else {}
    data: dict[str, Any] = {"script": str(raw.get("script") or ""), "scope": scope}
    if params:
        data["params"] = {name: "{{" + name + "}}" for name in params if isinstance(name, str)}
    return data


def webflow_script_file(path: Any, name: Any) -> Path | None:
    """The script of a definition stored without it, as TypeAgent stores them (``flows/global/N.json``
    or ``flows/sites/DOMAIN/N.json``, the body in ``scripts/N.js`` of the folder above ``flows``):
    ``N.js`` next to the file, else in a ``scripts`` folder of the file's folder or one of the
    three above it. ``N`` is the file's stem, else the definition's ``name``; None when not found."""
    if path is None:
        return None
    here = Path(path).parent
    stems = [Path(path).stem] + ([name] if isinstance(name, str) and name and "/" not in name else [])
    folders = [here] + [d / "scripts" for d in [here, *list(here.parents)[:3]]]
    for folder in folders:
        for stem in stems:
            candidate = folder / f"{stem}.js"
            if candidate.is_file():
                return candidate
    return None
