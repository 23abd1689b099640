"""The run console's header row: the run's input, Run / Cancel, the status and the Export menu.

A plain widget: it holds the controls and shows what it is told (status, elapsed time,
run id, errors); the console wires it to the bridge.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QLabel, QMenu, QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

__all__ = ["RunHeader", "STATUS_TEXT", "elapsed_text"]

STATUS_TEXT = {
    "pending": ("Ready", "#6b7280"),
    "running": ("● Running", "#2563eb"),
    "paused": ("● Paused — waiting for approval", "#d97706"),
    "completed": ("● Completed", "#15803d"),
    "failed": ("● Failed", "#dc2626"),
    "cancelled": ("● Cancelled", "#6b7280"),
}


def elapsed_text(seconds: float) -> str:
    seconds = max(0.0, seconds)
    m, s = divmod(seconds, 60)
    return f"{int(m):02d}:{s:04.1f}"


INPUT_PLACEHOLDER = "Initial input for the run (empty: the Start node's own text)"


class RunHeader(QWidget):
    """One row: input | Run / Cancel | status | Export (a short dock keeps room for the log)."""

    def __init__(self, run_action: QAction, cancel_action: QAction, export_actions: list[QAction],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        top = QHBoxLayout(self)
        top.setContentsMargins(0, 0, 0, 0)
        top.setSpacing(6)
        self.input_edit = QPlainTextEdit()
        self.input_edit.setObjectName("initialInput")
        self.input_edit.setPlaceholderText(INPUT_PLACEHOLDER)
        self.input_edit.setTabChangesFocus(True)
        fm = self.input_edit.fontMetrics()
        # two whole lines: the document margins (2 x 4) plus the app style's padding and border
        # (2 x 6) left half of the second line hidden with "+ 14"
        self.input_edit.setFixedHeight(fm.lineSpacing() * 2 + 24)
        top.addWidget(self.input_edit, 1)
        buttons = QVBoxLayout()
        buttons.setSpacing(4)
        self.run_button = QToolButton()
        self.run_button.setObjectName("runButton")
        self.run_button.setDefaultAction(run_action)
        self.run_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.run_button.setMinimumWidth(90)
        self.run_button.setStyleSheet("QToolButton { background: #15803d; color: white; font-weight: bold;"
                                      " border-radius: 4px; padding: 3px 10px; }"
                                      " QToolButton:disabled { background: #5f7a68; color: #d1d5db; }")
        self.cancel_button = QToolButton()
        self.cancel_button.setObjectName("cancelButton")
        self.cancel_button.setDefaultAction(cancel_action)
        self.cancel_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.cancel_button.setMinimumWidth(90)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        top.addLayout(buttons)
        status_col = QVBoxLayout()
        status_col.setSpacing(2)
        self.status_label = QLabel()
        self.status_label.setObjectName("runStatus")
        self.status_label.setWordWrap(True)
        self.status_label.setFixedWidth(250)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        meta = QHBoxLayout()
        self.elapsed_label = QLabel("")
        self.elapsed_label.setObjectName("runElapsed")
        self.elapsed_label.setStyleSheet("color: #8b93a1")
        self.run_id_label = QLabel("")
        self.run_id_label.setStyleSheet("color: #8b93a1")
        self.run_id_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        meta.addWidget(self.elapsed_label)
        meta.addSpacing(10)
        meta.addWidget(self.run_id_label)
        meta.addStretch(1)
        status_col.addWidget(self.status_label)
        status_col.addLayout(meta)
        status_col.addStretch(1)
        top.addLayout(status_col)
        self.export_button = QToolButton()
        self.export_button.setObjectName("exportButton")
        self.export_button.setText("Export")
        self.export_button.setToolTip("Copy the final output, or save the log or the run record")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        export_menu = QMenu(self.export_button)
        for a in export_actions:
            export_menu.addAction(a)
        self.export_button.setMenu(export_menu)
        top.addWidget(self.export_button, 0, Qt.AlignmentFlag.AlignTop)

    def set_status(self, status: str, detail: str | None = None) -> None:
        text, colour = STATUS_TEXT.get(status, (status, "#6b7280"))
        if detail and status in ("failed", "cancelled") and detail != "Cancelled by the user.":
            short = detail if len(detail) < 140 else detail[:137] + "…"
            text = f"{text}: {short}"
        self.status_label.setText(text)
        self.status_label.setToolTip(detail or "")
        self.status_label.setStyleSheet(f"color: {colour}; font-weight: bold")

    def show_error(self, message: str) -> None:
        self.status_label.setText(message)
        self.status_label.setToolTip(message)
        self.status_label.setStyleSheet("color: #dc2626; font-weight: bold")

    def set_run_id(self, run_id: str | None, server: str | None = None) -> None:
        """The run's short id, with a badge naming the Temporal server when it runs there."""
        text = f"run {run_id[:8]}" if run_id else ""
        if run_id and server:
            text += f"  ·  ☁ Temporal {server}"
        self.run_id_label.setText(text)
        self.run_id_label.setToolTip(f"Run {run_id} on the Temporal server at {server} (its workers run it; "
                                     "follow it with: flowdesk follow ID --temporal SERVER)" if run_id and server else
                                     (f"Run {run_id}" if run_id else ""))

    def set_elapsed(self, seconds: float | None) -> None:
        self.elapsed_label.setText(elapsed_text(seconds) if seconds is not None else "")
