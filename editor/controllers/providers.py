"""Which model serves the runs started in this window: Run ▸ LLM Provider (a provider and a
model for every agent, GUI settings), Provider Settings, the choice offered when a run's
provider cannot serve, and Run ▸ Run On (this computer or a Temporal server, whose runs the
history then lists too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import QMenu, QWidget

from engine import ProviderConfigError, available_providers, default_provider, make_resolver

from ..first_run import EACH_AGENTS_OWN, Choice, offer_choice, offer_model_choice
from ..history.panel import HistoryPanel
from ..panels.provider_settings import ProviderSettingsDialog
from ..run.console import RunConsole
from ..window.run_on import TemporalServerDialog
from ..window.settings import settings, text_setting
from .validation import ValidationController

Status = Callable[[str, int], None]


def resolver_factory() -> Any:
    """The resolver the runs started here use: the Run menu's provider and model, if chosen."""
    provider = text_setting("run/provider") or None
    model = text_setting("run/model") or None  # for every agent (Run ▸ LLM Provider)
    return make_resolver(provider, model=model)


class ProvidersController(QObject):
    """The Run menu's provider, model and Run On choices, and the provider choice a failed run offers."""

    def __init__(
        self,
        parent: QWidget,
        console: RunConsole,
        history: HistoryPanel,
        validation: ValidationController,
        store: Any,
        run: Callable[[], None],
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent  # the dialogs' parent
        self.console = console
        self.history = history
        self.validation = validation
        self.store = store
        self._run = run  # what runs again after a choice (the window's Run)
        self._status = status
        console.provider_choice_requested.connect(lambda: self.choose_provider())
        self.sync_remote_history()

    # ------------------------------------------------------------------ Run ▸ LLM Provider
    def fill_provider_menu(self, menu: QMenu) -> None:
        menu.clear()
        current = text_setting("run/provider")
        group = QActionGroup(menu)
        hints = {"echo": "echo — offline, answers with its prompt (for trying a flow)"}
        choices = [("", "Each agent's own, else the default")] + [(p, hints.get(p, p)) for p in available_providers()]
        for value, label in choices:
            a = menu.addAction(label)
            a.setData(value)
            a.setCheckable(True)
            a.setChecked(value == current)
            group.addAction(a)
            a.triggered.connect(lambda _=False, v=value: settings().setValue("run/provider", v))
        menu.addSeparator()
        model = text_setting("run/model")
        a = menu.addAction(f"Model for Every Agent: {model or EACH_AGENTS_OWN}…")
        a.setObjectName("chooseModel")
        a.triggered.connect(lambda _=False: self.choose_model())

    def choose_provider(self, console: Any = None, run_again: Any = None) -> None:
        """A run's model provider could not serve: offer the providers this computer has (the
        first run's dialog), then run again with the one chosen. ``console``: the run console
        that asked (the main one when None); ``run_again``: how it runs again (Run when None)."""
        console = console or self.console
        header = console.header
        problem = header.provider_problem or {}
        if problem.get("model"):  # the provider answered, without that model: one of its own for every agent
            self.choose_model(
                header.provider_reason, run_again or self._run, problem.get("provider"), parent=console.window()
            )
            return
        offer_choice(
            console.window(),
            header.provider_reason or "Its provider did not answer.",
            lambda choice: self._provider_chosen(choice, run_again or self._run),
        )

    def choose_model(
        self, reason: str | None = None, run_again: Any = None, provider: str | None = None, parent: Any = None
    ) -> None:
        """The model every agent of the runs started here uses (``run/model``, as ``--model`` on the
        command line), from those the run's provider has; runs again after a failed run."""
        if provider is None:
            provider = text_setting("run/provider") or None
        if provider is None:
            try:
                provider = default_provider()
            except ProviderConfigError as err:
                self._status(f"No provider to list models of: {err}", 8000)
                return
        current = text_setting("run/model")

        def chosen(model: str) -> None:
            settings().setValue("run/model", model)
            self._status(
                f"Every agent now asks for {model} (Run ▸ LLM Provider changes it)."
                if model
                else "Each agent asks for its own model again.",
                10000,
            )
            if run_again is not None:
                run_again()

        offer_model_choice(parent or self._parent, provider, current, reason, chosen)

    def _provider_chosen(self, choice: Choice, run_again: Any) -> None:
        # The dialog made it the default provider. A provider forced for every run (Run ▸ LLM
        # Provider) is what failed, if one is set: the choice replaces it, or it would fail again.
        if text_setting("run/provider"):
            settings().setValue("run/provider", choice.provider_id)
            self._status(f"Runs now use {choice.provider_id} (Run ▸ LLM Provider changes it).", 10000)
        run_again()

    def open_provider_settings(self) -> None:
        dialog = ProviderSettingsDialog(self._parent, store=self.store)
        if dialog.exec():
            self._status("Provider settings saved.", 4000)
            self.validation.refresh_search_backend()  # it may have changed
            self.validation.run_validation()

    # ------------------------------------------------------------------ Run ▸ Run On
    def fill_run_on_menu(self, menu: QMenu) -> None:
        menu.clear()
        s = settings()
        address = str(s.value("run/temporalAddress", "") or "")
        remote = str(s.value("run/on", "local")) == "temporal" and bool(address)
        group = QActionGroup(menu)
        for value, label, on, enabled in (
            ("local", "This Computer", not remote, True),
            (
                "temporal",
                f"Temporal Server ({address})" if address else "Temporal Server (not set)",
                remote,
                bool(address),
            ),
        ):
            a = menu.addAction(label)
            a.setCheckable(True)
            a.setChecked(on)
            a.setEnabled(enabled)
            group.addAction(a)
            a.triggered.connect(lambda _=False, v=value: settings().setValue("run/on", v))
        menu.addSeparator()
        menu.addAction("Temporal Server…", self.open_temporal_settings)

    def sync_remote_history(self) -> None:
        """The history lists the configured Temporal server's runs (none configured: local runs only)."""
        s = settings()
        self.history.set_remote_server(
            str(s.value("run/temporalAddress", "") or "") or None,
            str(s.value("run/temporalNamespace", "") or "default"),
        )

    def open_temporal_settings(self) -> None:
        if TemporalServerDialog(self._parent).exec():
            self.sync_remote_history()
            self._status(f"Runs go to the Temporal server at {settings().value('run/temporalAddress')}.", 4000)
