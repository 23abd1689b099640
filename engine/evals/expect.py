"""Checking a case's run against its expectations.

:class:`Observed` is what a finished run gave (its output, each node's output, times, tokens,
cost), taken once from the run's events by the runner; :func:`check` answers one expectation
with None (it holds) or a :class:`Failure` that says what was expected and what came. The
``judge`` type asks a model (:func:`ask_judge`): one request, graded PASS or FAIL from the
first word of its answer, its one-line reason kept, its tokens counted apart from the run's.

Text comparisons read an output as text (JSON for structured outputs). ``equals`` compares
the text with both ends' whitespace ignored, or, for a non-text ``value``, the output parsed
as JSON; ``contains``/``notContains``/``regex`` are case-sensitive (write ``(?i)`` for a regex
that is not). ``jsonSchema`` uses the ``jsonschema`` package when it is installed, else the
engine's own checker (engine/llm/structured.py: type, properties, required, enum, items).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from engine.evals.cases import Expectation
from engine.llm.base import AgentInvocation, NoToolsContext
from engine.llm.structured import schema_errors
from engine.nodes.base import as_text

__all__ = ["Observed", "Failure", "JudgeVerdict", "check", "ask_judge", "parse_verdict", "JUDGE_SYSTEM_PROMPT"]

#: What an ``actual`` value shows at most (a long output is cut, with its length said).
ACTUAL_LIMIT = 2000

JUDGE_SYSTEM_PROMPT = (
    "You grade the output of an automated workflow against a rubric. "
    "Answer with PASS or FAIL as the first word, then one short line giving the reason. "
    "Answer PASS only when the output satisfies the whole rubric."
)


@dataclass
class Observed:
    """What one run of a case gave, as expectations read it."""

    output: Any = None
    outputs: dict[str, Any] = field(default_factory=dict)
    status: str = "completed"
    error: str | None = None
    duration_ms: float = 0.0
    node_ms: dict[str, float] = field(default_factory=dict)
    tokens: int = 0
    node_tokens: dict[str, int] = field(default_factory=dict)
    cost: float = 0.0
    node_cost: dict[str, float] = field(default_factory=dict)
    spent_tokens: int = 0
    spent_cost: float = 0.0
    #: Nodes whose model has no known price: ``{node id: model}`` (counted 0, shown as unknown).
    node_unpriced: dict[str, str] = field(default_factory=dict)

    @property
    def unpriced(self) -> list[str]:
        """The models with no price among the run's calls (its cost is then not known)."""
        return sorted(set(self.node_unpriced.values()))

    def has_node(self, node: str | None) -> bool:
        return node is None or node in self.outputs

    def text_of(self, node: str | None) -> str:
        value = self.output if node is None else self.outputs.get(node)
        return "" if value is None else as_text(value)


@dataclass
class Failure:
    """An expectation that did not hold: its type, what it asked and what came."""

    type: str
    expected: Any
    actual: Any
    node: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "expected": self.expected, "actual": self.actual}
        if self.node:
            out["node"] = self.node
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass
class JudgeVerdict:
    passed: bool
    reason: str
    tokens: int = 0
    model: str | None = None


def _shown(text: str) -> str:
    if len(text) <= ACTUAL_LIMIT:
        return text
    return text[:ACTUAL_LIMIT] + f"… ({len(text)} characters)"


def _as_json(text: str) -> tuple[bool, Any]:
    """(whether ``text`` is JSON, its value); a fenced ```json block counts as its content."""
    stripped = text.strip()
    m = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", stripped, re.S)
    if m:
        stripped = m.group(1)
    try:
        return True, json.loads(stripped)
    except ValueError:
        return False, None


def _schema_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    try:
        import jsonschema  # an optional package: the engine's own checker serves without it
    except ImportError:
        return schema_errors(value, schema, "the output")
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
    except jsonschema.SchemaError as err:
        return [f"the schema itself is not valid: {err.message}"]
    errors = sorted(validator_cls(schema).iter_errors(value), key=lambda e: list(e.path))
    return [(f"at {'/'.join(str(p) for p in e.path)}: " if e.path else "") + e.message for e in errors]


