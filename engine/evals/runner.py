"""Running an eval: every case of a workflow as a stored run, graded, grouped under one eval id.

Cases run concurrently (``concurrency`` at once, default 4), each a :class:`engine.Run`
recorded in the run store like any run. A case's run reuses the outputs recorded by the same
case's run in the workflow's last eval wherever a node's execution key still matches (as "run
from here" does, engine/run/rerun.py, with no node forced fresh): a node whose data changed
runs again with everything downstream of it, so editing the last prompt re-runs only the last
node per case. A run that pauses at an approval is cancelled (an eval answers no approvals)
and its case fails.

The grading (:mod:`engine.evals.expect`) reads the run's events through the one reducer
(:class:`engine.RunState`), so an eval's figures agree with the history's. ``judge``
expectations each ask the judge model once; their tokens are the case's ``judgeTokens``, not
its ``tokens``. With a baseline eval, the cases that passed there and fail now are
``regressed``, those that failed there and pass now ``improved``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.evals.cases import EvalCase, Expectation
from engine.evals.expect import Failure, Observed, ask_judge, check
from engine.evals.history import EvalHistory, EvalRecord
from engine.graph.index import GraphIndex
from engine.graph.model import Workflow
from engine.graph.variables import VariableError, run_variables
from engine.llm.registry import make_resolver
from engine.nodes.base import as_text
from engine.run.costs import readable_prices, run_costs
from engine.run.events import RunStatus
from engine.run.scheduler import Run
from engine.run.state import RunState
from engine.store import RunRecorder, RunStore, StoreError

__all__ = ["CaseResult", "EvalResult", "run_eval", "compare_to_baseline", "case_from_run"]


@dataclass
class CaseResult:
    """One case's outcome: whether it passed, what failed, and what its run spent."""

    name: str
    passed: bool
    failures: list[Failure] = field(default_factory=list)
    duration_ms: int = 0
    tokens: int = 0
    cost: float = 0.0
    run_id: str | None = None
    status: str = "completed"
    error: str | None = None
    output: str = ""
    judge_tokens: int = 0
    judges: list[dict[str, Any]] = field(default_factory=list)
    cache_hits: int = 0
    unpriced: list[str] = field(default_factory=list)
    #: What this run itself spent (``tokens``/``cost`` count reused outputs as they were made).
    spent_tokens: int = 0
    spent_cost: float = 0.0
    #: Per node: ``{tokens, cost, ms}`` as graded (a reused output's as recorded when it was made).
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "passed": self.passed,
            "failures": [f.to_json() for f in self.failures],
            "durationMs": self.duration_ms,
            "tokens": self.tokens,
            "cost": round(self.cost, 8),
            "runId": self.run_id,
            "status": self.status,
            "output": self.output,
            "judgeTokens": self.judge_tokens,
            "cacheHits": self.cache_hits,
            "spentTokens": self.spent_tokens,
            "spentCost": round(self.spent_cost, 8),
            "nodes": self.nodes,
        }
        if self.error:
            out["error"] = self.error
        if self.judges:
            out["judges"] = self.judges
        if self.unpriced:
            out["unpriced"] = self.unpriced
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CaseResult:
        """A stored result read back (the history's, a baseline's)."""
        failures = [
            Failure(f.get("type", ""), f.get("expected"), f.get("actual"), f.get("node"), f.get("reason"))
            for f in obj.get("failures") or []
            if isinstance(f, Mapping)
        ]
        return cls(
            name=str(obj.get("name", "")),
            passed=bool(obj.get("passed")),
            failures=failures,
            duration_ms=int(obj.get("durationMs") or 0),
            tokens=int(obj.get("tokens") or 0),
            cost=float(obj.get("cost") or 0.0),
            run_id=obj.get("runId"),
            status=str(obj.get("status") or ""),
            error=obj.get("error"),
            output=str(obj.get("output") or ""),
            judge_tokens=int(obj.get("judgeTokens") or 0),
            judges=list(obj.get("judges") or []),
            cache_hits=int(obj.get("cacheHits") or 0),
            spent_tokens=int(obj.get("spentTokens") or 0),
            spent_cost=float(obj.get("spentCost") or 0.0),
            nodes=dict(obj.get("nodes") or {}),
            unpriced=[str(m) for m in obj.get("unpriced") or []],
        )


