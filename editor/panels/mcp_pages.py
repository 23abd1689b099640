"""MCP in the desktop: the servers dialog, an agent's tool picker and the ``mcp`` node's page.

* :class:`ToolLister` asks a server for its tools on a thread of its own (``engine.list_mcp_tools``
  opens a connection for the question and closes it), so a server that is slow to start never
  freezes the window; the answer comes back as the ``listed`` signal.
* :class:`McpServersDialog` (Run ▸ MCP Servers…) lists the servers of the settings
  (``mcp.servers``) and adds, tests (lists the tools) and removes them. Secrets are written as
  ``{{secrets.NAME}}`` (the keyring or the environment holds the value); the dialog never
  resolves one.
* :class:`McpToolPicker` edits an agent's ``tools.mcp``: a server, its tools listed with their
  descriptions to tick (or all of them), and whether each call asks for approval.
* :class:`McpPage` is the ``mcp`` kind's page: server, tool, and an argument form made from the
  tool's input schema (each argument a template; a number typed for a number stays a number).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine import McpError, McpServerConfig, list_mcp_tools, mcp_servers, remove_mcp_server, save_mcp_server

__all__ = ["ToolLister", "McpServersDialog", "McpToolPicker", "McpPage", "server_names"]


def server_names(workflow: Any = None) -> list[str]:
    """The servers a node may name: the settings', and the workflow's ``mcpServers``."""
    names = set(mcp_servers())
    extra = getattr(workflow, "model_extra", None) or {}
    if isinstance(extra.get("mcpServers"), dict):
        names |= set(extra["mcpServers"])
    return sorted(names)


class ToolLister(QObject):
    """Lists a server's tools off the GUI thread: ``listed(server, tools or None, error)``."""

    listed = Signal(str, object, str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.busy: set[str] = set()
        self.listed.connect(lambda n, *_: self.busy.discard(n))

    def list(self, name: str, config: McpServerConfig | None = None, workflow: Any = None) -> None:
        if name in self.busy:
            return
        self.busy.add(name)

        def work() -> None:
            try:
                tools, error = asyncio.run(list_mcp_tools(name, config, workflow)), ""
            except McpError as err:
                tools, error = None, str(err)
            except Exception as err:  # an SDK surprise: its message, never a traceback
                tools, error = None, f"{type(err).__name__}: {err}"
            if shiboken6.isValid(self):
                self.listed.emit(name, tools, error)

        threading.Thread(target=work, name=f"mcp-list-{name}", daemon=True).start()


def _lines_to_map(text: str, sep: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, found, value = line.partition(sep)
        if found and key.strip():
            out[key.strip()] = value.strip()
    return out


class McpServersDialog(QDialog):
    """Add, test and remove the MCP servers of the settings."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("MCP Servers")
        self.resize(720, 460)
        self.lister = ToolLister(self)
        self.lister.listed.connect(self._listed)
        outer = QHBoxLayout(self)
        left = QVBoxLayout()
        self.list = QListWidget()
        self.list.setObjectName("mcpServerList")
        self.list.currentTextChanged.connect(self._show)
        left.addWidget(self.list)
        self.new_button = QPushButton("New")
        self.new_button.clicked.connect(self.new_server)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setObjectName("mcpRemove")
        self.remove_button.clicked.connect(self.remove_current)
        row = QHBoxLayout()
        row.addWidget(self.new_button)
        row.addWidget(self.remove_button)
        left.addLayout(row)
        outer.addLayout(left, 1)

        right = QVBoxLayout()
        form = QFormLayout()
        self.name = QLineEdit()
        self.name.setObjectName("mcpName")
        self.transport = QComboBox()
        self.transport.addItem("Command (stdio)", "stdio")
        self.transport.addItem("URL (Streamable HTTP)", "http")
        self.transport.currentIndexChanged.connect(self._transport_changed)
        self.command = QLineEdit()
        self.command.setObjectName("mcpCommand")
        self.command.setPlaceholderText("npx, uvx, python, /path/to/server …")
        self.args = QLineEdit()
        self.args.setObjectName("mcpArgs")
        self.args.setPlaceholderText("arguments, separated by spaces")
        self.env = QPlainTextEdit()
        self.env.setObjectName("mcpEnv")
        self.env.setPlaceholderText("NAME=value, one a line; a secret as {{secrets.NAME}}")
        self.env.setFixedHeight(60)
        self.url = QLineEdit()
        self.url.setObjectName("mcpUrl")
        self.url.setPlaceholderText("http://127.0.0.1:8000/mcp")
        self.headers = QPlainTextEdit()
        self.headers.setObjectName("mcpHeaders")
        self.headers.setPlaceholderText("Authorization: Bearer {{secrets.MY_TOKEN}}")
        self.headers.setFixedHeight(60)
        form.addRow("Name", self.name)
        form.addRow("Connect by", self.transport)
        form.addRow("Command", self.command)
        form.addRow("Arguments", self.args)
        form.addRow("Environment", self.env)
        form.addRow("URL", self.url)
        form.addRow("Headers", self.headers)
        self._form = form
        right.addLayout(form)
        buttons = QHBoxLayout()
        self.save_button = QPushButton("Save")
        self.save_button.setObjectName("mcpSave")
        self.save_button.clicked.connect(self.save_current)
        self.test_button = QPushButton("Test (list tools)")
        self.test_button.setObjectName("mcpTest")
        self.test_button.clicked.connect(self.test_current)
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.test_button)
        buttons.addStretch(1)
        right.addLayout(buttons)
        self.status = QLabel("")
        self.status.setObjectName("mcpStatus")
        self.status.setWordWrap(True)
        right.addWidget(self.status)
        self.tools = QListWidget()
        self.tools.setObjectName("mcpTools")
        right.addWidget(self.tools, 1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        close.accepted.connect(self.accept)
        right.addWidget(close)
        outer.addLayout(right, 2)
        self.reload()
        self._transport_changed()

    # ------------------------------------------------------------------ the list
    def reload(self, select: str | None = None) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for name in sorted(mcp_servers()):
            self.list.addItem(name)
        self.list.blockSignals(False)
        items = self.list.findItems(select, Qt.MatchFlag.MatchExactly) if select else []
        if items:
            self.list.setCurrentItem(items[0])
        elif self.list.count():
            self.list.setCurrentRow(0)
        else:
            self.new_server()

    def _show(self, name: str) -> None:
        server = mcp_servers().get(name)
        if server is None:
            return
        self.name.setText(name)
        self.transport.setCurrentIndex(1 if server.url else 0)
        self.command.setText(server.command or "")
        self.args.setText(" ".join(server.args))
        self.env.setPlainText("\n".join(f"{k}={v}" for k, v in server.env.items()))
        self.url.setText(server.url or "")
        self.headers.setPlainText("\n".join(f"{k}: {v}" for k, v in server.headers.items()))
        self.tools.clear()
        self.status.setText(server.describe())

    def _transport_changed(self) -> None:
        http = self.transport.currentData() == "http"
        for w in (self.command, self.args, self.env):
            w.setEnabled(not http)
            self._form.setRowVisible(w, not http)  # only the fields of the chosen way are shown
        for w in (self.url, self.headers):
            w.setEnabled(http)
            self._form.setRowVisible(w, http)

    def new_server(self) -> None:
        self.list.clearSelection()
        for w in (self.name, self.command, self.args, self.url):
            w.clear()
        self.env.clear()
        self.headers.clear()
        self.tools.clear()
        self.status.setText("A new server: fill in how to reach it, then Save.")

    # ------------------------------------------------------------------ the form
    def config(self) -> McpServerConfig:
        if self.transport.currentData() == "http":
            return McpServerConfig(url=self.url.text().strip(), headers=_lines_to_map(self.headers.toPlainText(), ":"))
        return McpServerConfig(
            command=self.command.text().strip(),
            args=self.args.text().split(),
            env=_lines_to_map(self.env.toPlainText(), "="),
        )

    def save_current(self) -> bool:
        name = self.name.text().strip()
        try:
            save_mcp_server(name, self.config())
        except McpError as err:
            self.status.setText(f"✗ {err}")
            return False
        self.status.setText(f"Saved '{name}'.")
        self.reload(select=name)
        return True

    def remove_current(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        name = item.text()
        remove_mcp_server(name)
        self.status.setText(f"Removed '{name}'.")
        self.reload()

    def test_current(self) -> None:
        name = self.name.text().strip() or "unsaved"
        config = self.config()
        problem = config.problem()
        if problem:
            self.status.setText(f"✗ The server {problem}.")
            return
        self.status.setText(f"Connecting to '{name}'…")
        self.tools.clear()
        self.test_button.setEnabled(False)
        self.lister.list(name, config)

    def _listed(self, name: str, tools: Any, error: str) -> None:
        if not shiboken6.isValid(self):
            return
        self.test_button.setEnabled(True)
        if tools is None:
            self.status.setText(f"✗ {error}")
            return
        self.status.setText(f"✓ '{name}' answered: {len(tools)} tool{'s' if len(tools) != 1 else ''}.")
        self.tools.clear()
        for t in tools:
            item = QListWidgetItem(f"{t.name} — {t.description}" if t.description else t.name)
            item.setToolTip(json.dumps(t.input_schema, indent=2))
            self.tools.addItem(item)


class McpToolPicker(QWidget):
    """An agent's ``tools.mcp``: per server, the tools ticked (or all), and ask-before-call.

    ``edited(entries or None)`` once per change. Tools are listed from the server on demand
    ("List tools"); ticked tools the listing no longer has stay shown so they can be unticked."""

    edited = Signal(object)

    def __init__(self, workflow: Callable[[], Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._workflow = workflow
        self._entries: list[dict[str, Any]] = []
        self._listing: dict[str, list[Any]] = {}
        self._loading = False
        self.lister = ToolLister(self)
        self.lister.listed.connect(self._listed)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(QLabel("MCP tools offered"))
        row = QHBoxLayout()
        self.server = QComboBox()
        self.server.setObjectName("mcpPickerServer")
        self.server.currentTextChanged.connect(self._server_changed)
        self.list_button = QPushButton("List tools")
        self.list_button.setObjectName("mcpPickerList")
        self.list_button.clicked.connect(self.list_tools)
        row.addWidget(self.server, 1)
        row.addWidget(self.list_button)
        lay.addLayout(row)
        self.all_tools = QCheckBox("Every tool of this server")
        self.all_tools.setObjectName("mcpPickerAll")
        self.all_tools.toggled.connect(self._changed)
        lay.addWidget(self.all_tools)
        self.tools = QListWidget()
        self.tools.setObjectName("mcpPickerTools")
        self.tools.setMaximumHeight(140)
        self.tools.itemChanged.connect(self._changed)
        lay.addWidget(self.tools)
        self.ask = QCheckBox("Ask me before each call")
        self.ask.setObjectName("mcpPickerAsk")
        self.ask.toggled.connect(self._changed)
        lay.addWidget(self.ask)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setObjectName("hint")
        lay.addWidget(self.status)

    def load(self, entries: Any) -> None:
        self._entries = [dict(e) for e in entries or () if isinstance(e, dict) and e.get("server")]
        names = server_names(self._workflow())
        for e in self._entries:
            if e["server"] not in names:
                names.append(e["server"])
        self._loading = True
        try:
            current = self.server.currentText()
            if [self.server.itemText(i) for i in range(self.server.count())] != names:
                self.server.clear()
                self.server.addItems(names)
            if current in names:
                self.server.setCurrentText(current)
            elif self._entries:
                self.server.setCurrentText(self._entries[0]["server"])
        finally:
            self._loading = False
        self._fill()

    def _entry(self, server: str) -> dict[str, Any] | None:
        return next((e for e in self._entries if e.get("server") == server), None)

    def _server_changed(self, _name: str) -> None:
        if not self._loading:
            self._fill()

    def _fill(self) -> None:
        server = self.server.currentText()
        entry = self._entry(server) or {}
        chosen = entry.get("tools", [])
        self._loading = True
        try:
            self.all_tools.setChecked(chosen == "*")
            self.ask.setChecked(entry.get("approve") == "ask")
            self.tools.clear()
            ticked = set(chosen) if isinstance(chosen, list) else set()
            seen = set()
            for t in self._listing.get(server, []):
                seen.add(t.name)
                item = QListWidgetItem(f"{t.name} — {t.description}" if t.description else t.name)
                item.setData(Qt.ItemDataRole.UserRole, t.name)
                item.setToolTip(t.description or t.name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if t.name in ticked else Qt.CheckState.Unchecked)
                self.tools.addItem(item)
            for name in sorted(ticked - seen):
                item = QListWidgetItem(f"{name} (not listed yet)")
                item.setData(Qt.ItemDataRole.UserRole, name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked)
                self.tools.addItem(item)
            self.tools.setEnabled(chosen != "*")
        finally:
            self._loading = False

    def list_tools(self) -> None:
        server = self.server.currentText()
        if not server:
            self.status.setText("No MCP server is declared: add one in Run ▸ MCP Servers….")
            return
        self.status.setText(f"Listing the tools of '{server}'…")
        self.lister.list(server, None, self._workflow())

    def _listed(self, server: str, tools: Any, error: str) -> None:
        if not shiboken6.isValid(self):
            return
        if tools is None:
            self.status.setText(f"✗ {error}")
            return
        self._listing[server] = list(tools)
        self.status.setText(f"'{server}' has {len(tools)} tool{'s' if len(tools) != 1 else ''}.")
        if server == self.server.currentText():
            self._fill()

    def _changed(self, *_: Any) -> None:
        if self._loading:
            return
        server = self.server.currentText()
        if not server:
            return
        ticked = [
            str(self.tools.item(i).data(Qt.ItemDataRole.UserRole))
            for i in range(self.tools.count())
            if self.tools.item(i).checkState() == Qt.CheckState.Checked
        ]
        self.tools.setEnabled(not self.all_tools.isChecked())
        entries = [e for e in self._entries if e.get("server") != server]
        if self.all_tools.isChecked() or ticked:
            entry: dict[str, Any] = {"server": server, "tools": "*" if self.all_tools.isChecked() else ticked}
            if self.ask.isChecked():
                entry["approve"] = "ask"
            entries.append(entry)
        self._entries = entries
        self.edited.emit(entries or None)


class McpPage(QWidget):
    """The ``mcp`` node: server, tool, and its arguments as a form from the tool's schema."""

    def __init__(self, host: Any) -> None:
        super().__init__()
        self.host = host
        self._tools: dict[str, Any] = {}
        self._arguments: dict[str, Any] = {}
        self._loading = False
        self.lister = ToolLister(self)
        self.lister.listed.connect(self._listed)
        form = QFormLayout(self)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.server = QComboBox()
        self.server.setObjectName("mcpNodeServer")
        self.server.setEditable(True)
        self.server.currentTextChanged.connect(self._server_edited)
        self.list_button = QPushButton("List tools")
        self.list_button.setObjectName("mcpNodeList")
        self.list_button.clicked.connect(self.list_tools)
        row = QHBoxLayout()
        row.addWidget(self.server, 1)
        row.addWidget(self.list_button)
        form.addRow("Server", row)
        self.tool = QComboBox()
        self.tool.setObjectName("mcpNodeTool")
        self.tool.setEditable(True)
        self.tool.currentTextChanged.connect(self._tool_edited)
        form.addRow("Tool", self.tool)
        self.description = QLabel("")
        self.description.setWordWrap(True)
        self.description.setObjectName("hint")
        form.addRow(self.description)
        self.args_box = QWidget()
        self.args_form = QFormLayout(self.args_box)
        self.args_form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Arguments", self.args_box)
        self.arg_edits: dict[str, QLineEdit] = {}

    def load(self, data: dict[str, Any]) -> None:
        self._loading = True
        try:
            names = server_names(self.host.doc.workflow)
            if [self.server.itemText(i) for i in range(self.server.count())] != names:
                self.server.clear()
                self.server.addItems(names)
            if self.server.currentText() != data.get("server", ""):
                self.server.setEditText(data.get("server", ""))
            if self.tool.currentText() != data.get("tool", ""):
                self.tool.setEditText(data.get("tool", ""))
            self._arguments = dict(data.get("arguments") or {})
            self._build_form()
        finally:
            self._loading = False

    def list_tools(self) -> None:
        server = self.server.currentText().strip()
        if server:
            self.description.setText(f"Listing the tools of '{server}'…")
            self.lister.list(server, None, self.host.doc.workflow)

    def _listed(self, server: str, tools: Any, error: str) -> None:
        if not shiboken6.isValid(self):
            return
        if tools is None:
            self.description.setText(f"✗ {error}")
            return
        self._tools = {t.name: t for t in tools}
        self._loading = True
        try:
            current = self.tool.currentText()
            self.tool.clear()
            self.tool.addItems(sorted(self._tools))
            self.tool.setEditText(current)
        finally:
            self._loading = False
        self._build_form()

    def _server_edited(self, text: str) -> None:
        if not self._loading:
            self.host.edit_field("server", text.strip(), True)

    def _tool_edited(self, text: str) -> None:
        if not self._loading:
            self.host.edit_field("tool", text.strip(), True)
            self._build_form()

    def _properties(self) -> tuple[dict[str, Any], list[str]]:
        info = self._tools.get(self.tool.currentText())
        schema = info.input_schema if info is not None else {}
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return props, list(schema.get("required") or [])

    def _build_form(self) -> None:
        props, required = self._properties()
        info = self._tools.get(self.tool.currentText())
        if info is not None:
            self.description.setText(info.description or "")
        names = list(props) + [n for n in self._arguments if n not in props]
        if list(self.arg_edits) != names:
            while self.args_form.rowCount():
                self.args_form.removeRow(0)
            self.arg_edits = {}
            for name in names:
                edit = QLineEdit()
                edit.setObjectName(f"mcpArg_{name}")
                sub = props.get(name) or {}
                kind = sub.get("type", "string") if isinstance(sub, dict) else "string"
                edit.setPlaceholderText(f"{kind}{' (required)' if name in required else ''}; templates allowed")
                edit.setToolTip(str(sub.get("description", "")) if isinstance(sub, dict) else "")
                edit.textEdited.connect(lambda text, n=name: self._arg_edited(n, text))
                self.host.watch(edit)
                self.args_form.addRow(name, edit)
                self.arg_edits[name] = edit
        for name, edit in self.arg_edits.items():
            value = self._arguments.get(name)
            text = "" if value is None else value if isinstance(value, str) else json.dumps(value)
            if edit.text() != text:
                edit.setText(text)

    def _arg_edited(self, name: str, text: str) -> None:
        props, _required = self._properties()
        kind = (props.get(name) or {}).get("type") if isinstance(props.get(name), dict) else None
        value: Any = text
        if kind in ("number", "integer", "boolean", "object", "array") and text.strip():
            try:
                value = json.loads(text)
            except ValueError:
                value = text  # a template ({{x}}) or a value the server will judge
        arguments = dict(self._arguments)
        if text == "":
            arguments.pop(name, None)
        else:
            arguments[name] = value
        self._arguments = arguments
        self.host.edit_field("arguments", arguments, True)
