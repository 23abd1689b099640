"""ModelsUsed: which provider and model each agent call of the live run got, and the badges.

Split from :mod:`editor.run.console`, which owns one. The console's runs reach a model
through :meth:`ModelsUsed.tracking`, a resolver that notes what each agent call actually
gets: the header names the models a run used (and, once, that the embedded model is tiny);
an agent's card shows its provider and model while it runs. The other badges of the shown
run (a retry's attempt, a loop's item, a join's arrivals) are the reducer's, worded by
:mod:`.badges` through :class:`~editor.run.shown_run.ShownRun`; this object adds the model
badges to them and says when the whole set changed (``badges_changed``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from ..window.settings import settings
from .header import RunHeader
from .shown_run import ShownRun

__all__ = ["ModelsUsed", "LOCAL_NOTICE_KEY"]

LOCAL_NOTICE_KEY = "notices/localModelTiny"  # the embedded model's "it is tiny" was said


class ModelsUsed(QObject):
    """The models the live run used (``used``: node id -> (provider, model)) and the run's badges."""

    model_used = Signal(str, str, str)  # (node id, provider, model): an agent call's resolved provider
    badges_changed = Signal(dict)  # {node_id: (text, "retry"|"loop"|"join"|"model")}

    def __init__(self, header: RunHeader, shown: ShownRun, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._header = header
        self._shown = shown
        self.used: dict[str, tuple[str, str]] = {}  # node id -> (provider, model) of the live run
        self._model_badges: dict[str, tuple[str, str]] = {}
        self.model_used.connect(self._on_model_used)

    def reset(self) -> None:
        """A run about to be shown: no models named, no badges."""
        self._header.clear_models()
        self.used = {}
        self._shown.badges = {}
        self.badges_changed.emit({})

    def tracking(self, resolver: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``resolver``, noting which provider and model each agent call actually gets (the
        header names them; the agent's card shows them while it runs). A single provider given
        instead of a resolver (as ``Run`` accepts) answers every call."""
        if hasattr(resolver, "complete"):
            single = resolver
            resolver = lambda _inv: single  # noqa: E731

        def resolve(invocation: Any) -> Any:
            provider = resolver(invocation)
            name = str(getattr(provider, "provider_id", None) or getattr(provider, "name", "") or "")
            inner = getattr(provider, "inner", provider)
            model = (
                (getattr(provider, "model", None) if provider is not inner else None)
                or getattr(inner, "model_id", None)
                or getattr(invocation, "model", "")
                or ""
            )
            self.model_used.emit(str(getattr(invocation, "node_id", "")), name, str(model))
            return provider

        return resolve

    def _on_model_used(self, node_id: str, provider: str, model: str) -> None:
        if self.used.get(node_id) == (provider, model):
            return
        self.used[node_id] = (provider, model)
        self._header.add_model(provider, model)
        if provider == "local" and not settings().value(LOCAL_NOTICE_KEY, False, type=bool):
            settings().setValue(LOCAL_NOTICE_KEY, True)  # said once (on the first run that uses it)
            self._header.show_local_notice()
        self.badges_changed.emit(self.badges())

    def badges(self) -> dict[str, tuple[str, str]]:
        """Badges of the shown run: node id -> ("attempt 2 of 4", "retry"), ("iteration 3", "loop"), ("1 of 3 in", "join");
        an agent running without one of those shows the provider and model answering it
        ("local · smollm2…", "model")."""
        shown = self._shown
        badges = dict(shown.badges)
        if self.used and shown.bridge.is_active:
            states = shown.state.states
            for nid, (provider, model) in self.used.items():
                if nid not in badges and states.get(nid) == "running":
                    badges[nid] = (f"{provider} · {model}" if model else provider, "model")
        return badges

    def update(self) -> None:
        """The badges made again from the shown run's state; ``badges_changed`` if they changed."""
        changed = self._shown.update_badges()
        if self.used:  # an agent's model badge goes when it stops running
            badges = self.badges()
            model_badges = {k: v for k, v in badges.items() if v[1] == "model"}
            changed = changed or model_badges != self._model_badges
            self._model_badges = model_badges
        if changed:
            self.badges_changed.emit(self.badges())
