"""RunComparer: which two runs the history panel compares, and their compare windows.

Split from :mod:`editor.history.panel`, which owns one (its ``compare_runs``,
``compare_from_menu`` and ``previous_run_of`` ask it). Two runs are compared oldest first:
the two selected, or the one selected and the run of the same workflow started just before
it; from the Run menu with none selected, the newest local run listed and the one before
it. Runs on a Temporal server are not compared. The windows (:class:`.compare.CompareWindow`)
are kept while they are open. Nothing here raises from a user action: what cannot be
compared is said in a message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtWidgets import QWidget

from engine import RunInfo, RunStore, StoreError, WorkflowLoadError

from .actions import warn
from .compare import CompareWindow

__all__ = ["RunComparer"]


class RunComparer:
    """Opens compare windows for the panel ``owner`` (the parent of its messages)."""

    def __init__(self, owner: QWidget, is_remote: Callable[[Any], bool]) -> None:
        self._owner = owner
        self._is_remote = is_remote
        self.windows: list[CompareWindow] = []  # the compare windows opened (the closed ones dropped at the next)

    @staticmethod
    def previous_run_of(store: RunStore | None, run_id: str) -> str | None:
        """The run of the same workflow started just before ``run_id`` (None when it is the first)."""
        info = store.get_run(run_id) if store is not None else None
        if store is None or info is None:
            return None
        older = [
            r
            for r in store.list_runs(workflow=info.workflow_name, limit=200)
            if (r.started_at, r.id) < (info.started_at, info.id)
        ]
        return older[0].id if older else None

    def compare(
        self, store: RunStore | None, selected: Sequence[RunInfo], run_a: str | None = None, run_b: str | None = None
    ) -> Any:
        """Open the compare view of two runs (default: the two ``selected``, oldest first, or
        the one selected and the run before it). Returns the window (None when it cannot)."""
        if store is None:
            return None
        if run_a is None or run_b is None:
            runs = sorted(selected, key=lambda r: (r.started_at, r.id))
            if len(runs) == 2:
                run_a, run_b = runs[0].id, runs[1].id
            elif len(runs) == 1:
                run_b = runs[0].id
                run_a = self.previous_run_of(store, run_b)
                if run_a is None:
                    warn(
                        self._owner,
                        "Compare runs",
                        "This is the first run of its workflow: there is no previous run to "
                        "compare it with. Select two runs to compare them.",
                    )
                    return None
            else:
                return None
        try:
            wa, wb = store.workflow_of(run_a), store.workflow_of(run_b)
            ea, eb = store.events(run_a), store.events(run_b)
        except (StoreError, WorkflowLoadError, ValueError) as err:
            warn(self._owner, "Compare runs", f"The runs cannot be read: {err}")
            return None
        win = CompareWindow(run_a, wa, ea, run_b, wb, eb)
        self.windows = [w for w in self.windows if w.isVisible()] + [win]
        win.show()
        return win

    def from_menu(self, store: RunStore | None, selected: Sequence[RunInfo], listed: Sequence[RunInfo | None]) -> Any:
        """Run ▸ Compare Runs: the ``selected`` runs (two, or one and the run before it); with
        none selected, the newest local run ``listed`` and the run before it."""
        if len(selected) in (1, 2) and not any(self._is_remote(r) for r in selected):
            return self.compare(store, selected)
        newest = next((r for r in listed if r is not None and not self._is_remote(r)), None)
        previous = self.previous_run_of(store, newest.id) if newest is not None else None
        if newest is None or previous is None:
            warn(
                self._owner,
                "Compare runs",
                "There are not two runs to compare yet: run the workflow twice, or select "
                "two runs in Run history (View ▸ Run history) and choose Compare.",
            )
            return None
        return self.compare(store, selected, previous, newest.id)
