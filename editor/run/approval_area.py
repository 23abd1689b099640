"""ApprovalArea: the run console's approval cards, kept in step with the run shown.

Split from :mod:`editor.run.console`, which owns one and connects the bridge's
``approvals_changed`` to :meth:`ApprovalArea.refresh` and the cards' ``decision_requested``
to :meth:`ApprovalArea.decide`. The cards (:class:`~editor.run.approvals.ApprovalsPanel`)
show the approvals the live run waits for (none for a replayed run, nor for a run let go
of); a decision goes to the bridge only for the approval waiting now. While cards wait they
share the console's side split with the tabs (:meth:`~editor.run.side_pane.RunSidePane.fit_approvals`);
when even that cuts them, ``room_wanted`` asks the window for the pixels they lack.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from engine import RunStateError

from .bridge import RunBridge
from .shown_run import ShownRun
from .side_pane import RunSidePane

__all__ = ["ApprovalArea"]


class ApprovalArea(QObject):
    """Fills the approval cards from the bridge, sizes them, and sends their decisions."""

    room_wanted = Signal(int)  # pixels more the console would need to show the cards whole

    def __init__(
        self, side: RunSidePane, bridge: RunBridge, shown: ShownRun, on_error: Callable[[str], None], parent: QObject
    ) -> None:
        super().__init__(parent)
        self._side = side
        self.cards = side.approvals
        self._bridge = bridge
        self._shown = shown
        self._on_error = on_error

    def refresh(self) -> None:
        """The cards of the approvals the shown run waits for now."""
        before = len(self.cards.cards)
        live = not self._shown.is_replay and self._shown.shows_bridge()
        self.cards.set_requests(self._bridge.approvals() if live else [])
        if self.cards.cards and len(self.cards.cards) != before:
            QTimer.singleShot(0, self, lambda: self.fit_cards(bool(self.cards.cards)))

    def fit_cards(self, waiting: bool, ask_room: bool = True) -> None:
        """Share the side split between the cards and the tabs; ``ask_room``: say when cut."""
        lack = self._side.fit_approvals() if waiting else 0
        if ask_room and lack > 0:  # a short window: the card is cut (see room_wanted)
            self.room_wanted.emit(lack)

    def fit(self) -> None:
        """Share the split again (after the console was given more room); asks for no more."""
        self.fit_cards(bool(self.cards.cards), ask_room=False)

    def decide(self, node_id: str, decision: str, note: str) -> None:
        """A card's decision: to the bridge when its approval is the one waiting now."""
        bridge, cards = self._bridge, self.cards
        if bridge.pending_approval != node_id:
            self.refresh()
            return
        try:
            arguments = cards.edited_arguments(node_id)
            if arguments is not None:  # a tool call's arguments, edited
                bridge.resume(decision, note, output=cards.edited_output(node_id), arguments=arguments)
            else:
                bridge.resume(decision, note, output=cards.edited_output(node_id))
        except RunStateError as err:
            self._on_error(str(err))
            self.refresh()
