"""ProviderSettingsDialog: where a user sets up the LLM providers without editing files.

For each provider of the catalogue (``resources/providers.json`` plus the user's
settings) it shows the base URL (saved in the user's ``settings.json``) and where its API
key comes from. A key typed here goes to the OS keyring only (``store_api_key``); it is
never written to the settings file, a workflow, a run record or a log. The default
provider (used when neither the run nor the node names one) and the SearxNG URL for the
``web_search`` tool are saved in the settings file too. The "Run cache" row shows the
recorded node outputs that "Run from here" reuses (how many, how big, the size limit, kept
as ``runCache.limitMB``) and clears them. "Test connection" sends the provider shown one short
request (``engine.check_provider``, with the base URL as typed) and says what answered or why not.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import shiboken6
from PySide6.QtCore import QLocale, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine import (
    ProviderConfigError,
    Settings,
    check_provider,
    is_local_url,
    key_source,
    load_settings,
    provider_catalogue,
    save_settings,
    settings_path,
    store_api_key,
)

from ..screen_fit import fit_resize

_KIND_TEXT = {"openai": "OpenAI-compatible API", "anthropic": "Anthropic API", "local": "embedded model", "echo": ""}


class ProviderSettingsDialog(QDialog):
    tested = Signal(str, bool, str)  # provider id, whether it answered, what to say (from the test's thread)

    def __init__(self, parent: QWidget | None = None, store: Any = None) -> None:
        super().__init__(parent)
        self.store = store
        self.setWindowTitle("LLM Providers")
        self.setObjectName("providerSettings")
        fit_resize(self, 720, 440)
        try:
            self.settings = load_settings()
        except ProviderConfigError as err:
            QMessageBox.warning(
                self, "Provider settings", f"{err}\n\nStarting from the defaults; saving replaces the file."
            )
            self.settings = Settings()
        self.infos = provider_catalogue(Settings())  # the catalogue; user overrides are shown per field
        self._urls: dict[str, str] = {pid: str(o.get("base_url") or "") for pid, o in self.settings.providers.items()}
        self._testing: set[str] = set()  # providers with a test under way
        self._test_results: dict[str, str] = {}  # the last test's line, per provider

        self.list = QListWidget()
        self.list.setObjectName("providerList")
        for pid, info in self.infos.items():
            item = QListWidgetItem(info.name or pid)
            item.setData(Qt.ItemDataRole.UserRole, pid)
            self.list.addItem(item)
        self.list.setFixedWidth(230)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.title = QLabel()
        self.title.setObjectName("sectionTitle")
        self.url_edit = QLineEdit()
        self.url_edit.setObjectName("baseUrl")
        self.url_edit.textEdited.connect(self._url_edited)
        self.key_label = QLabel()
        self.key_label.setWordWrap(True)
        self.key_edit = QLineEdit()
        self.key_edit.setObjectName("apiKey")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("Paste a key to store it in the OS keyring")
        self.key_button = QPushButton("Store in keyring")
        self.key_button.setObjectName("storeKey")
        self.key_button.clicked.connect(self._store_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.key_edit, 1)
        key_row.addWidget(self.key_button)
        # Test: one short request with the base URL as typed (saved or not) and the key as found
        self.test_button = QPushButton("Test connection")
        self.test_button.setObjectName("testProvider")
        self.test_button.setToolTip("Send one short request to this provider and say what answered")
        self.test_button.clicked.connect(self.test_current)
        self.test_label = QLabel()
        self.test_label.setObjectName("testResult")
        self.test_label.setWordWrap(True)
        self.test_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignTop)
        test_row.addWidget(self.test_label, 1)
        self.tested.connect(self._show_test)
        form = QFormLayout()
        form.addRow(self.title)
        form.addRow("Base URL", self.url_edit)
        form.addRow("API key", self.key_label)
        form.addRow("", key_row)
        form.addRow("", test_row)

        self.default_combo = QComboBox()
        self.default_combo.setObjectName("defaultProvider")
        self.default_combo.addItem("Local model when installed", "")
        for pid, info in self.infos.items():
            self.default_combo.addItem(info.name or pid, pid)
        index = self.default_combo.findData(self.settings.defaultProvider or "")
        self.default_combo.setCurrentIndex(max(0, index))
        self.search_edit = QLineEdit(self.settings.webSearch.searxngUrl or "")
        self.search_edit.setObjectName("searxngUrl")
        self.search_edit.setPlaceholderText("http://localhost:8888 (SearxNG, for the web_search tool)")
        common = QFormLayout()
        common.addRow("Default provider", self.default_combo)
        common.addRow("Web search", self.search_edit)
        # Run cache: the recorded node outputs a run from a node reuses
        cache_row = QHBoxLayout()
        self.cache_label = QLabel("")
        self.cache_label.setObjectName("runCacheLabel")
        self.cache_limit = QSpinBox()
        self.cache_limit.setObjectName("runCacheLimit")
        self.cache_limit.setRange(0, 100_000)
        self.cache_limit.setSuffix(" MB limit")
        mb = ((self.settings.model_extra or {}).get("runCache") or {}).get("limitMB")
        self.cache_limit.setValue(int(mb) if isinstance(mb, (int, float)) else 64)
        self.cache_limit.setToolTip("The least recently used recorded outputs go first when the cache is over it")
        self.clear_cache_button = QPushButton("Clear")
        self.clear_cache_button.setObjectName("clearRunCache")
        self.clear_cache_button.clicked.connect(self.clear_cache)
        cache_row.addWidget(self.cache_label, 1)
        cache_row.addWidget(self.cache_limit)
        cache_row.addWidget(self.clear_cache_button)
        common.addRow("Run cache", cache_row)
        self._show_cache()

        right = QVBoxLayout()
        right.addLayout(form)
        right.addStretch(1)
        right.addLayout(common)
        note = QLabel(
            f"Saved in {settings_path()}. API keys are never written there: they come from the "
            "environment or the OS keyring."
        )
        note.setObjectName("hint")
        note.setWordWrap(True)
        right.addWidget(note)
        body = QHBoxLayout()
        body.addWidget(self.list)
        body.addLayout(right, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(buttons)
        self.list.currentItemChanged.connect(lambda *_: self._show_current())
        self.list.setCurrentRow(0)

    def current_id(self) -> str:
        item = self.list.currentItem()
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else ""

    def _show_current(self) -> None:
        pid = self.current_id()
        info = self.infos.get(pid)
        if info is None:
            return
        # After the name, how the provider is spoken to, where the name does not say it already
        # ("Ollama (local server) · OpenAI-compatible API", not "OpenAI (openai)").
        kind = _KIND_TEXT.get(info.kind, info.kind)
        same = info.kind == pid or not kind
        self.title.setText(
            f"<b>{info.name or pid}</b>" + ("" if same else f" <span style='color:gray'>· {kind}</span>")
        )
        http = info.kind in ("openai", "anthropic")
        self.url_edit.setEnabled(http)
        self.url_edit.setPlaceholderText(info.base_url or "")
        self.url_edit.setText(self._urls.get(pid, ""))
        self.key_edit.clear()
        self.key_edit.setEnabled(http and bool(info.api_key_env))
        self.key_button.setEnabled(http and bool(info.api_key_env))
        self.key_label.setText(self._key_text(pid))
        self.test_label.setText(self._test_results.get(pid, ""))
        self.test_button.setEnabled(pid not in self._testing)

    def test_current(self) -> None:
        """One short request to the provider shown, on a thread of its own (a slow server or a
        model loading does not freeze the dialog); the answer, or why none came, beside the button."""
        pid = self.current_id()
        if not pid or pid in self._testing:
            return
        url = self._urls.get(pid) or None
        self._testing.add(pid)
        self._test_results[pid] = "Testing…"
        self.test_label.setText("Testing…")
        self.test_button.setEnabled(False)

        def work() -> None:
            try:
                said, ok = asyncio.run(check_provider(pid, base_url=url)), True
            except Exception as err:  # LLMError, ProviderConfigError, TimeoutError: their messages are for users
                said, ok = str(err) or type(err).__name__, False
            if shiboken6.isValid(self):
                self.tested.emit(pid, ok, said)

        threading.Thread(target=work, name=f"provider-test-{pid}", daemon=True).start()

    def _show_test(self, pid: str, ok: bool, said: str) -> None:
        self._testing.discard(pid)
        self._test_results[pid] = ("✓ " if ok else "✗ ") + said
        if pid == self.current_id():
            self.test_label.setText(self._test_results[pid])
            self.test_button.setEnabled(True)

    def _key_text(self, pid: str) -> str:
        info = self.infos[pid]
        if info.kind not in ("openai", "anthropic") or not info.api_key_env:
            return "Not needed."
        source = key_source(info)
        url = self._urls.get(pid) or info.base_url
        if source == "env":
            return f"From the environment variable {info.api_key_env}."
        if source == "keyring":
            return "Stored in the OS keyring."
        if is_local_url(url):
            return f"Not needed for a server on this machine (or set {info.api_key_env})."
        return f"None yet: set {info.api_key_env}, or store one in the keyring below."

    def _url_edited(self, text: str) -> None:
        self._urls[self.current_id()] = text.strip()
        self.key_label.setText(self._key_text(self.current_id()))
        self._test_results.pop(self.current_id(), None)  # a test of another URL says nothing of this one
        if self.current_id() not in self._testing:
            self.test_label.setText("")

    def _store_key(self) -> None:
        pid, key = self.current_id(), self.key_edit.text().strip()
        if not key:
            return
        try:
            store_api_key(pid, key)
        except ProviderConfigError as err:
            QMessageBox.warning(self, "API key not stored", str(err))
            return
        finally:
            self.key_edit.clear()  # the key does not linger in the widget
        self.key_label.setText(self._key_text(pid))

    def _show_cache(self) -> None:
        if self.store is None:
            self.cache_label.setText("no run history")
            self.clear_cache_button.setEnabled(False)
            return
        try:
            stats = self.store.cache_stats()
        except Exception as err:  # a history that cannot be read: said, not raised
            self.cache_label.setText(f"cannot be read: {err}")
            self.clear_cache_button.setEnabled(False)
            return
        size = QLocale.c().formattedDataSize(stats["bytes"], 1, QLocale.DataSizeFormat.DataSizeTraditionalFormat)
        self.cache_label.setText(f"{stats['entries']:,} recorded outputs, {size}")  # "4.2 KB", not "0.0 MB"
        self.clear_cache_button.setEnabled(stats["entries"] > 0)

    def clear_cache(self) -> None:
        if self.store is not None:
            try:
                self.store.clear_cache()
            except Exception as err:
                QMessageBox.warning(self, "Run cache", f"The run cache could not be cleared: {err}")
        self._show_cache()

    def save(self) -> None:
        data = self.settings.model_copy(deep=True)
        limit = self.cache_limit.value()
        extra = dict((data.model_extra or {}).get("runCache") or {})
        if limit != 64 or extra:
            extra["limitMB"] = limit
            data.runCache = extra
        for pid, url in self._urls.items():
            override = dict(data.providers.get(pid, {}))
            if url:
                override["base_url"] = url
            else:
                override.pop("base_url", None)
            if override:
                data.providers[pid] = override
            else:
                data.providers.pop(pid, None)
        data.defaultProvider = self.default_combo.currentData() or None
        data.webSearch.searxngUrl = self.search_edit.text().strip() or None
        try:
            save_settings(data)
        except (OSError, ProviderConfigError) as err:
            QMessageBox.critical(self, "Provider settings", f"The settings could not be saved: {err}")
            return
        self.settings = data
        if self.store is not None:
            try:
                self.store.set_cache_limit(limit * 1024 * 1024)
            except Exception:  # the limit applies at the next start
                pass
        self.accept()
