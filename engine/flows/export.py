"""Export of a Flowdesk workflow to another system's flow format: AnythingLLM agent flows.

:func:`export_anythingllm` writes a chain workflow (start, then http, agent, fetch and
JavaScript code nodes, one link out of each) as an AnythingLLM agent flow; what the format
cannot express raises :class:`ExportRefused` naming the node and why. The importers
(:mod:`engine.flows.importers`) read such files back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.errors import FlowdeskError
from engine.graph.model import Workflow
from engine.nodes import spec_for
from engine.nodes.agent import DEFAULT_SYSTEM_PROMPT
from engine.nodes.credentials import literal_credentials

__all__ = ["EXPORT_FORMATS", "ExportRefused", "export_anythingllm"]

EXPORT_FORMATS = ("anythingllm",)


class ExportRefused(FlowdeskError):
    """A workflow that the target format cannot express; the message says which node and why."""


_WHOLE_REF = re.compile(r"^\s*(?:\{\{\s*([A-Za-z_$][\w$]*)\s*\}\}|\$\{\s*([A-Za-z_$][\w$]*)\s*\})\s*$")


def _code_block_config(label: str, d: dict[str, Any]) -> dict[str, Any]:
    """A ``code`` node as an AnythingLLM ``code`` block's config. The block runs JavaScript and
    sees the flow variables by their own names, so each input must bind a variable of its name."""
    language = str(d.get("language") or "python")
    if language != "javascript":
        raise ExportRefused(
            f"Cannot export to an AnythingLLM agent flow: {label} is {language} code; AnythingLLM code "
            "blocks run JavaScript."
        )
    for name, template in (d.get("inputs") or {}).items():
        m = _WHOLE_REF.match(template) if isinstance(template, str) else None
        if m is None or (m.group(1) or m.group(2)) != name:
            raise ExportRefused(
                f"Cannot export to an AnythingLLM agent flow: {label}'s input '{name}' is not the flow "
                f"variable {{{{{name}}}}}; an AnythingLLM code block sees only the flow's variables by name."
            )
    return {"language": "javascript", "code": d.get("code") or ""}


def export_anythingllm(workflow: Workflow, warnings: list[str] | None = None) -> dict[str, Any]:
    """The workflow as an AnythingLLM agent flow. It must be a chain from start through http,
    agent, fetch and JavaScript code nodes only (one link out of each); anything else raises :class:`ExportRefused`.
    ``warnings``, when given, receives a sentence for each literal credential copied into the
    export (a header, a query parameter or the URL of an ``http`` node)."""

    def label(n: Any) -> str:
        spec = spec_for(n.type)
        return spec.describe(n) if spec is not None else f"'{n.id}'"

    start = workflow.start_node()
    if start is None:
        raise ExportRefused("Cannot export to an AnythingLLM agent flow: the workflow has no start node.")
    nodes = workflow.node_map()
    out_links: dict[str, list[Any]] = {}
    in_count: dict[str, int] = {}
    for c in workflow.connections:
        out_links.setdefault(c.source, []).append(c)
        in_count[c.target] = in_count.get(c.target, 0) + 1
    start_vars = getattr(start.data, "variables", None)
    if start_vars is None:
        start_vars = (start.data.model_extra or {}).get("variables") or []
    variables = []
    for v in start_vars:
        v = v if isinstance(v, dict) else v.model_dump(mode="json")
        value = v.get("value")
        item = {
            "name": v.get("name"),
            "value": "" if value is None else (value if isinstance(value, str) else json.dumps(value)),
        }
        if v.get("description"):
            item["description"] = v["description"]
        variables.append(item)
    steps: list[dict[str, Any]] = [{"type": "start", "config": {"variables": variables}}]
    seen = {start.id}
    current = start
    previous_var: str | None = None
    while True:
        links = out_links.get(current.id, [])
        if not links:
            break
        if len(links) > 1:
            raise ExportRefused(
                f"Cannot export to an AnythingLLM agent flow: {label(current)} has "
                f"{len(links)} outgoing links; the format has only a chain of blocks."
            )
        link = links[0]
        if link.sourceHandle not in (None, "output"):
            raise ExportRefused(
                f"Cannot export to an AnythingLLM agent flow: the link from {label(current)} leaves "
                f"from its '{link.sourceHandle}' handle; the format has only a chain of blocks."
            )
        node = nodes.get(link.target)
        if node is None:
            break
        if node.id in seen:
            raise ExportRefused(
                f"Cannot export to an AnythingLLM agent flow: {label(node)} is reached twice (a "
                "loop); the format has only a chain of blocks."
            )
        if in_count.get(node.id, 0) > 1:
            raise ExportRefused(
                f"Cannot export to an AnythingLLM agent flow: {label(node)} has several incoming "
                "links; the format has only a chain of blocks."
            )
        seen.add(node.id)
        d = node.data.model_dump(mode="json", exclude_none=True)
        out_var = d.get("outputVar") or None
        if node.type == "http":
            if warnings is not None:
                warnings.extend(
                    f"{label(node)}: {where} holds a credential typed in, copied into the export as it "
                    "is; write {{secrets.NAME}} instead"
                    for where in literal_credentials(d)
                )
            config: dict[str, Any] = {"url": d.get("url", ""), "method": str(d.get("method") or "GET").upper()}
            if d.get("query"):
                raise ExportRefused(
                    f"Cannot export to an AnythingLLM agent flow: {label(node)} has query rows; put them in its URL."
                )
            for key in ("headers", "bodyType", "body", "formData"):
                if d.get(key) not in (None, "", []):
                    config[key] = d[key]
            if isinstance(config.get("body"), (dict, list)):
                config["body"] = json.dumps(config["body"], ensure_ascii=False)
            if out_var:
                config["responseVariable"] = out_var
            step: dict[str, Any] = {"type": "apiCall", "config": config}
        elif node.type == "agent":
            tools = d.get("tools") or {}
            if tools.get("web_search") or tools.get("subagents") or tools.get("flows"):
                raise ExportRefused(
                    f"Cannot export to an AnythingLLM agent flow: {label(node)} uses tools; an "
                    "llmInstruction block has none."
                )
            prompt = d.get("userPrompt") or ""
            if not prompt or "PREVIOUS_OUTPUT" in prompt or re.search(r"(\{\{|\$\{)\s*input\b", prompt):
                if previous_var is None:
                    raise ExportRefused(
                        f"Cannot export to an AnythingLLM agent flow: {label(node)} uses the previous "
                        "output, which the format has no name for; give the previous node an output "
                        "variable (outputVar)."
                    )
                prompt = (
                    re.sub(
                        r"\{\{\s*(PREVIOUS_OUTPUT|input)\s*\}\}|\$\{\s*(PREVIOUS_OUTPUT|input)\s*\}",
                        "${" + previous_var + "}",
                        prompt,
                    )
                    if prompt
                    else "${" + previous_var + "}"
                )
            system = d.get("systemPrompt") or ""

            if system and system != DEFAULT_SYSTEM_PROMPT:
                prompt = f"{system}\n\n{prompt}"
            config = {"instruction": prompt}
            if out_var:
                config["resultVariable"] = out_var
            step = {"type": "llmInstruction", "config": config}
        elif node.type == "fetch":
            config = {"url": d.get("url", "")}
            if out_var:
                config["resultVariable"] = out_var
            step = {"type": "webScraping", "config": config}
        elif node.type == "code":
            config = _code_block_config(label(node), d)
            if out_var:
                config["resultVariable"] = out_var
            step = {"type": "code", "config": config}
        else:
            raise ExportRefused(
                f"Cannot export to an AnythingLLM agent flow: {label(node)} is a '{node.type}' node; "
                "the format has only start variables, API calls (http), LLM instructions (agent), "
                "web scraping (fetch) and JavaScript code blocks (code)."
            )
        if d.get("directOutput"):
            step["config"]["directOutput"] = True
        steps.append(step)
        previous_var = out_var
        current = node
    reachable_others = [n for n in workflow.nodes if n.id not in seen]
    if reachable_others:
        raise ExportRefused(
            f"Cannot export to an AnythingLLM agent flow: {label(reachable_others[0])} is not in the "
            "chain from start; the format has only a chain of blocks."
        )
    out: dict[str, Any] = {"name": workflow.name or "Untitled workflow"}
    if workflow.description:
        out["description"] = workflow.description
    meta = (workflow.model_extra or {}).get("imported")
    active = (
        meta.get("metadata", {}).get("active")
        if isinstance(meta, dict) and isinstance(meta.get("metadata"), dict)
        else None
    )
    out["active"] = True if active is None else active
    out["steps"] = steps
    return out
