"""Inspector pages of the ``http`` node (and the pieces its "Send test request" uses).

:class:`HttpPage` edits method, URL, query and headers (key/value tables, each finished edit
one undo step), the body by ``bodyType`` (JSON/text in an editor, form rows in a table) and
``failOnStatus``. "Send test request" resolves the node's templates against the workflow's
Start variables and sends the request (:func:`engine.send_test_request`) on the running asyncio
loop (qasync), so the window stays responsive; the status, headers and body (pretty JSON,
capped) show below. Secrets used by the request are masked by the engine.

A header whose value looks like a literal credential (``looks_like_literal_credential``)
enables "Move to keyring": the value is stored in the OS keyring under a name the user picks
(``store_api_key``, the engine's one keyring writer) and the cell becomes ``{{secrets.NAME}}``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QFont, QIcon
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine import FlowdeskError, looks_like_literal_credential, mask_secrets, send_test_request, store_api_key

from ..resources import icon_path
from .kv_table import KeyValueTable

__all__ = ["HttpPage", "SHOWN_BODY_CHARS", "format_http_result", "start_variables"]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
BODY_TYPES = (("none", "No body"), ("json", "JSON"), ("form", "Form (url-encoded)"), ("text", "Text"))
SHOWN_BODY_CHARS = 20_000  # the test result shows at most this much of a body
_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def start_variables(workflow: Any) -> dict[str, Any]:
    """The Start node's variables (``name -> value``) of a workflow, for a node tried alone."""
    out: dict[str, Any] = {}
    for node in getattr(workflow, "nodes", []):
        if node.type != "start":
            continue
        for var in getattr(node.data, "variables", None) or []:
            name = var.get("name") if isinstance(var, dict) else getattr(var, "name", None)
            value = var.get("value") if isinstance(var, dict) else getattr(var, "value", None)
            if name:
                out[str(name)] = value
    return out


def format_http_result(result: Any, secrets: frozenset[str] | set[str] = frozenset()) -> tuple[str, str, str]:
    """``(status line, headers text, body text)`` for showing: JSON pretty-printed, the body capped."""
    status = f"{result.status} {result.reason}".strip() + f" · {result.bytes:,} bytes · {result.duration_ms} ms"
    headers = "\n".join(f"{k}: {v}" for k, v in result.headers.items())
    if isinstance(result.output, (dict, list)):
        body = json.dumps(result.output, indent=2, ensure_ascii=False)
    else:
        body = result.text if isinstance(result.text, str) else str(result.output)
    if len(body) > SHOWN_BODY_CHARS:
        body = body[:SHOWN_BODY_CHARS] + f"\n… ({len(body) - SHOWN_BODY_CHARS:,} more characters not shown)"
    return mask_secrets(status, secrets), mask_secrets(headers, secrets), mask_secrets(body, secrets)


