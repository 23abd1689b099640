"""The ``script`` node: a script imported from another system (a TypeAgent script recipe's
PowerShell or TypeScript body), kept verbatim so nothing is lost. Flowdesk does not run
scripts: a reachable script node is a validation error saying so, and running one fails.
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from engine.nodes.base import NodeData, NodeError, NodeSpec


class ScriptData(NodeData):
    language: str = ""
    script: str = ""

    @field_validator("language", "script", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


def cannot_run_message(data: NodeData) -> str:
    language = getattr(data, "language", "") or "script"
    return (
        f"{language} scripts cannot run in Flowdesk: this node keeps an imported script verbatim; "
        "replace it with nodes that do the same work"
    )


class ScriptSpec(NodeSpec):
    kind = "script"
    data_model = ScriptData
    label = "Script"
    description = "An imported script, kept verbatim (cannot run)."
    icon = "script"
    color = "#6e7681"
    category = "Imported"
    in_palette = False

    def title(self, data: NodeData) -> str:
        language = getattr(data, "language", "")
        return f"Script ({language})" if language else "Script"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        lines = [ln.strip() for ln in (getattr(data, "script", "") or "").splitlines() if ln.strip()]
        return [(lines[0] if lines else "(empty script)", True), ("cannot run", True)]

    def check(self, node: Any, checks: Any) -> None:
        checks.error("script_cannot_run", f"{checks.label(node)}: {cannot_run_message(node.data)}.")

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        raise NodeError(cannot_run_message(node.data))


SPEC = ScriptSpec()
