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

Each format's conversion is its own module (:mod:`engine.flows.import_anythingllm`,
:mod:`engine.flows.import_typeagent`; WebFlow's small one is here), on the shared builder of
:mod:`engine.flows.import_common`; this module detects the format and dispatches.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.flows.export import EXPORT_FORMATS, ExportRefused, export_anythingllm
from engine.flows.import_anythingllm import import_anythingllm
from engine.flows.import_common import ImportBuilder, ImportRefused, ImportResult, start_node
from engine.flows.import_typeagent import (
    import_typeagent_script,
    import_typeagent_steps,
    typeagent_patterns,
    typeagent_variables,
)
from engine.flows.webflow import WEBFLOW_FIELDS, webflow_node_data, webflow_parameters, webflow_script_file
from engine.graph.formats import FLOW_FORMATS, detect_flow_format, format_label
from engine.graph.model import (
    Workflow,
    WorkflowLoadError,
    load_workflow,
    loads_workflow,
    parse_workflow,
    workflow_to_dict,
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


def _import_webflow(raw: Mapping[str, Any], path: Any) -> ImportResult:
    if not isinstance(raw.get("script"), str):
        found = webflow_script_file(path, raw.get("name"))
        if found is None:
            name = raw.get("name") if isinstance(raw.get("name"), str) else Path(path or "flow").stem
            raise ImportRefused(
                f"{format_label('webflow')}: its script is not in the file, and no {name}.js was found next "
                "to it or in a 'scripts' folder above it (TypeAgent keeps it in browser/webflows/scripts/)",
                fmt="webflow",
                path=path,
            )
        try:
            raw = {**raw, "script": found.read_text(encoding="utf-8")}
        except (OSError, UnicodeDecodeError) as err:
            raise ImportRefused(
                f"{format_label('webflow')}: its script {found} could not be read ({err})", fmt="webflow", path=path
            ) from None
    b = ImportBuilder("webflow", path)
    variables = typeagent_variables(b, webflow_parameters(dict(raw)))
    start_node(b, variables)
    b.add("browser", webflow_node_data(dict(raw), b.warn))
    triggers = typeagent_patterns(b, raw.get("grammarPatterns"))
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
    "anythingllm": import_anythingllm,
    "typeagent-steps": import_typeagent_steps,
    "typeagent-script": import_typeagent_script,
    "webflow": _import_webflow,
}


def import_flow(raw: Any, *, path: str | os.PathLike[str] | None = None) -> ImportResult:
    """Convert a decoded foreign document. Raises :class:`ImportRefused` (format named) when it
    cannot be represented, :class:`WorkflowLoadError` when it is no known format."""
    fmt = detect_flow_format(raw)
    if fmt is None:
        raise WorkflowLoadError(
            "not a workflow graph (no 'nodes' list), and not a flow file Flowdesk can import "
            "(AnythingLLM agent flow, TypeAgent step or script recipe, TypeAgent WebFlow definition)",
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
