"""Ctrl+K: the command bar (:class:`editor.window.command_bar.CommandBar`) and the run windows
it opens, one run console each, kept in ``windows`` while open."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from engine import LibraryError, WorkflowLoadError, load_workflow

from ..window.command_bar import CommandBar, CommandRunWindow

Status = Callable[[str, int], None]


class CommandBarController(QObject):
    """Shows the bar over the window; runs the flow picked, or opens its file."""

    def __init__(
        self,
        parent: QWidget,
        store: Any,
        resolver_factory: Callable[[], Any],
        open_path: Callable[[str], bool],
        choose_provider: Callable[..., None],
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent  # the bar floats over it
        self.store = store
        self._resolver_factory = resolver_factory
        self._open_path = open_path
        self._choose_provider = choose_provider
        self._status = status
        self.bar: CommandBar | None = None  # made at the first Ctrl+K
        self.windows: list[CommandRunWindow] = []

    def open_command_bar(self) -> None:
        if self.bar is None:
            self.bar = CommandBar(self._parent, resolver_factory=self._resolver_factory)
            self.bar.run_requested.connect(self.run_command_choice)
            self.bar.open_requested.connect(lambda path: self._open_path(path))
        self.bar.popup()

    def run_command_choice(self, choice: Any) -> Any:
        """Run a library flow picked in the command bar, in a run window of its own."""
        try:
            workflow = load_workflow(choice.flow.path)
        except (WorkflowLoadError, LibraryError) as err:
            self._status(f"Cannot run {choice.flow.name}: {err}", 8000)
            return None
        win = CommandRunWindow(choice, workflow, store=self.store, resolver_factory=self._resolver_factory)
        # a provider that cannot serve: the same choice as in the main console, then this window runs again
        win.console.offers_provider_choice = True
        win.console.provider_choice_requested.connect(lambda w=win: self._choose_provider(w.console, w.start))
        self.windows.append(win)
        win.destroyed.connect(lambda _=None, w=win: self.windows.remove(w) if w in self.windows else None)
        win.show()
        if win.start() is None:
            self._status(f"{choice.flow.name} could not start; see its run window", 8000)
        else:
            self._status(f"Running {choice.flow.name} in its own window", 5000)
        return win
