"""What the window pushes onto the canvas for display only: validation issues, find hits and
a run's states. None of it is part of the document or undoable.

:class:`ShownState` is a part of :class:`~editor.canvas.projected_scene.ProjectedScene` (kept
apart to keep that module readable): it works on the scene's ``node_items`` and
``edge_items``, keeps what it was given for items made later (a big document makes items as
the view moves) and drives the scene's :class:`~editor.canvas.run_overlay.RunOverlay`
(``run``) and its pulse timer.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer

from engine import Issue, RunState

from ..issue_text import issue_tooltips
from .run_overlay import canvas_states, output_previews

__all__ = ["ShownState"]


class ShownState:
    """Issues, find hits and a run on the scene's cards and links (display only)."""

    def pulse_timer(self) -> QTimer:
        """The timer that advances running cards' halos (started while a run runs)."""
        timer = QTimer(self)
        timer.setInterval(60)
        timer.timeout.connect(lambda: self.run.pulse(self.node_items))
        return timer

    def set_found_nodes(self, ids: set[str]) -> None:
        """Find hits: highlighted now, and on items made later."""
        self._found = set(ids)
        for nid, item in self.node_items.items():
            item.set_found(nid in self._found)

    def set_issues(self, issues: list[Issue]) -> None:
        kept = issue_tooltips(issues, self.document.workflow)
        self._issues = kept  # for items made later (a big document)
        for nid, item in self.node_items.items():
            item.set_issues(*kept.get(nid, (None, "")))

    def show_run(self, state: RunState | None, badges: dict[str, tuple[str, str]] | None = None) -> None:
        """Show what a run did, as the engine's reducer has it (None: no run): each node's
        state word (see :func:`~editor.canvas.run_overlay.canvas_states`), the links it
        followed, the errors as tooltips and ``badges`` (node id -> (text, kind))."""
        if state is None:
            self.clear_run_states()
            return
        words, tips = canvas_states(state)
        self.set_run_states(words, set(state.links), tips, badges, output_previews(state))

    def set_run_states(
        self,
        states: dict[str, str],
        links: set[tuple[str, str, str]] | None = None,
        tips: dict[str, str] | None = None,
        badges: dict[str, tuple[str, str]] | None = None,
        previews: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        """Show a run on the canvas: node states (words of
        :data:`~editor.canvas.run_overlay.CANVAS_STATES`; nodes not in it are shown normally)
        and the links it followed, ``(source, sourceHandle, target)``. :meth:`show_run` makes
        them from a :class:`engine.RunState`. Run state is never part of the document and
        never undoable."""
        self.run.set(states, links, tips, badges, previews)
        self.run.show_on(self.node_items, self.edge_items)
        if self.run.running:
            if not self._pulse_timer.isActive():
                self._pulse_timer.start()
        else:
            self._pulse_timer.stop()

    def clear_run_states(self) -> None:
        self.set_run_states({}, set())

    def set_show_outputs(self, on: bool) -> None:
        """Show (or not) each node's last output under its card (the duration and tokens stay)."""
        if on == self.run.show_outputs:
            return
        self.run.show_outputs = on
        for nid, item in self.node_items.items():
            self.run.apply(nid, item)
