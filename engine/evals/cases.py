"""Test cases of a workflow: where they are kept, how they are read and written.

docs/evals.md (and DESIGN "Evaluations"). A case is ``{name, input?, vars?, expect: [...]}``;
an expectation ``{node?, type, value?, rubric?, model?}`` with ``type`` one of
:data:`EXPECT_TYPES`. Cases live beside their workflow:

* a top-level ``tests`` list in ``NAME.flow.json`` (an unknown field to AgentFlow, kept on save);
* or ``NAME.tests.jsonl`` beside it, one case a line (blank lines and ``#`` lines skipped);
* or, for ``flowdesk eval --cases``, any ``.jsonl`` file, or a ``.csv`` dataset whose rows are
  inputs only (columns ``name`` and ``input``, every other column a variable) to which the
  expectations given with ``--expect`` or the workflow's ``testsExpect`` apply.

Every problem is a :class:`CaseError` whose message names the file, the line (or row, or
case) and what is wrong, so a bad dataset never ends in a traceback. Reading never changes
a file; writing is atomic (temp file + rename).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import FlowdeskError
from engine.files import atomic_write_text

__all__ = [
    "EXPECT_TYPES",
    "CaseError",
    "Expectation",
    "EvalCase",
    "parse_case",
    "parse_expectation",
    "parse_expect_option",
    "cases_file_for",
    "read_cases_file",
    "workflow_cases",
    "default_expectations",
    "cases_to_jsonl",
    "write_cases_file",
]

#: The expectation types, in the order docs list them.
EXPECT_TYPES = (
    "contains",
    "notContains",
    "equals",
    "regex",
    "jsonSchema",
    "maxLatencyMs",
    "maxTokens",
    "maxCost",
    "judge",
)
_NUMERIC = frozenset({"maxLatencyMs", "maxTokens", "maxCost"})
_TEXTUAL = frozenset({"contains", "notContains", "regex"})
#: The workflow's top-level field holding the expectations applied to rows of a CSV dataset.
DEFAULTS_FIELD = "testsExpect"


class CaseError(FlowdeskError, ValueError):
    """A case or a cases file that cannot be used; the message says where and why."""


@dataclass
class Expectation:
    """One check of a case's run: on the run's output, or on node ``node``'s."""

    type: str
    value: Any = None
    node: str | None = None
    rubric: str | None = None
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.node:
            out["node"] = self.node
        out["type"] = self.type
        if self.value is not None:
            out["value"] = self.value
        if self.rubric is not None:
            out["rubric"] = self.rubric
        if self.model:
            out["model"] = self.model
        return out

    def expected_text(self) -> str:
        """What the expectation asks, for a table or a failure's ``expected``."""
        if self.type == "judge":
            return self.rubric or str(self.value or "")
        if isinstance(self.value, str):
            return self.value
        return json.dumps(self.value, ensure_ascii=False)


@dataclass
class EvalCase:
    """One test case: the run's input and variables, and what its outputs must satisfy."""

    name: str
    input: str | None = None
    vars: dict[str, Any] = field(default_factory=dict)
    expect: list[Expectation] = field(default_factory=list)
    #: Fields of the case this version does not know, kept as they were on save.
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.input is not None:
            out["input"] = self.input
        if self.vars:
            out["vars"] = dict(self.vars)
        out["expect"] = [e.to_json() for e in self.expect]
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out


