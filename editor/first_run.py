"""The first Run with no usable provider: a short set-up dialog instead of a failed run.

:func:`offer_setup` is the window's one hook (called by Run before anything starts). When
the run needs the default provider and there is none (nothing named, no ``defaultProvider``,
no embedded model), it surveys what this machine has (``engine.survey``: API keys in the
environment or keyring, OpenAI-compatible servers answering on the usual local ports, the
embedded model) and opens :class:`FirstRunDialog`, window-modal and non-blocking. The choice
is remembered as ``defaultProvider`` in ``settings.json`` (``engine.remember_choice``), then
the run starts. Cancelling starts nothing. A provider that is set up but cannot serve (its
server does not answer, its key is missing) fails the run, which says why; the console then
offers "Choose provider…", which opens the same dialog through :func:`offer_choice`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine import (
    FoundServer,
    NoProviderConfigured,
    ProviderConfigError,
    ProviderSurvey,
    default_provider_problem,
    local_install_command,
    needs_default_provider,
    provider_models,
    read_resource_text,
    remember_choice,
    survey,
)

__all__ = [
    "Choice",
    "FirstRunDialog",
    "ModelChoiceDialog",
    "offer_setup",
    "offer_choice",
    "offer_model_choice",
    "choices_for",
    "EACH_AGENTS_OWN",
]

INTRO_FALLBACK = "Agents need a language model to answer. Choose one below; Flowdesk remembers the choice."


@dataclass(frozen=True)
class Choice:
    provider_id: str
    label: str
    server: FoundServer | None = None


def choices_for(found: ProviderSurvey) -> list[Choice]:
    """What the dialog offers, best first: found servers and keys, the embedded model, echo."""
    out = [
        Choice(s.provider_id, f"{s.name} at {s.base_url}" + (f" — {', '.join(s.models[:3])}" if s.models else ""), s)
        for s in found.servers
    ]
    out += [Choice(k.provider_id, f"{k.name} — API key in {k.where}") for k in found.keys]
    if found.local_model:
        out.append(Choice("local", "The embedded model (offline, no key)"))
    out.append(Choice("echo", "Dry run with echo — each agent answers with its prompt (no model)"))
    return out


def _looked_for(found: ProviderSurvey) -> str:
    ports = ", ".join(str(port) for _pid, port in found.probed) or "none"
    lines = [
        f"API keys ({', '.join(found.key_vars)}, or the OS keyring): "
        + (", ".join(k.name for k in found.keys) or "none found"),
        f"Local servers on ports {ports}: " + (", ".join(s.name for s in found.servers) or "none answering"),
        "The embedded model: " + ("installed" if found.local_model else "not installed"),
    ]
    return "Looked for:\n" + "\n".join(f"  •  {line}" for line in lines)


def _fit_rows(choices: QListWidget, most: int) -> None:
    """The list as tall as its choices (up to ``most`` rows): no empty box below them."""
    rows = min(max(choices.count(), 1), most)
    choices.setFixedHeight(rows * max(choices.sizeHintForRow(0), 24) + 2 * choices.frameWidth() + 6)


def _use_buttons(dialog: QDialog, text: str, name: str) -> tuple[QDialogButtonBox, QPushButton]:
    """Cancel, and the default button that takes the choice (``text``)."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    use = buttons.addButton(text, QDialogButtonBox.ButtonRole.AcceptRole)
    use.setObjectName(name)
    use.setDefault(True)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    return buttons, use


