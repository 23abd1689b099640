"""`flowdesk do` shows what a flow may reach (its ``permissions``) before it runs it, in the
words :func:`engine.flows.dispatch.permission_summary` gives (the command bar uses them too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import Workflow
from engine.flows.dispatch import permission_summary
from tests.fakes.openai_server import FakeLLMServer, openai_plain

from .test_do import do


def _wf(nodes: list[tuple[str, str]], permissions: dict | None = None) -> Workflow:
    doc: dict = {"nodes": [{"id": nid, "type": kind} for nid, kind in nodes], "connections": []}
    if permissions is not None:
        doc["permissions"] = permissions
    return Workflow.model_validate(doc)


def test_summary_from_permissions_lists_hosts_and_folders() -> None:
    wf = _wf([("s", "start"), ("c", "code")], {"network": ["api.example.com"], "files": ["~/data"]})
    assert permission_summary(wf) == "network api.example.com; files ~/data"
    wf = _wf([("s", "start")], {"network": ["*"], "flows": ["summarise"], "tools": ["fs/read"]})
    assert permission_summary(wf) == "any network host; no files; flows summarise; tools fs/read"


def test_summary_of_nothing_granted_and_of_code_only_flows() -> None:
    assert permission_summary(_wf([("s", "start"), ("c", "code")], {})) == "no network, no files"
    # no permissions: code and scripts reach nothing, so a code-only flow reaches nothing
    assert permission_summary(_wf([("s", "start"), ("c", "code"), ("a", "agent")])) == "no network, no files"


def test_summary_without_permissions_names_the_unbounded_steps() -> None:
    text = permission_summary(_wf([("s", "start"), ("h", "http"), ("f", "flow")]))
    assert text == "any network host, any flow its steps name (the flow sets no permissions)"


def _code_flow(folder: Path, permissions: dict | None) -> None:
    doc = {
        "id": "tally",
        "name": "Tally",
        "description": "Counts things",
        "triggers": ["tally $(what:wildcard)"],
        "nodes": [
            {"id": "start", "type": "start", "data": {"variables": [{"name": "what", "type": "string"}]}},
            {"id": "c", "type": "code", "data": {"language": "python", "code": "1 + 1"}},
        ],
        "connections": [{"source": "start", "target": "c", "sourceHandle": "output", "targetHandle": "input"}],
    }
    if permissions is not None:
        doc["permissions"] = permissions
    (folder / "tally.flow.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "permissions, line",
    [
        (None, "This flow may reach: no network, no files"),
        (
            {"network": ["api.example.com"], "files": ["~/data"]},
            "This flow may reach: network api.example.com; files ~/data",
        ),
    ],
)
def test_do_dry_run_prints_what_the_flow_may_reach(tmp_path, permissions, line) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    _code_flow(lib, permissions)
    r = do(lib, tmp_path, "tally the apples", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert line in r.stdout.splitlines()
    r = do(lib, tmp_path, "tally the apples", "--dry-run", "--json")
    shown = json.loads(r.stdout)
    assert shown["mayReach"] == line.removeprefix("This flow may reach: ")
    assert shown["permissions"] == permissions


def test_model_picked_flow_shows_its_permissions_before_asking(tmp_path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    _code_flow(lib, {"network": ["api.example.com"]})
    with FakeLLMServer() as server:
        server.push(openai_plain(json.dumps({"flow": "tally", "arguments": {"what": "pears"}})))
        r = do(lib, tmp_path, "count my pears please", "--base-url", server.base_url, "--model", "fake-model")
    assert r.returncode != 0  # not confirmed (no terminal): nothing ran
    assert "chosen by the model" in r.stdout
    assert "This flow may reach: network api.example.com; no files" in r.stdout
    assert "not confirmed" in r.stderr