def check(exp: Expectation, obs: Observed) -> Failure | None:
    """None when ``exp`` holds for ``obs``, else the failure (``judge`` is :func:`ask_judge`'s)."""
    kind, node = exp.type, exp.node
    if node is not None and kind not in ("maxLatencyMs", "maxTokens", "maxCost") and not obs.has_node(node):
        return Failure(kind, exp.expected_text(), f"node '{node}' gave no output in this run", node)
    if kind in ("contains", "notContains", "equals", "regex", "jsonSchema"):
        text = obs.text_of(node)
        if kind == "contains":
            ok = str(exp.value) in text
        elif kind == "notContains":
            ok = str(exp.value) not in text
        elif kind == "regex":
            ok = re.search(str(exp.value), text) is not None
        elif kind == "equals":
            if isinstance(exp.value, str):
                ok = text.strip() == exp.value.strip()
            else:
                is_json, parsed = _as_json(text)
                ok = is_json and parsed == exp.value
        else:
            is_json, parsed = _as_json(text)
            if not is_json:
                return Failure(kind, exp.value, f"not JSON: {_shown(text)}", node)
            problems = _schema_problems(parsed, exp.value)
            if problems:
                return Failure(kind, exp.value, "; ".join(problems[:3]), node, reason=_shown(text))
            return None
        return None if ok else Failure(kind, exp.value, _shown(text), node)
    if kind == "maxLatencyMs":
        ms = obs.duration_ms if node is None else obs.node_ms.get(node)
        if ms is None:
            return Failure(kind, exp.value, f"node '{node}' did not run", node)
        return None if ms <= exp.value else Failure(kind, exp.value, round(ms), node)
    if kind == "maxTokens":
        tokens = obs.tokens if node is None else obs.node_tokens.get(node, 0)
        return None if tokens <= exp.value else Failure(kind, exp.value, tokens, node)
    if kind == "maxCost":  # a model with no known price counts 0 (a local server costs nothing)
        cost = obs.cost if node is None else obs.node_cost.get(node, 0.0)
        return None if cost <= exp.value else Failure(kind, exp.value, round(cost, 6), node)
    raise ValueError(f"check() does not grade '{kind}' expectations")


def parse_verdict(text: str) -> tuple[bool | None, str]:
    """(PASS → True, FAIL → False, neither → None; the one-line reason) of a judge's answer."""
    stripped = text.strip()
    m = re.match(r"[\s*_#>`\"'\[(]*(PASS|FAIL)(?:ED|ES)?\b[\s*_`\"'\])]*[:.\-–—,]?\s*(.*)", stripped, re.I | re.S)
    if not m:
        first = next((line.strip() for line in stripped.splitlines() if line.strip()), "")
        return None, first[:300]
    passed = m.group(1).upper() == "PASS"
    rest = [line.strip(" *_`") for line in m.group(2).splitlines()]
    reason = next((line for line in rest if line), "")
    return passed, reason[:300]


async def ask_judge(
    resolver: Any, exp: Expectation, output_text: str, *, model: str = "", case_input: str | None = None
) -> JudgeVerdict:
    """One request to the judge model (``exp.model``, else ``model``: the eval's) grading
    ``output_text`` against ``exp.rubric``. A model error is a failed verdict naming it."""
    parts = [f"Rubric:\n{exp.rubric}"]
    if case_input:
        parts.append(f"Input the workflow was given:\n{case_input}")
    parts.append(f"Output to grade:\n{output_text}")
    parts.append("Answer PASS or FAIL, then one line with the reason.")
    inv = AgentInvocation(
        node_id="judge",
        name="Judge",
        system_prompt=JUDGE_SYSTEM_PROMPT,
        user_content="\n\n".join(parts),
        model=exp.model or model or "",
        reasoning_effort="low",
        tools={"web_search": False, "subagents": False},
        subagents=[],
    )
    try:
        provider = resolver(inv)
        result = await provider.complete(inv, NoToolsContext(inv.node_id))
    except Exception as err:  # a judge that cannot answer fails its expectation, not the eval
        return JudgeVerdict(False, f"the judge could not answer: {err}")
    usage = result.usage or {}
    tokens = sum(v for k, v in usage.items() if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int))
    verdict, reason = parse_verdict(result.text or "")
    if verdict is None:
        return JudgeVerdict(False, f"the judge answered neither PASS nor FAIL: {reason}", tokens, result.model)
    return JudgeVerdict(verdict, reason, tokens, result.model)
