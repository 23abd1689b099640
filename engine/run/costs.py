"""Token and cost totals of a run, per node and in all (no Qt).

Prices are per model in the provider catalogue (``resources/providers.json``: a model's
``price`` is ``{"input": USD, "output": USD}`` per million tokens), which the user overrides
in settings.json like any catalogue field (``providers.<id>.models: [{"id", "price"}]``).
A call is priced by the model that answered it (the ``llm_response``'s ``model``: a run sent
to the echo provider or the embedded model costs nothing, whatever model its nodes name),
else by the node's model (``data.model``) or the run's override (``meta.model``). A dated
snapshot of a model (``gpt-4o-mini-2024-07-18``) takes the price of the model it is a
snapshot of. A model with no known price counts its tokens but no cost (``cost`` None,
``unpriced`` names it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engine.llm.config import _known_providers

__all__ = ["model_prices", "readable_prices", "run_costs", "format_cost", "usage_cost", "price_of", "stored_run_costs"]

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")  # a dated snapshot's suffix


def model_prices(settings: Any = None) -> dict[str, tuple[float, float]]:
    """``{model id: (input, output)}`` USD per million tokens, from the catalogue with the user's overrides."""
    out: dict[str, tuple[float, float]] = {}
    for info in _known_providers(settings):
        for m in info.models:
            price = (m.model_extra or {}).get("price")
            if isinstance(price, Mapping):
                i, o = price.get("input"), price.get("output")
                if isinstance(i, (int, float)) and isinstance(o, (int, float)):
                    out.setdefault(m.id, (float(i), float(o)))
    return out


def readable_prices() -> dict[str, tuple[float, float]]:
    """:func:`model_prices`, or none when the catalogue or the settings cannot be read: tokens are
    then counted without costs, and what shows them goes on."""
    try:
        return model_prices()
    except Exception:
        return {}


def price_of(
    prices: Mapping[str, tuple[float, float]], answered: str | None, configured: str = ""
) -> tuple[str, tuple[float, float] | None]:
    """The model a call is priced as, and its price (None: unknown): the model that answered
    (or the model it is a dated snapshot of, or the one asked for when it answered as a
    snapshot of it), else the model the node asked for."""
    if not answered:
        return configured, prices.get(configured)
    price = prices.get(answered)
    if price is not None:
        return answered, price
    base = _SNAPSHOT.sub("", answered)
    if base != answered and base in prices:
        return base, prices[base]
    if configured and configured in prices and answered.startswith(configured.removesuffix("-latest")):
        return configured, prices[configured]
    return answered, None


def run_costs(
    state: Any,
    workflow: Any = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    model_override: str | None = None,
) -> dict[str, Any]:
    """Per node ``{prompt, completion, model, cost}`` and the run's ``total`` (same keys, plus
    ``unpriced``: the models with tokens but no price). Cached and pinned nodes cost nothing.
    The calls of a nested run (a flow node's, a library flow an agent called as a tool) count
    for the node that ran it."""
    prices = model_prices() if prices is None else prices
    wf = workflow if workflow is not None else getattr(state, "workflow", None)
    models = {}
    if wf is not None:
        for n in wf.nodes:
            models[n.id] = model_override or getattr(n.data, "model", "") or ""
    nodes: dict[str, dict[str, Any]] = {}
    tp = tc = 0
    cost = 0.0
    unpriced: set[str] = set()
    calls = [(nid, d, models.get(nid, "")) for nid, d in state.details.items()]
    for path, child in getattr(state, "children", {}).items():
        owner = _owner_of(path, models or state.details)
        calls += [(owner, d, "") for d in child.details.values()]
    for nid, d, configured in calls:
        usage = d.total_usage or d.usage or {}  # every call of the run: loop iterations, subagent calls
        p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
        p = p if isinstance(p, int) else 0
        c = c if isinstance(c, int) else 0
        if d.cached_from is not None or d.pinned or not (p or c):
            continue
        model, price = price_of(prices, d.model, configured)
        node_cost = None if price is None else (p * price[0] + c * price[1]) / 1_000_000
        if node_cost is None:
            unpriced.add(model or "(default model)")
        else:
            cost += node_cost
        seen = nodes.get(nid)
        if seen is None:
            nodes[nid] = {"prompt": p, "completion": c, "model": model, "cost": node_cost}
        else:  # a node's own calls and those of the run it ran
            seen["prompt"] += p
            seen["completion"] += c
            seen["cost"] = None if seen["cost"] is None or node_cost is None else seen["cost"] + node_cost
        tp += p
        tc += c
    return {
        "nodes": nodes,
        "total": {
            "prompt": tp,
            "completion": tc,
            "tokens": tp + tc,
            "cost": cost if nodes and not unpriced else (cost or None),
            "unpriced": sorted(unpriced),
        },
    }


def _owner_of(path: str, top_nodes: Mapping[str, Any]) -> str:
    """The top-level node whose step ran the nested run at ``path`` (``node:run`` for a flow
    node, ``agent.call:run`` for a flow an agent called as a tool, nested ones after a ``/``)."""
    call = path.split("/", 1)[0].rsplit(":", 1)[0]
    return call if call in top_nodes else call.rsplit(".", 1)[0]


def format_cost(cost: float | None) -> str:
    if cost is None:
        return "—"
    if cost == 0:
        return "$0"
    if cost < 0.0001:
        return "<$0.0001"
    return f"${cost:.4f}" if cost < 0.01 else f"${cost:.2f}"


def usage_cost(
    usage: Mapping[str, tuple[int, int]],
    models: Mapping[str, str],
    prices: Mapping[str, tuple[float, float]],
    answered: Mapping[str, str] | None = None,
) -> tuple[int, float | None]:
    """(tokens, cost) of ``{node id: (prompt, completion)}`` with each node's model and the
    model that answered it (``answered``, when known; see :func:`price_of`). Cost None when
    no node with tokens has a known price."""
    tokens, cost, priced = 0, 0.0, False
    answered = answered or {}
    for nid, (p, c) in usage.items():
        tokens += p + c
        _model, price = price_of(prices, answered.get(nid), models.get(nid, ""))
        if price is not None:
            cost += (p * price[0] + c * price[1]) / 1_000_000
            priced = True
    return tokens, (cost if priced else None)


def stored_run_costs(
    store: Any, run_ids: Any, *, models_of: dict[str, dict[str, str]] | None = None
) -> dict[str, tuple[int, float | None]]:
    """``{run id: (tokens, cost)}`` of stored runs that used tokens, from their events (every
    call: responses, subagent calls, nested runs), priced from the catalogue as :func:`run_costs`
    prices a live run. ``models_of`` caches each run's node models (a stored workflow never changes)."""
    import json

    ids = list(run_ids)
    prices = readable_prices()
    answers = store.answers_by_node(ids)
    models_of = {} if models_of is None else models_of
    out: dict[str, tuple[int, float | None]] = {}
    for rid in ids:
        nodes = answers.get(rid)
        if not nodes:
            continue
        models = models_of.get(rid)
        if models is None:
            try:
                wf = json.loads(store.workflow_json(rid) or "{}")
                models = {
                    str(n.get("id")): (n.get("data") or {}).get("model") or ""
                    for n in wf.get("nodes", [])
                    if isinstance(n, dict)
                }
            except (ValueError, AttributeError):
                models = {}
            models_of[rid] = models
        usage = {nid: (p, c) for nid, (p, c, _model) in nodes.items()}
        answered = {nid: model for nid, (_p, _c, model) in nodes.items() if model}
        out[rid] = usage_cost(usage, models, prices, answered)
    return out