@dataclass
class EvalResult:
    """An eval's outcome: its id, every case's result, and the comparison with a baseline."""

    eval_id: str
    workflow_name: str
    workflow_path: str | None
    cases: list[CaseResult]
    started_at: float
    ended_at: float
    baseline_id: str | None = None
    regressed: list[str] = field(default_factory=list)
    improved: list[str] = field(default_factory=list)
    recorded: bool = True

    @property
    def passed(self) -> int:
        return sum(1 for c in self.cases if c.passed)

    @property
    def pass_rate(self) -> float:
        return self.passed / len(self.cases) if self.cases else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.cases) and all(c.passed for c in self.cases)

    def to_json(self) -> dict[str, Any]:
        """The ``flowdesk eval --json`` document (DESIGN "Contract details")."""
        return {
            "evalId": self.eval_id,
            "passRate": round(self.pass_rate, 4),
            "cases": [c.to_json() for c in self.cases],
            "regressed": list(self.regressed),
            "improved": list(self.improved),
            "baseline": self.baseline_id,
            "workflow": self.workflow_name,
            "passed": self.passed,
            "total": len(self.cases),
            "durationMs": int((self.ended_at - self.started_at) * 1000),
        }


def compare_to_baseline(cases: Sequence[CaseResult], baseline: EvalRecord) -> tuple[list[str], list[str]]:
    """(regressed, improved): case names that passed in ``baseline`` and fail now, and the reverse
    (cases new since the baseline are neither)."""
    before = {str(r.get("name")): bool(r.get("passed")) for r in baseline.results}
    regressed = [c.name for c in cases if before.get(c.name) is True and not c.passed]
    improved = [c.name for c in cases if before.get(c.name) is False and c.passed]
    return regressed, improved


def _run_output(run: Any, state: RunState, workflow: Workflow) -> Any:
    """The run's output: the output of the last node to complete with no outgoing execution link
    (``Run.result``), else, for a run seen only through its events, the same read from them."""
    result = getattr(run, "result", None)
    if result is not None:
        return result
    outs = GraphIndex.of(workflow).steps_out
    ended = [
        (d.ended or 0.0, nid)
        for nid, d in state.details.items()
        if d.output is not None and not outs.get(nid) and d.outcome != "failed"
    ]
    if ended:
        return state.details[max(ended)[1]].output
    return state.final_output