class FirstRunDialog(QDialog):
    """Lists what the survey found; ``chosen`` is the selected :class:`Choice` once accepted."""

    def __init__(self, found: ProviderSurvey, parent: QWidget | None = None, *, intro_text: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set up a model for this run")
        self.setObjectName("firstRunDialog")
        self.found = found
        self.chosen: Choice | None = None
        if intro_text is None:
            try:
                intro_text = read_resource_text("help", "first-run.md")
            except OSError:
                intro_text = INTRO_FALLBACK
        intro = QLabel(intro_text)
        intro.setObjectName("firstRunIntro")
        intro.setTextFormat(Qt.TextFormat.MarkdownText)
        intro.setWordWrap(True)

        self.list = QListWidget()
        self.list.setObjectName("firstRunChoices")
        for choice in choices_for(found):
            item = QListWidgetItem(choice.label)
            item.setData(Qt.ItemDataRole.UserRole, choice)
            self.list.addItem(item)
        self.list.setCurrentRow(0)
        # Enter or a double-click on a choice takes it (the list would otherwise keep Enter from
        # reaching the default button).
        self.list.activated.connect(lambda _index: self.accept())
        _fit_rows(self.list, 6)

        looked = QLabel(_looked_for(found))
        looked.setObjectName("firstRunLookedFor")
        looked.setWordWrap(True)
        looked.setStyleSheet("color: palette(mid);")

        self.install_command = QLineEdit(local_install_command())
        self.install_command.setObjectName("installCommand")
        self.install_command.setReadOnly(True)
        self.install_command.setCursorPosition(0)
        copy = QPushButton("Copy")
        copy.setObjectName("copyInstallCommand")
        copy.clicked.connect(self._copy_command)
        install_row = QHBoxLayout()
        install_row.addWidget(self.install_command, 1)
        install_row.addWidget(copy)
        install_label = QLabel(
            "Install the embedded model (offline, no key; then restart Flowdesk) with:"
            if not found.local_model
            else "The embedded model is installed."
        )
        install_label.setWordWrap(True)

        buttons, self.run_button = _use_buttons(self, "Use it and run", "firstRunUse")

        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addWidget(self.list)
        lay.addWidget(looked)
        lay.addSpacing(6)
        lay.addWidget(install_label)
        if not found.local_model:
            lay.addLayout(install_row)
        lay.addWidget(buttons)
        lay.setSizeConstraint(QVBoxLayout.SizeConstraint.SetFixedSize)
        self.setMinimumWidth(700)

    def choice(self, provider_id: str) -> int:
        """The row of the first choice for ``provider_id`` (-1 if none)."""
        for row in range(self.list.count()):
            if self.list.item(row).data(Qt.ItemDataRole.UserRole).provider_id == provider_id:
                return row
        return -1

    def _copy_command(self) -> None:
        QGuiApplication.clipboard().setText(self.install_command.text())

    def accept(self) -> None:
        item = self.list.currentItem()
        if item is None or self.chosen is not None:
            return
        choice: Choice = item.data(Qt.ItemDataRole.UserRole)
        try:
            remember_choice(choice.provider_id, choice.server)
        except ProviderConfigError as err:  # an unreadable settings file: say so, keep the dialog open
            QMessageBox.warning(self, "Provider settings", str(err))
            return
        self.chosen = choice
        bar = getattr(self.parent(), "statusBar", None)
        if callable(bar):
            bar().showMessage(
                f"Runs now use {choice.provider_id} unless an agent names its own provider "
                "(Run ▸ Provider Settings changes it).",
                10000,
            )
        super().accept()


def _open(dialog: Any) -> Any:
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.open()
    dialog.raise_()
    dialog.activateWindow()  # Enter chooses, Esc cancels, even where no window manager moves focus
    dialog.list.setFocus()
    return dialog


def _waiting(ask: Callable[[], Any]) -> Any:
    """``ask()`` (a short look at this machine's servers) under the wait cursor."""
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    try:
        return ask()
    finally:
        QApplication.restoreOverrideCursor()


def _survey() -> ProviderSurvey:
    return _waiting(survey)  # in parallel, a short timeout: well under a second


def offer_choice(parent: QWidget, reason: str, then: Callable[[Choice], None]) -> FirstRunDialog:
    """A run's provider could not serve (``reason`` says how): the same survey and dialog as the
    first run, saying why; ``then(choice)`` runs once a choice is made (and remembered)."""
    intro = (
        f"**The run could not use its model.** {reason}\n\nChoose one that this computer has below; "
        "Flowdesk remembers the choice as the default provider (*Run ▸ Provider Settings* changes it)."
    )
    dialog = FirstRunDialog(_survey(), parent, intro_text=intro)
    dialog.accepted.connect(lambda: then(dialog.chosen) if dialog.chosen is not None else None)
    return _open(dialog)


EACH_AGENTS_OWN = "Each agent's own model (as the workflow names it)"


class ModelChoiceDialog(QDialog):
    """The model every agent of the runs started here uses, from those ``provider_id`` has (its
    server's list when it runs on this machine); ``chosen`` is the model ("" for each agent's
    own) once accepted. ``reason``: why it is asked (a run that failed), or None."""

    def __init__(
        self,
        provider_id: str,
        models: list[str],
        current: str,
        reason: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Model for every agent")
        self.setObjectName("modelChoiceDialog")
        self.chosen: str | None = None
        lines = [f"**The run could not use its model.** {reason}", ""] if reason else []
        lines.append(
            f"Every agent of the runs started here asks **{provider_id}** for the model chosen below; the "
            "workflow keeps its own model names (a run from the command line takes `--model`)."
        )
        intro = QLabel("\n".join(lines))
        intro.setObjectName("modelChoiceIntro")
        intro.setTextFormat(Qt.TextFormat.MarkdownText)
        intro.setWordWrap(True)
        self.list = QListWidget()
        self.list.setObjectName("modelChoices")
        for value, label in [("", EACH_AGENTS_OWN)] + [(m, m) for m in models]:
            item = QListWidgetItem(label)
            item.setData(Qt.ItemDataRole.UserRole, value)
            self.list.addItem(item)
        rows = [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]
        # the current choice, else (after a failure) the provider's first model
        self.list.setCurrentRow(rows.index(current) if current and current in rows else (1 if reason and models else 0))
        self.list.activated.connect(lambda _index: self.accept())
        _fit_rows(self.list, 8)
        empty = QLabel("" if models else f"{provider_id} lists no models here: is its server running?")
        empty.setWordWrap(True)
        buttons, self.use_button = _use_buttons(self, "Use it and run" if reason else "Use it", "modelChoiceUse")
        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addWidget(self.list)
        if not models:
            lay.addWidget(empty)
        lay.addWidget(buttons)
        self.setMinimumWidth(520)

    def accept(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        self.chosen = item.data(Qt.ItemDataRole.UserRole)
        super().accept()


def offer_model_choice(
    parent: QWidget, provider_id: str, current: str, reason: str | None, then: Callable[[str], None]
) -> ModelChoiceDialog:
    """Ask which model every agent uses (see :class:`ModelChoiceDialog`); ``then(model)`` once chosen."""
    models = _waiting(lambda: provider_models(provider_id))  # a local server's own list: a short request
    dialog = ModelChoiceDialog(provider_id, models, current, reason, parent)
    dialog.accepted.connect(lambda: then(dialog.chosen) if dialog.chosen is not None else None)
    return _open(dialog)


def offer_setup(parent: QWidget, workflow: Any, forced: str | None, then: Callable[[], None]) -> bool:
    """Open the set-up dialog when ``workflow`` needs a default provider and none is usable.

    Returns True when the dialog was opened (``then`` runs once a choice is made), False when
    the run can go ahead now.
    """
    if forced or workflow is None or not needs_default_provider(workflow):
        return False
    if not isinstance(default_provider_problem(), NoProviderConfigured):
        return False
    dialog = FirstRunDialog(_survey(), parent)
    dialog.accepted.connect(then)
    _open(dialog)
    return True
