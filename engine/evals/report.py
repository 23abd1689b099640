"""An eval's results for people and for tools: the table ``flowdesk eval`` prints, and JUnit XML
(one ``testsuite`` named after the workflow, one ``testcase`` a case, a ``failure`` for each
case that did not pass, its message listing the failed expectations), which CI systems show.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from engine.evals.expect import Failure
from engine.evals.runner import CaseResult, EvalResult
from engine.files import atomic_write_text
from engine.run.costs import format_cost
from engine.run.events import format_duration

__all__ = ["format_table", "failure_line", "quoted", "junit_xml", "write_junit"]

_CUT = 70


def _short(value: Any, limit: int = _CUT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quoted(value: Any, limit: int = _CUT) -> str:
    """``value`` cut short between single quotes, as written (not a Python repr: a regex's
    backslashes stay single, a quote inside stays as it is)."""
    return f"'{_short(value, limit)}'"


def failure_line(f: Failure) -> str:
    """One failed expectation: its type (and node), what it asked, what came."""
    where = f" [{f.node}]" if f.node else ""
    if f.type in ("maxLatencyMs", "maxTokens", "maxCost"):
        return f"{f.type}{where} {f.expected}: got {f.actual}"
    if f.type == "run":
        return f"run did not complete: {_short(f.actual, 120)}"
    if f.type == "judge":
        return f"judge{where} '{_short(f.expected, 50)}': {_short(f.actual, 100)}"
    return f"{f.type}{where} {quoted(f.expected, 40)}: got {quoted(f.actual)}"


def _duration(ms: int) -> str:
    return format_duration(ms / 1000)


def format_table(result: EvalResult) -> str:
    """The eval's table: case, PASS/FAIL, duration, tokens, cost, then each failure beneath its
    case; the pass rate; and, with a baseline, the cases that got worse or better."""
    rows = [("CASE", "RESULT", "DURATION", "TOKENS", "COST")]
    for c in result.cases:
        tokens = str(c.tokens) + (f" ({c.spent_tokens} spent)" if c.spent_tokens != c.tokens else "")
        tokens += f" (+{c.judge_tokens} judge)" if c.judge_tokens else ""
        rows.append(
            (
                _short(c.name, 40),
                "PASS" if c.passed else "FAIL",
                _duration(c.duration_ms),
                tokens,
                format_cost(c.cost) if c.cost or not c.unpriced else "—",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip())
        if i == 0:
            continue
        case = result.cases[i - 1]
        for f in case.failures:
            lines.append(f"    ✗ {failure_line(f)}")
    total = len(result.cases)
    lines.append("")
    kept = "" if result.recorded else " (not recorded)"
    lines.append(f"{result.passed}/{total} passed ({result.pass_rate * 100:.0f}%)  eval {result.eval_id}{kept}")
    hits = sum(c.cache_hits for c in result.cases)
    if hits:
        lines.append(f"{hits} recorded node output{'s' if hits != 1 else ''} reused from the last eval")
    unpriced = sorted({m for c in result.cases for m in c.unpriced})
    if unpriced:  # "—" in the COST column: say why
        lines.append(f"no price known for {', '.join(unpriced)}: their calls are counted at $0")
    if result.baseline_id is not None:
        lines.append(f"against eval {result.baseline_id[:8]}:")
        lines.append("  regressed: " + (", ".join(result.regressed) if result.regressed else "none"))
        lines.append("  improved:  " + (", ".join(result.improved) if result.improved else "none"))
    return "\n".join(lines) + "\n"


def _case_failure(case: CaseResult) -> tuple[str, str]:
    message = "; ".join(failure_line(f) for f in case.failures) or "failed"
    body = "\n".join(
        f"{f.type}{' [' + f.node + ']' if f.node else ''}\n  expected: {_short(f.expected, 2000)}\n"
        f"  actual:   {_short(f.actual, 2000)}"
        for f in case.failures
    )
    return message, body


def junit_xml(result: EvalResult) -> str:
    """JUnit XML of the eval (``tests``, ``failures``, ``errors``, ``time`` counted as CI tools read them)."""
    failures = sum(1 for c in result.cases if not c.passed)
    seconds = f"{max(0.0, result.ended_at - result.started_at):.3f}"
    suites = ET.Element(
        "testsuites",
        name="flowdesk eval",
        tests=str(len(result.cases)),
        failures=str(failures),
        errors="0",
        time=seconds,
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=result.workflow_name or "workflow",
        tests=str(len(result.cases)),
        failures=str(failures),
        errors="0",
        skipped="0",
        time=seconds,
        id=result.eval_id,
    )
    for c in result.cases:
        case = ET.SubElement(
            suite,
            "testcase",
            name=c.name,
            classname=result.workflow_name or "workflow",
            time=f"{c.duration_ms / 1000:.3f}",
        )
        if not c.passed:
            message, body = _case_failure(c)
            failure = ET.SubElement(case, "failure", message=message, type=c.failures[0].type if c.failures else "")
            failure.text = body
        if c.run_id:
            out = ET.SubElement(case, "system-out")
            out.text = f"run {c.run_id}: {c.tokens} tokens, {format_cost(c.cost)}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def write_junit(path: str, result: EvalResult) -> None:
    atomic_write_text(path, junit_xml(result))