def observe(
    run: Any,
    workflow: Workflow,
    events: Sequence[Any],
    seconds: float,
    model: str | None,
    previous: Mapping[str, Any] | None = None,
) -> Observed:
    """What a finished run gave, as expectations read it (from its events, through the reducer).

    A node whose output was reused from ``previous`` (the case's result in the last eval) counts
    the tokens, cost and time recorded when that output was made, so ``maxTokens``, ``maxCost``
    and ``maxLatencyMs`` grade the same outputs the same way whether or not they were reused;
    ``spent_tokens``/``spent_cost`` are what this run itself spent."""
    state = RunState.of(workflow, events)
    costs = run_costs(state, workflow, readable_prices(), model_override=model)
    outputs: dict[str, Any] = dict(state.outputs)
    live = getattr(run, "outputs", None)
    if isinstance(live, Mapping):
        outputs.update({k: v for k, v in live.items() if v is not None})
    node_tokens = {nid: c["prompt"] + c["completion"] for nid, c in costs["nodes"].items()}
    node_cost = {nid: (c["cost"] or 0.0) for nid, c in costs["nodes"].items()}
    node_ms = {nid: d.duration * 1000 for nid, d in state.details.items() if d.duration is not None}
    node_unpriced = {nid: c["model"] or "(default model)" for nid, c in costs["nodes"].items() if c["cost"] is None}
    spent_tokens, spent_cost = costs["total"]["tokens"], costs["total"]["cost"] or 0.0
    tokens, cost, ms = spent_tokens, spent_cost, seconds * 1000
    made = (previous or {}).get("nodes") or {}
    source = (previous or {}).get("runId")
    for nid, d in state.details.items():
        figures = made.get(nid) if d.cached_from and d.cached_from == source else None
        if not isinstance(figures, Mapping):
            continue
        t, c, m = (float(figures.get(k) or 0) for k in ("tokens", "cost", "ms"))
        node_tokens[nid], node_cost[nid], node_ms[nid] = int(t), c, m
        if figures.get("unpriced"):
            node_unpriced[nid] = str(figures["unpriced"])
        tokens, cost, ms = tokens + int(t), cost + c, ms + m
    status = str(getattr(run.status, "value", run.status))
    return Observed(
        output=_run_output(run, state, workflow),
        outputs=outputs,
        status=status,
        error=getattr(run, "error", None) or state.error,
        duration_ms=ms,
        node_ms=node_ms,
        tokens=tokens,
        node_tokens=node_tokens,
        cost=cost,
        node_cost=node_cost,
        spent_tokens=spent_tokens,
        spent_cost=spent_cost,
        node_unpriced=node_unpriced,
    )


