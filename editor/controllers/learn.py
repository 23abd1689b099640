"""Save as flow… on a completed run whose agent called tools (docs/flows.md, "Learning a flow"):
the engine turns the run's tool calls into a deterministic workflow (one model request proposes
its parameters and trigger phrases; with no model set up, every argument stays literal), which
opens as a new, unsaved document for review, with the proposal's reasons shown beside it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from engine import AgentInvocation, FlowdeskError, LearnError, RunState, learn_from_run

Status = Callable[[str, int], None]


class LearnController(QObject):
    """``save_run_as_flow(run_id)``: the console's "Save as flow…"."""

    learned = Signal(object, object)  # (the learned Workflow, its Proposal)

    def __init__(
        self,
        parent: QWidget,
        store: Any,
        resolver_factory: Callable[[], Any],
        open_workflow: Callable[[Any, str], bool],
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent
        self.store = store
        self._resolver_factory = resolver_factory
        self._open = open_workflow
        self._status = status
        self.reasons_box: QMessageBox | None = None

    def _provider(self) -> tuple[Any, str]:
        """The model to ask (None: none set up, literals kept) and a note saying so."""
        try:
            resolver = self._resolver_factory()
            inv = AgentInvocation("learn", "Learn a flow", "", "", "", "low", {}, [])
            provider = resolver(inv) if callable(resolver) and not hasattr(resolver, "complete") else resolver
            return provider, ""
        except Exception as err:  # no provider set up: learn with the literals as they were
            return None, f"No model was asked ({err}); every argument is kept as it was written."

    def save_run_as_flow(self, run_id: str, provider: Any = None) -> asyncio.Future | None:
        if self.store is None:
            self._status("Save as flow needs the run history, which is not available.", 6000)
            return None
        try:
            info = self.store.find_run(run_id)
            workflow = self.store.workflow_of(info.id)
            events = list(self.store.iter_events(info.id))
        except (FlowdeskError, AttributeError) as err:
            self._status(f"Cannot read run {run_id[:8]}: {err}", 6000)
            return None
        state = RunState.of(workflow, events)
        note = ""
        if provider is None:
            provider, note = self._provider()

        async def learn() -> None:
            try:
                wf, proposal = await learn_from_run(workflow, events, state, run_id=info.id, provider=provider)
            except LearnError as err:
                self._status(f"Cannot save the run as a flow: {err}", 8000)
                return
            except FlowdeskError as err:  # the model call failed
                self._status(f"The model could not propose the flow's parameters: {err}", 8000)
                return
            if note:
                proposal.reasons.insert(0, note)
            if not self._open(wf, info.id):
                return
            self._show_reasons(wf, proposal)
            self.learned.emit(wf, proposal)

        return asyncio.ensure_future(learn())

    def _show_reasons(self, wf: Any, proposal: Any) -> None:
        lines = [f"<b>{wf.name}</b> makes the run's calls again, with no planning turn. Review it, then save it."]
        if proposal.variables:
            lines.append("<br><b>Parameters</b> (Start variables):")
            lines += [f"• {v['name']} ({v['type']}), was “{v['from']}”" for v in proposal.variables]
        if proposal.triggers:
            lines.append("<br><b>Trigger phrases</b>:")
            lines += [f"• {t}" for t in proposal.triggers]
        if proposal.reasons:
            lines.append("<br><b>Why</b>:")
            lines += [f"• {r}" for r in proposal.reasons]
        box = QMessageBox(QMessageBox.Icon.Information, "Learned a flow", "<br>".join(lines), parent=self._parent)
        box.setObjectName("learnedFlowReasons")
        box.setModal(False)
        self.reasons_box = box
        box.open()
        self._status(f"Learned {wf.name}: opened as a new document", 6000)
