"""Without the ``code`` extra: a clear message naming it and the install command, at validation
(a warning) and when the step runs (the step fails). Runs whether or not the extra is here."""

from __future__ import annotations

import builtins

import pytest

import engine.code.deno as deno_host
import engine.nodes.code as code_kind
from engine import validate
from tests.code.conftest import code_node, run, workflow


@pytest.fixture
def no_extra(monkeypatch):
    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name.split(".")[0] in ("pydantic_monty", "deno"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    monkeypatch.setattr(deno_host, "deno_binary", lambda: None)
    monkeypatch.setattr(code_kind, "deno_available", lambda: False)


@pytest.mark.parametrize("language", ["python", "typescript"])
def test_missing_extra_is_named_in_validation_and_when_run(no_extra, language: str) -> None:
    wf = workflow(code_node("1" if language == "python" else "return 1", language))
    warnings = [i for i in validate(wf) if i.code == "code_extra_missing"]
    assert warnings and not warnings[0].is_error and "pip install 'flowdesk[code]'" in warnings[0].message
    r = run(wf)
    assert r.status == "failed" and "`code` extra" in r.error and "pip install 'flowdesk[code]'" in r.error
