"""Run ▸ Run On (its menu: :mod:`editor.controllers.providers`): runs on this computer, or on a Temporal server (the ``temporal`` extra).

The choice and the server (address, namespace, task queue) are GUI settings (``gui.ini``).
A run on a server is an :class:`engine.RemoteRun`: the console, the canvas states and the
approval cards show it as they show a local run, and an approval answered here goes to the
server. Its workers use their own provider keys; the provider chosen in the Run menu is
passed on by name. The history lists the configured server's runs with a "Temporal" badge.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QMessageBox

from engine import RemoteRun

from .settings import settings

__all__ = ["TemporalServerDialog", "remote_run_factory"]

_ADDRESS = re.compile(r"^[^\s:/]+:\d{1,5}$")


def remote_run_factory() -> Callable[..., Any] | None:
    """What makes runs when "Run On" is a Temporal server (None: this computer)."""
    s = settings()
    address = str(s.value("run/temporalAddress", "") or "")
    if str(s.value("run/on", "local")) != "temporal" or not address:
        return None

    provider = str(s.value("run/provider", "") or "")
    model = str(s.value("run/model", "") or "")
    meta = {k: v for k, v in (("provider", provider), ("model", model)) if v}
    return partial(
        RemoteRun,
        address=address,
        namespace=str(s.value("run/temporalNamespace", "") or "default"),
        task_queue=str(s.value("run/temporalTaskQueue", "") or "flowdesk"),
        meta=meta,
    )


class TemporalServerDialog(QDialog):
    """The Temporal server runs go to: HOST:PORT, namespace, task queue."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Temporal Server")
        s = settings()
        form = QFormLayout(self)
        form.addRow(QLabel("Runs go to this server's workers (`flowdesk worker --temporal HOST:PORT`)."))
        self.address = QLineEdit(str(s.value("run/temporalAddress", "") or ""))
        self.address.setPlaceholderText("127.0.0.1:7233")
        self.namespace = QLineEdit(str(s.value("run/temporalNamespace", "") or "default"))
        self.task_queue = QLineEdit(str(s.value("run/temporalTaskQueue", "") or "flowdesk"))
        form.addRow("Address", self.address)
        form.addRow("Namespace", self.namespace)
        form.addRow("Task queue", self.task_queue)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def accept(self) -> None:
        address = self.address.text().strip()
        if not _ADDRESS.match(address):
            QMessageBox.warning(self, "Temporal Server", f"'{address}' is not HOST:PORT (for example 127.0.0.1:7233).")
            return
        s = settings()
        s.setValue("run/temporalAddress", address)
        s.setValue("run/temporalNamespace", self.namespace.text().strip() or "default")
        s.setValue("run/temporalTaskQueue", self.task_queue.text().strip() or "flowdesk")
        s.setValue("run/on", "temporal")
        super().accept()