class _Eval:
    """The state of one eval while its cases run."""

    def __init__(
        self,
        workflow: Workflow,
        cases: Sequence[EvalCase],
        *,
        path: str | None,
        store: RunStore | None,
        history: EvalHistory | None,
        resolver: Any,
        judge_resolver: Any,
        provider: str | None,
        model: str | None,
        base_url: str | None,
        run_factory: Callable[..., Any] | None,
        reuse: Mapping[str, Mapping[str, Any]],
        max_visits: int,
        on_case_started: Callable[[int, EvalCase], None] | None,
        on_case_done: Callable[[int, CaseResult], None] | None,
    ) -> None:
        self.workflow, self.cases, self.path = workflow, list(cases), path
        self.store, self.history = store, history
        self.resolver, self.judge_resolver = resolver, judge_resolver
        self.provider, self.model, self.base_url = provider, model, base_url
        self.run_factory = run_factory
        self.reuse = reuse
        self.max_visits = max_visits
        self.on_case_started, self.on_case_done = on_case_started, on_case_done
        self.meta = {k: v for k, v in (("provider", provider), ("model", model), ("baseUrl", base_url)) if v}

    async def run_case(self, index: int, case: EvalCase, gate: asyncio.Semaphore, eval_id: str) -> CaseResult:
        async with gate:
            if self.on_case_started is not None:
                self.on_case_started(index, case)
            try:
                result = await self._run_case(case, eval_id)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a case that cannot run fails, the eval goes on
                result = CaseResult(case.name, False, [Failure("run", "completed", f"the run could not start: {err}")])
                result.status, result.error = "failed", str(err)
            if self.history is not None:
                try:
                    self.history.add_case(eval_id, index, result.to_json())
                except StoreError:
                    pass
            if self.on_case_done is not None:
                self.on_case_done(index, result)
            return result

    def _make_run(self, case: EvalCase, eval_id: str) -> Any:
        meta = dict(self.meta, evalId=eval_id, evalCase=case.name)
        if self.run_factory is not None:
            return self.run_factory(
                self.workflow,
                self.resolver,
                initial_input=case.input,
                variables=case.vars,
                meta=meta,
                path=self.path,
                max_visits=self.max_visits,
            )
        previous = (self.reuse.get(case.name) or {}).get("runId")
        reuse_from = None
        if previous and self.store is not None:
            recorded = self.store.recorded_steps(previous)
            reuse_from = recorded or None
        return Run(
            self.workflow,
            self.resolver,
            initial_input=case.input,
            max_visits=self.max_visits,
            check=False,
            meta=meta,
            variables=case.vars,
            path=self.path,
            reuse_from=reuse_from,
            store=self.store,
        )

    async def _run_case(self, case: EvalCase, eval_id: str) -> CaseResult:
        run = self._make_run(case, eval_id)
        events: list[Any] = []
        run.add_listener(events.append)
        recorder = None
        if self.store is not None and self.run_factory is None:
            try:
                recorder = RunRecorder(self.store, run, workflow_path=self.path)
            except StoreError:
                recorder = None
        began = time.monotonic()
        try:
            try:
                status = await run.start()
            except asyncio.CancelledError:  # the eval was stopped (Ctrl+C): the run ends cancelled
                run.cancel("The eval was cancelled.")
                raise
            if status == RunStatus.PAUSED:
                run.cancel("An eval answers no approvals: the case's run was stopped at its approval.")
                await run.wait()
        finally:
            seconds = time.monotonic() - began
            if recorder is not None:
                recorder.settled()
                recorder.close()
        obs = observe(run, self.workflow, events, seconds, self.model, self.reuse.get(case.name))
        result = CaseResult(case.name, True, run_id=run.run_id)
        result.duration_ms = int(obs.duration_ms)
        result.tokens, result.cost = obs.tokens, obs.cost
        result.spent_tokens, result.spent_cost = obs.spent_tokens, obs.spent_cost
        result.nodes = {
            nid: {"tokens": obs.node_tokens.get(nid, 0), "cost": obs.node_cost.get(nid, 0.0), "ms": round(ms)}
            for nid, ms in obs.node_ms.items()
        }
        for nid, unpriced_model in obs.node_unpriced.items():  # kept, so a reused output's cost stays unknown
            result.nodes.setdefault(nid, {"tokens": obs.node_tokens.get(nid, 0), "cost": 0.0, "ms": 0})
            result.nodes[nid]["unpriced"] = unpriced_model
        result.unpriced = obs.unpriced
        result.status, result.error = obs.status, obs.error
        result.output = "" if obs.output is None else as_text(obs.output)
        result.cache_hits = sum(1 for e in events if getattr(e, "type", None) == "cache_hit")
        if obs.status != RunStatus.COMPLETED.value:
            paused = status == RunStatus.PAUSED or "approval" in (obs.error or "")
            why = "it paused at an approval (an eval answers none)" if paused else (obs.error or obs.status)
            result.failures.append(Failure("run", "completed", f"{obs.status}: {why}"))
        for exp in case.expect:
            if exp.type == "judge":
                if obs.status != RunStatus.COMPLETED.value:
                    continue  # the case failed already: the judge is not paid to grade an unfinished run
                if not obs.has_node(exp.node):
                    result.failures.append(
                        Failure("judge", exp.rubric, f"node '{exp.node}' gave no output in this run", exp.node)
                    )
                    continue
                verdict = await ask_judge(
                    self.judge_resolver, exp, obs.text_of(exp.node), model=self.model or "", case_input=case.input
                )
                result.judge_tokens += verdict.tokens
                result.judges.append(
                    {"rubric": exp.rubric, "passed": verdict.passed, "reason": verdict.reason, "tokens": verdict.tokens}
                )
                if not verdict.passed:
                    result.failures.append(
                        Failure("judge", exp.rubric, f"FAIL: {verdict.reason}", exp.node, reason=verdict.reason)
                    )
                continue
            failure = check(exp, obs)
            if failure is not None:
                result.failures.append(failure)
        result.passed = not result.failures
        return result


