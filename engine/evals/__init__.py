"""Evaluations: a workflow's test cases run, graded and compared (docs/evals.md).

* :mod:`~engine.evals.cases`: cases and expectations, read from a workflow's ``tests`` list,
  a ``NAME.tests.jsonl`` file or a CSV dataset, and written back.
* :mod:`~engine.evals.expect`: grading one run against an expectation; the ``judge`` model.
* :mod:`~engine.evals.runner`: :func:`run_eval`, every case as a stored run reusing the last
  eval's recorded outputs where a node's key did not change.
* :mod:`~engine.evals.history`: the evals kept in the run store (pass rates over time).
* :mod:`~engine.evals.report`: the table, the JSON document and JUnit XML.
"""

from engine.evals.cases import (
    EXPECT_TYPES,
    CaseError,
    EvalCase,
    Expectation,
    cases_file_for,
    cases_to_jsonl,
    default_expectations,
    parse_case,
    parse_expect_option,
    read_cases_file,
    workflow_cases,
    write_cases_file,
)
from engine.evals.expect import Failure, Observed, check, parse_verdict
from engine.evals.history import EvalHistory, EvalRecord
from engine.evals.runner import CaseResult, EvalResult, compare_to_baseline, run_eval

__all__ = [
    "EXPECT_TYPES",
    "CaseError",
    "EvalCase",
    "Expectation",
    "cases_file_for",
    "cases_to_jsonl",
    "default_expectations",
    "parse_case",
    "parse_expect_option",
    "read_cases_file",
    "workflow_cases",
    "write_cases_file",
    "Failure",
    "Observed",
    "check",
    "parse_verdict",
    "EvalHistory",
    "EvalRecord",
    "CaseResult",
    "EvalResult",
    "compare_to_baseline",
    "run_eval",
]
