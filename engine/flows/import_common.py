"""What every flow importer shares: the result, the refusal, and the builder of a workflow.

:class:`ImportBuilder` lays out the converted workflow (start, then the blocks in order, linked
left to right; blocks after a flow's end below the chain, unlinked), collects warnings, keeps the
document's other fields under ``imported`` and checks the triggers' grammar. One module per
format uses it: :mod:`engine.flows.import_anythingllm`, :mod:`engine.flows.import_typeagent`;
:mod:`engine.flows.importers` detects the format and dispatches.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.flows.grammar import TriggerPatternError, compile_trigger, trigger_text
from engine.graph.formats import FLOW_FORMATS, format_label
from engine.graph.model import WorkflowLoadError

__all__ = ["ImportRefused", "ImportResult", "ImportBuilder", "json_kind", "start_node"]

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
        article = "an" if self.label[:1].lower() in "aeiou" else "a"
        text = f"{name} is {article} {self.label}; converted to a Flowdesk workflow"
        if self.warnings:
            text += f" ({len(self.warnings)} warning{'s' if len(self.warnings) != 1 else ''})"
        return text


class ImportBuilder:
    """A workflow being converted from the format ``fmt`` (the file at ``path``, if any)."""

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


def start_node(b: ImportBuilder, variables: list[dict[str, Any]], extra: Mapping[str, Any] | None = None) -> str:
    data: dict[str, Any] = {"initialInput": ""}
    if variables:
        data["variables"] = variables
    if extra:
        data.update(extra)
    return b.add("start", data)


def json_kind(value: Any) -> str:
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