async def run_eval(
    workflow: Workflow,
    cases: Sequence[EvalCase],
    *,
    path: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    resolver: Any = None,
    judge_resolver: Any = None,
    store: RunStore | None = None,
    record: bool = True,
    concurrency: int = 4,
    baseline: str | EvalRecord | None = None,
    reuse: bool = True,
    max_visits: int = 25,
    run_factory: Callable[..., Any] | None = None,
    eval_id: str | None = None,
    on_case_started: Callable[[int, EvalCase], None] | None = None,
    on_case_done: Callable[[int, CaseResult], None] | None = None,
) -> EvalResult:
    """Run every case of ``workflow`` (see the module's doc) and grade it.

    ``provider``/``model``/``base_url`` choose the model as ``flowdesk run``'s options do (a
    ``resolver`` given instead is used as it is); the judge uses the same provider and model
    unless an expectation names its own ``model``. ``store`` (default: the user's run store,
    when ``record``) keeps the runs and the eval; ``run_factory`` makes each case's run instead
    of a local :class:`engine.Run` (``engine.RemoteRun`` for runs on Temporal: nothing is reused
    then). ``baseline``: an eval id (or record) to compare with.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if resolver is None:
        resolver = make_resolver(provider, model=model, base_url=base_url)
    if judge_resolver is None:
        judge_resolver = make_resolver(provider, base_url=base_url) if (provider or base_url or model) else resolver
    if store is None and record:
        store = RunStore()
    history = EvalHistory(store) if store is not None else None
    base: EvalRecord | None = None
    if isinstance(baseline, EvalRecord):
        base = baseline
    elif baseline:
        if history is None:
            raise ValueError("a baseline eval needs the run store that holds it")
        base = history.get(baseline)
        if base is None:
            raise ValueError(f"there is no eval '{baseline}' in the run history")
    previous = history.last_results(path) if (history is not None and path and reuse and run_factory is None) else {}
    eval_id = eval_id or str(uuid.uuid4())
    started = time.time()
    name = workflow.display_name() if hasattr(workflow, "display_name") else (workflow.name or "")
    if history is not None:
        history.begin(
            eval_id, workflow_path=path, workflow_name=name, started_at=started, provider=provider, model=model
        )
    job = _Eval(
        workflow,
        cases,
        path=path,
        store=store if run_factory is None else None,
        history=history,
        resolver=resolver,
        judge_resolver=judge_resolver,
        provider=provider,
        model=model,
        base_url=base_url,
        run_factory=run_factory,
        reuse=previous,
        max_visits=max_visits,
        on_case_started=on_case_started,
        on_case_done=on_case_done,
    )
    gate = asyncio.Semaphore(concurrency)
    results = await asyncio.gather(*(job.run_case(i, c, gate, eval_id) for i, c in enumerate(cases)))
    ended = time.time()
    out = EvalResult(eval_id, name, path, list(results), started, ended, recorded=history is not None)
    if base is not None:
        out.baseline_id = base.id
        out.regressed, out.improved = compare_to_baseline(out.cases, base)
    if history is not None:
        history.finish(eval_id, ended_at=ended, cases=len(out.cases), passed=out.passed)
    return out


def case_from_run(store: RunStore, run_id: str, *, kind: str = "equals", name: str | None = None) -> EvalCase:
    """A case made from a stored run: its input, the variables it was given that differ from the
    workflow's defaults, and its output as an ``equals`` (or ``contains``) expectation to edit.
    ValueError when the run is not in ``store`` or gave no output."""
    info = store.get_run(run_id)
    if info is None:
        raise ValueError(f"there is no run '{run_id}' in the run history")
    workflow = store.workflow_of(run_id)
    state = RunState.of(workflow, store.events(run_id))
    output = _run_output(None, state, workflow)
    if output is None:
        raise ValueError(f"run {run_id[:8]} gave no output to expect")
    try:
        defaults = run_variables(workflow, {})
    except VariableError:
        defaults = {}
    given = {k: v for k, v in (info.arguments or {}).items() if defaults.get(k) != v}
    # a structured output is expected equal as the value it is; text otherwise
    value = output if kind == "equals" and not isinstance(output, str) else as_text(output)
    first = (info.initial_input or "").strip()
    label = name or (first.splitlines()[0][:40] if first else f"run {run_id[:8]}")
    return EvalCase(label, info.initial_input, given, [Expectation(kind, value)])