def parse_expectation(obj: Any, where: str) -> Expectation:
    """An expectation from its JSON form (CaseError naming ``where`` when it is not one)."""
    if not isinstance(obj, Mapping):
        raise CaseError(f'{where}: an expectation must be an object like {{"type": "contains", "value": "..."}}')
    kind = obj.get("type")
    if kind not in EXPECT_TYPES:
        got = "no type" if kind is None else f"type '{kind}'"
        raise CaseError(f"{where}: {got} is not an expectation type (one of: {', '.join(EXPECT_TYPES)})")
    node = obj.get("node")
    if node is not None and (not isinstance(node, str) or not node):
        raise CaseError(f"{where}: {kind}: 'node' must be a node id (text)")
    value = obj.get("value")
    rubric = obj.get("rubric")
    model = obj.get("model")
    if model is not None and not isinstance(model, str):
        raise CaseError(f"{where}: {kind}: 'model' must be a model name (text)")
    if kind == "judge":
        if rubric is None and isinstance(value, str):
            rubric = value  # {"type": "judge", "value": "..."} reads as the rubric
        if not isinstance(rubric, str) or not rubric.strip():
            raise CaseError(f"{where}: judge needs a 'rubric' (what the output must do to pass)")
    elif kind in _NUMERIC:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise CaseError(f"{where}: {kind} needs a number 'value' of at least 0 (got {json.dumps(value)})")
    elif kind == "jsonSchema":
        if not isinstance(value, Mapping):
            raise CaseError(f"{where}: jsonSchema needs a JSON schema object as its 'value'")
    elif kind in _TEXTUAL:
        if not isinstance(value, str) or value == "":
            raise CaseError(f"{where}: {kind} needs a non-empty text 'value'")
        if kind == "regex":
            try:
                re.compile(value)
            except re.error as err:
                raise CaseError(f"{where}: regex '{value}' is not a valid regular expression ({err})") from None
    elif kind == "equals" and "value" not in obj:
        raise CaseError(f"{where}: equals needs a 'value' (the exact output expected)")
    return Expectation(kind, value, node, rubric if kind == "judge" else rubric, model)


def parse_case(obj: Any, where: str, default_name: str = "") -> EvalCase:
    """A case from its JSON form (CaseError naming ``where`` when it is not one)."""
    if not isinstance(obj, Mapping):
        raise CaseError(f'{where}: a case must be an object like {{"name": "...", "expect": [...]}}')
    name = obj.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise CaseError(f"{where}: the case has no 'name'")
    name = name.strip()
    here = f"{where} (case '{name}')"
    text = obj.get("input")
    if text is not None and not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False)  # a structured input is passed on as its JSON
    variables = obj.get("vars")
    if variables is None:
        variables = {}
    if not isinstance(variables, Mapping):
        raise CaseError(f"{here}: 'vars' must be an object of variable names and values")
    expect = obj.get("expect")
    if expect is None:
        expect = []
    if isinstance(expect, Mapping):
        expect = [expect]
    if not isinstance(expect, list):
        raise CaseError(f"{here}: 'expect' must be a list of expectations")
    parsed = [parse_expectation(e, f"{here}, expectation {i + 1}") for i, e in enumerate(expect)]
    extra = {k: v for k, v in obj.items() if k not in ("name", "input", "vars", "expect")}
    return EvalCase(name, text, dict(variables), parsed, extra)


def parse_expect_option(text: str) -> Expectation:
    """``--expect``: ``TYPE:VALUE`` (``contains:hello``, ``maxTokens:500``, ``judge:RUBRIC``),
    ``NODE.TYPE:VALUE`` for a node's output, or an expectation's JSON object."""
    text = text.strip()
    if text.startswith("{"):
        try:
            given = json.loads(text)
        except ValueError as err:
            raise CaseError(f"--expect: not valid JSON ({err})") from None
        return parse_expectation(given, "--expect")
    head, sep, value = text.partition(":")
    node, dot, kind = head.rpartition(".")
    if not dot:
        node, kind = "", head
    obj: dict[str, Any] = {"type": kind.strip()}
    if node:
        obj["node"] = node.strip()
    if sep:
        if kind in _NUMERIC:
            try:
                obj["value"] = float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                raise CaseError(f"--expect {kind}: '{value}' is not a number") from None
        elif kind == "judge":
            obj["rubric"] = value
        elif kind == "jsonSchema":
            try:
                obj["value"] = json.loads(value)
            except ValueError:
                raise CaseError("--expect jsonSchema: the schema is not valid JSON") from None
        else:
            obj["value"] = value
    return parse_expectation(obj, "--expect")


