"""What the canvas adds to a workflow file: sticky notes and groups of nodes.

Display only (docs/design.md, "File format"): a run never reads them and AgentFlow ignores
these top-level fields (``notes``, ``groups``), so a file that has them still opens there.
:class:`~engine.graph.model.Workflow` holds them; the editor draws and edits them.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_serializer, field_validator

from engine.nodes.base import _Loose, is_none

__all__ = ["NOTE_COLORS", "CanvasNote", "CanvasGroup"]


#: The colours a sticky note can take (the file holds the name; the editor maps it to a colour).
NOTE_COLORS = ("yellow", "blue", "green", "pink", "grey")


class CanvasNote(_Loose):
    """A sticky note on the canvas (display only: a run never reads it; AgentFlow ignores it).

    ``text`` is Markdown; ``x``, ``y``, ``width``, ``height`` its frame in canvas units;
    ``color`` one of :data:`NOTE_COLORS` (another name is kept and shown as yellow).
    """

    id: str
    x: float = Field(default=0.0, allow_inf_nan=False)
    y: float = Field(default=0.0, allow_inf_nan=False)
    width: float = Field(default=220.0, allow_inf_nan=False, gt=0)
    height: float = Field(default=140.0, allow_inf_nan=False, gt=0)
    text: str = ""
    color: str = "yellow"

    @field_serializer("x", "y", "width", "height")
    def _num_out(self, v: float) -> float | int:
        return int(v) if isinstance(v, float) and v.is_integer() else v

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class CanvasGroup(_Loose):
    """A titled frame around nodes (display only; AgentFlow ignores it).

    The frame has no position of its own: it is drawn around its ``nodes`` (ids; an id that
    names no node is ignored), so moving the nodes moves the frame. ``collapsed``: the
    members are shown as one card with the group's title.
    """

    id: str
    title: str = "Group"
    nodes: list[str] = Field(default_factory=list)
    collapsed: bool | None = Field(default=None, exclude_if=is_none)
    color: str | None = Field(default=None, exclude_if=is_none)

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    @field_validator("nodes", mode="before")
    @classmethod
    def _node_ids(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [str(i) if isinstance(i, int) and not isinstance(i, bool) else i for i in v]
        return v