class HttpPage(QWidget):
    """The ``http`` node's form. ``edit(field, value, merge)`` is the inspector's setter."""

    test_finished = Signal(bool)  # True: a response came back (any status)

    def __init__(
        self,
        edit: Callable[[str, Any, bool], None],
        watch: Callable[[QWidget], QWidget],
        variables: Callable[[], dict[str, Any]],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("httpPage")
        self._edit = edit
        self._variables = variables
        self._loading = False
        self._data: dict[str, Any] = {}
        self._task: asyncio.Future | None = None
        form = QFormLayout(self)
        form.setContentsMargins(12, 8, 12, 12)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        title = QLabel("HTTP request")
        title.setObjectName("inspectorTitle")
        form.addRow(title)

        line = QHBoxLayout()
        self.method = QComboBox()
        self.method.setEditable(False)
        self.method.addItems(METHODS)
        self.method.currentTextChanged.connect(lambda t: self._set("method", t, False))
        self.url = watch(QLineEdit())
        self.url.setPlaceholderText("https://api.example.com/items/{{id}}")
        self.url.textEdited.connect(lambda t: self._set("url", t, True))
        line.addWidget(self.method)
        line.addWidget(self.url, 1)
        form.addRow("Request", line)

        self.query = KeyValueTable("Parameter", "Value")
        self.query.rows_edited.connect(lambda rows: self._set("query", rows, False))
        form.addRow("Query", self.query)

        self.headers = KeyValueTable("Header", "Value")
        self.headers.rows_edited.connect(lambda rows: self._set("headers", rows, False))
        self.move_to_keyring = QPushButton(QIcon(icon_path("insert")), "Move to keyring…")
        self.move_to_keyring.setObjectName("moveToKeyring")
        self.move_to_keyring.setToolTip("Store this header's value in the OS keyring and use {{secrets.NAME}} here")
        self.move_to_keyring.setVisible(False)
        self.move_to_keyring.clicked.connect(self._move_to_keyring)
        self.headers.extra_bar.addWidget(self.move_to_keyring)
        self.headers.cell_selected.connect(lambda _r: self._update_credential_hint())
        self.credential_hint = QLabel()
        self.credential_hint.setObjectName("hint")
        self.credential_hint.setWordWrap(True)
        self.credential_hint.setVisible(False)
        hbox = QWidget()
        hl = QVBoxLayout(hbox)
        hl.setContentsMargins(0, 0, 0, 0)
        hl.addWidget(self.headers)
        hl.addWidget(self.credential_hint)
        form.addRow("Headers", hbox)

        self.body_type = QComboBox()
        for value, label in BODY_TYPES:
            self.body_type.addItem(label, value)
        self.body_type.currentIndexChanged.connect(
            lambda _i: self._set("bodyType", self.body_type.currentData(), False)
        )
        form.addRow("Body", self.body_type)
        self.body_stack = QStackedWidget()
        self.body_none = QLabel("No request body.")
        self.body_none.setObjectName("hint")
        self.body_text = watch(QPlainTextEdit())
        self.body_text.setObjectName("httpBody")
        self.body_text.setUndoRedoEnabled(False)
        self.body_text.setTabChangesFocus(True)
        self.body_text.setMinimumHeight(90)
        self.body_text.setPlaceholderText('{"name": "{{name}}", "items": "{{items}}"}')
        self.body_text.textChanged.connect(self._body_edited)
        self.form_data = KeyValueTable("Field", "Value")
        self.form_data.rows_edited.connect(lambda rows: self._set("formData", rows, False))
        for w in (self.body_none, self.body_text, self.form_data):
            self.body_stack.addWidget(w)
        form.addRow(self.body_stack)
        self.body_error = QLabel()
        self.body_error.setObjectName("hint")
        self.body_error.setWordWrap(True)
        form.addRow(self.body_error)

        self.fail_on_status = QCheckBox("Fail on 4xx/5xx status")
        self.fail_on_status.toggled.connect(lambda on: self._set("failOnStatus", on, False))
        form.addRow(self.fail_on_status)

        self.send = QPushButton(QIcon(icon_path("run")), "Send test request")
        self.send.setObjectName("sendTestRequest")
        self.send.setToolTip("Send this request now, alone, with the Start variables' values")
        self.send.clicked.connect(self.send_test_request)
        form.addRow(self.send)
        self.result_status = QLabel()
        self.result_status.setObjectName("httpResultStatus")
        self.result_status.setWordWrap(True)
        self.result_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.result_status)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.result_headers = QPlainTextEdit()
        self.result_headers.setObjectName("httpResultHeaders")
        self.result_headers.setReadOnly(True)
        self.result_headers.setFont(mono)
        self.result_headers.setMaximumHeight(110)
        self.result_body = QPlainTextEdit()
        self.result_body.setObjectName("httpResultBody")
        self.result_body.setReadOnly(True)
        self.result_body.setFont(mono)
        self.result_body.setMinimumHeight(140)
        self.result_box = QWidget()
        rl = QVBoxLayout(self.result_box)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(QLabel("Response headers"))
        rl.addWidget(self.result_headers)
        rl.addWidget(QLabel("Response body"))
        rl.addWidget(self.result_body)
        self.result_box.setVisible(False)
        form.addRow(self.result_box)

    # ------------------------------------------------------------------ model
    def _set(self, field: str, value: Any, merge: bool) -> None:
        if not self._loading:
            self._edit(field, value, merge)

    def load(self, data: dict[str, Any]) -> None:
        self._loading = True
        try:
            self._data = dict(data)
            method = str(data.get("method") or "GET").upper()
            if self.method.findText(method) < 0:
                self.method.addItem(method)
            self.method.setCurrentText(method)
            if self.url.text() != (data.get("url") or ""):
                self.url.setText(data.get("url") or "")
            self.query.set_rows(data.get("query") or [])
            self.headers.set_rows(data.get("headers") or [])
            self.form_data.set_rows(data.get("formData") or [])
            body_type = str(data.get("bodyType") or "none")
            self.body_type.setCurrentIndex(max(0, self.body_type.findData(body_type)))
            self._show_body_page({"none": self.body_none, "form": self.form_data}.get(body_type, self.body_text))
            text = _body_text(data.get("body"))
            if self.body_text.toPlainText() != text:
                self.body_text.setPlainText(text)
            self._check_body(body_type, text)
            self.fail_on_status.setChecked(bool(data.get("failOnStatus", True)))
        finally:
            self._loading = False
        self._update_credential_hint()

    def _show_body_page(self, page: QWidget) -> None:
        """Show one body editor; the hidden ones take no room (a stack is as tall as its tallest page)."""

        for i in range(self.body_stack.count()):
            w = self.body_stack.widget(i)
            policy = QSizePolicy.Policy.Preferred if w is page else QSizePolicy.Policy.Ignored
            w.setSizePolicy(QSizePolicy.Policy.Preferred, policy)
        self.body_stack.setCurrentWidget(page)
        self.body_stack.adjustSize()

    def _body_edited(self) -> None:
        text = self.body_text.toPlainText()
        self._check_body(str(self._data.get("bodyType") or "none"), text)
        self._set("body", text, True)

    def _check_body(self, body_type: str, text: str) -> None:
        problem = ""
        if body_type == "json" and text.strip() and not _whole_reference(text):
            try:
                json.loads(text)
            except ValueError as err:
                if "{{" not in text and "${" not in text:
                    problem = f"Not valid JSON yet: {err.msg} (line {err.lineno}, column {err.colno})."
        self.body_error.setText(problem)
        self.body_error.setVisible(bool(problem))

    # ------------------------------------------------------------------ credentials
    def credential_rows(self) -> list[int]:
        return [i for i, r in enumerate(self.headers.rows()) if looks_like_literal_credential(r["value"], r["key"])]

    def _update_credential_hint(self) -> None:
        rows = self.credential_rows()
        self.move_to_keyring.setVisible(bool(rows))
        if rows:
            names = ", ".join(self.headers.rows()[i]["key"] or f"row {i + 1}" for i in rows)
            self.credential_hint.setText(
                f"⚠ {names}: looks like a credential typed in. It would be saved in the "
                "workflow file; move it to the keyring and reference it as "
                "{{secrets.NAME}}."
            )
        self.credential_hint.setVisible(bool(rows))

    def _move_to_keyring(self) -> None:
        rows = self.credential_rows()
        if not rows:
            return
        current = self.headers.table.currentRow()
        row = current if current in rows else rows[0]
        header = self.headers.rows()[row]["key"]
        suggested = re.sub(r"[^A-Za-z0-9_]", "_", header).upper().strip("_") or "API_KEY"
        if suggested in ("AUTHORIZATION",):
            suggested = "API_TOKEN"
        name, ok = QInputDialog.getText(
            self, "Move to keyring", f"Store the value of '{header}' in the OS keyring as:", text=suggested
        )
        if ok:
            self.move_header_to_keyring(row, name)

    def move_header_to_keyring(self, row: int, name: str) -> bool:
        """Store header ``row``'s credential in the keyring under ``name``; the cell becomes a reference.

        A scheme prefix (``Bearer ``) stays in the cell: only the token is stored."""
        name = name.strip()
        if not _SECRET_NAME.match(name):
            QMessageBox.warning(
                self, "Move to keyring", f"'{name}' cannot be a secret name: use letters, digits and _ (not first)."
            )
            return False
        rows = self.headers.rows()
        if not (0 <= row < len(rows)):
            return False
        value = rows[row]["value"].strip()
        m = re.match(r"^((?:Bearer|Token|Basic|Digest|ApiKey|Api-Key)\s+)(\S+)$", value, re.I)
        prefix, secret = (m.group(1), m.group(2)) if m else ("", value)
        try:
            store_api_key(name, secret)
        except FlowdeskError as err:
            QMessageBox.warning(
                self,
                "Move to keyring",
                str(err).replace("API key environment variable", f"environment variable {name}"),
            )
            return False
        rows[row] = {"key": rows[row]["key"], "value": prefix + "{{secrets." + name + "}}"}
        self._edit("headers", rows, False)
        return True

    # ------------------------------------------------------------------ test request
    def send_test_request(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            return
        data = dict(self._data)
        self.send.setText("Cancel test request")
        self.result_status.setText(f"Sending {data.get('method') or 'GET'} …")
        self.result_box.setVisible(False)
        self._task = asyncio.ensure_future(self._send(data))

    async def _send(self, data: dict[str, Any]) -> None:
        ok = False
        secrets: frozenset[str] = frozenset()
        try:
            if data.get("bodyType") == "json" and isinstance(data.get("body"), str) and not data["body"].strip():
                data["body"] = None
            # the engine runs the node alone: templates resolved, failOnStatus ignored, secrets masked
            result = await send_test_request(data, self._variables(), timeout=30.0)
        except asyncio.CancelledError:
            self.result_status.setText("Test request cancelled.")
        except FlowdeskError as err:
            self.result_status.setText(f"✗ {mask_secrets(str(err), secrets)}")
        except Exception as err:  # noqa: BLE001 - shown, never a crash
            self.result_status.setText(f"✗ {type(err).__name__}: {mask_secrets(str(err), secrets)}")
        else:
            ok = True
            status, headers, body = format_http_result(result, secrets)
            self.result_status.setText(("✓ " if result.ok else "⚠ ") + status)
            self.result_headers.setPlainText(headers)
            self.result_body.setPlainText(body)
            self.result_box.setVisible(True)
            self._scroll_to_result()
        finally:
            self.send.setText("Send test request")
            self._task = None
        self.test_finished.emit(ok)

    def _scroll_to_result(self) -> None:

        w = self.parentWidget()
        while w is not None and not isinstance(w, QScrollArea):
            w = w.parentWidget()
        if w is not None:
            area = w

            def scroll() -> None:  # the result's top at the top of the inspector
                top = self.result_status.mapTo(area.widget(), self.result_status.rect().topLeft()).y()
                area.verticalScrollBar().setValue(max(0, top - 60))

            QTimer.singleShot(0, self, scroll)


def _body_text(body: Any) -> str:
    if body is None:
        return ""
    if isinstance(body, str):
        return body
    return json.dumps(body, indent=2, ensure_ascii=False)


def _whole_reference(text: str) -> bool:
    t = text.strip()
    return bool(re.fullmatch(r"\{\{[^{}]+\}\}|\$\{[^{}]+\}", t))