def cases_file_for(flow_path: str | Path) -> Path:
    """``NAME.tests.jsonl`` beside ``NAME.flow.json`` (or beside any other workflow file)."""
    p = Path(flow_path)
    name = p.name
    for suffix in (".flow.json", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    else:
        name = p.stem
    return p.with_name(f"{name}.tests.jsonl")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CaseError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CaseError(f"{path}: is a folder, not a cases file") from None
    except UnicodeDecodeError:
        raise CaseError(f"{path}: is not UTF-8 text") from None
    except OSError as err:
        raise CaseError(f"{path}: cannot be read ({err.strerror or err})") from None


def _read_jsonl(path: Path) -> list[EvalCase]:
    cases = []
    for n, line in enumerate(_read_text(path).splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as err:
            raise CaseError(f"{path}, line {n}: not valid JSON ({err.msg})") from None
        cases.append(parse_case(obj, f"{path}, line {n}", default_name=f"line {n}"))
    return cases


def _read_csv(path: Path, expect: list[Expectation]) -> list[EvalCase]:
    text = _read_text(path)
    try:
        rows = list(csv.reader(text.splitlines()))
    except csv.Error as err:
        raise CaseError(f"{path}: not a readable CSV file ({err})") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise CaseError(f"{path}: the CSV file is empty (its first row is the header)")
    header = [h.strip() for h in rows[0]]
    if "" in header:
        raise CaseError(f"{path}: the header has an empty column name (column {header.index('') + 1})")
    cases = []
    for n, row in enumerate(rows[1:], 2):
        if len(row) > len(header):
            raise CaseError(f"{path}, row {n}: {len(row)} cells for {len(header)} columns")
        values = dict(zip(header, row))
        name = values.pop("name", "").strip() or f"row {n}"
        text_in = values.pop("input", None)
        cases.append(EvalCase(name, text_in, values, [Expectation(**vars(e)) for e in expect]))
    return cases


def read_cases_file(path: str | Path, expect: Iterable[Expectation] = ()) -> list[EvalCase]:
    """The cases of a ``.jsonl`` file, or the rows of a ``.csv`` dataset each given ``expect``."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        return _read_csv(p, list(expect))
    cases = _read_jsonl(p)
    extra = list(expect)
    if extra:  # --expect applies to every case, whatever its own
        for case in cases:
            case.expect.extend(Expectation(**vars(e)) for e in extra)
    return cases


def workflow_cases(workflow: Any, where: str = "the workflow") -> list[EvalCase]:
    """The cases of a workflow's ``tests`` list (none when it has no such list)."""
    tests = (getattr(workflow, "model_extra", None) or {}).get("tests")
    if tests is None:
        return []
    if not isinstance(tests, list):
        raise CaseError(f"{where}: 'tests' must be a list of cases")
    return [parse_case(c, f"{where}, tests[{i}]", default_name=f"case {i + 1}") for i, c in enumerate(tests)]


def default_expectations(workflow: Any, where: str = "the workflow") -> list[Expectation]:
    """The workflow's ``testsExpect``: expectations applied to the rows of a CSV dataset."""
    items = (getattr(workflow, "model_extra", None) or {}).get(DEFAULTS_FIELD)
    if items is None:
        return []
    if not isinstance(items, list):
        items = [items]
    return [parse_expectation(e, f"{where}, {DEFAULTS_FIELD}[{i}]") for i, e in enumerate(items)]


def cases_to_jsonl(cases: Iterable[EvalCase | Mapping[str, Any]]) -> str:
    """One case a line, as ``NAME.tests.jsonl`` keeps them."""
    lines = []
    for c in cases:
        obj = c.to_json() if isinstance(c, EvalCase) else dict(c)
        lines.append(json.dumps(obj, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def write_cases_file(path: str | Path, cases: Iterable[EvalCase | Mapping[str, Any]]) -> None:
    """Write ``cases`` to a ``.tests.jsonl`` file atomically (temp file + rename)."""
    atomic_write_text(path, cases_to_jsonl(cases))
