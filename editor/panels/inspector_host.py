"""What an inspector page may use of the inspector (:class:`PageHost`), and what a page is
(:class:`InspectorPage`). Pages import these protocols, never the inspector itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtWidgets import QLineEdit, QWidget

from ..editing import WorkflowDocument

__all__ = ["PageHost", "InspectorPage", "PageFactory"]


class PageHost(Protocol):
    """The inspector as its pages see it."""

    doc: WorkflowDocument
    node_id: str | None  # the node shown
    loading: bool  # True while the inspector fills its widgets: they echo no edit back
    library_flows: Callable[[], Any]  # () -> the library's flows (set by the window)

    def edit_field(self, field: str, value: Any, merge: bool = True) -> None:
        """Set a field of the node shown (a dotted path: ``tools.web_search``); one undo step,
        typing merged while ``merge``."""

    def watch(self, widget: QWidget) -> QWidget:
        """Register a field: leaving it ends a typing merge; a prompt box gets names inserted."""

    def bind_text(self, widget: QLineEdit | QWidget, field: str) -> None:
        """A text field (a line or a prompt box) that edits ``field`` as the user types."""

    def open_flow(self, ref: str) -> None:
        """Open the library flow ``ref`` (a flow or action node's "Open this flow")."""


class InspectorPage(Protocol):
    """A page: a widget that shows a node's data (``node.data.model_dump()``). It may also
    have ``heading(node) -> str``, the inspector's header line (default: the kind's label and
    the node id)."""

    def load(self, data: dict[str, Any]) -> None: ...


#: Makes a kind's page for the inspector (once, on first use).
PageFactory = Callable[[PageHost], QWidget]
