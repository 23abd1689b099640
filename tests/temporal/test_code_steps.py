"""A ``code`` step on Temporal is an activity like any working step: it runs on the worker
(which needs the ``code`` extra) with the same events as locally, and the workflow's
``permissions`` travel with it."""

from __future__ import annotations

import pytest

from engine import parse_workflow
from engine.code.deno import deno_available
from engine.code.monty import monty_available
from tests.fakes.web_server import WebServer, text_answer

from .conftest import needs_temporal
from .test_remote_runs import _comparable, _local, _remote

pytestmark = [
    needs_temporal,
    pytest.mark.skipif(
        not (monty_available() and deno_available()), reason="the `code` extra is not installed: no monty or Deno"
    ),
]


def _code_flow(permissions=None):
    doc = {
        "name": "Code",
        "nodes": [
            {
                "id": "s",
                "type": "start",
                "data": {"initialInput": "go", "variables": [{"name": "base", "type": "string", "value": ""}]},
            },
            {
                "id": "py",
                "type": "code",
                "data": {"code": "print('n is', n)\nn * 2", "inputs": {"n": 21}, "outputVar": "doubled"},
            },
            {
                "id": "js",
                "type": "code",
                "data": {
                    "language": "typescript",
                    "code": "console.log('got', doubled);\nreturn { twice: doubled + 0, host: inputs.host };",
                    "inputs": {"doubled": "{{doubled}}", "host": "example.org"},
                },
            },
            {
                "id": "net",
                "type": "code",
                "data": {
                    "language": "javascript",
                    "code": "const r = await fetch(`${base}/hi`);\nreturn await r.text();",
                    "inputs": {"base": "{{base}}"},
                },
            },
            {
                "id": "bad",
                "type": "code",
                "data": {"language": "javascript", "code": "await fetch('http://example.org/');"},
            },
        ],
        "connections": [
            {"source": "s", "target": "py", "sourceHandle": "output"},
            {"source": "py", "target": "js", "sourceHandle": "output"},
            {"source": "js", "target": "net", "sourceHandle": "output"},
            {"source": "net", "target": "bad", "sourceHandle": "output"},
        ],
    }
    if permissions is not None:
        doc["permissions"] = permissions
    return parse_workflow(doc)


async def test_code_steps_run_on_a_worker_with_the_same_events(temporal_server, worker):
    with WebServer() as web:
        web.route("/hi", text_answer("hello"))
        host = web.url("/").split("://")[1].rstrip("/")
        wf = _code_flow({"network": [host]})
        variables = {"base": web.url("")}
        local, local_status = await _local(wf, [], variables=variables)
        remote, remote_status = await _remote(temporal_server, wf, [], variables=variables, replay=True)
    assert str(local_status) == remote_status == "failed"  # the last step reaches an unlisted host
    assert _comparable(remote) == _comparable(local)
    texts = [e.content for e in remote if e.type == "code_log"]
    assert texts == ["n is 21", "got 42"]
    assert ("net", "node_output") in [(e.node_id, e.type) for e in remote]  # the permitted host answered
    denied = [e for e in remote if e.type == "error" and e.node_id == "bad"]
    assert denied and "permission_denied: network access to 'example.org'" in denied[0].content
    assert await _step_activities(temporal_server, "Code") == 4  # each code step: one activity


async def _step_activities(address, name):
    """How many step activities the server scheduled for the run of the workflow ``name``."""
    from temporalio.api.enums.v1 import EventType

    from engine.temporal.activities import STEP_ACTIVITY
    from engine.temporal.client import connect, list_runs

    client = await connect(address)
    run_id = next(r["id"] for r in await list_runs(client, limit=50) if r["workflowName"] == name)
    history = await client.get_workflow_handle(run_id).fetch_history()
    scheduled = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
    return sum(e.activity_task_scheduled_event_attributes.activity_type.name == STEP_ACTIVITY for e in scheduled)


async def test_code_steps_call_the_workers_library_flows(temporal_server, tmp_path, monkeypatch):
    """``call_flow`` in Python and ``api.callAction`` in a TaskFlow-style script run the worker's
    library flow nested in the step's activity, with the local events and their run paths."""
    from engine import EchoProvider, Run
    from engine.flows.library import set_default_library
    from tests.engine.flows import agent, link

    from .conftest import WorkerProcess
    from .test_remote_runs import _write

    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))
    set_default_library(None)
    (tmp_path / "data" / "library").mkdir(parents=True)
    start = {"initialInput": "", "variables": [{"name": "text", "value": "", "type": "string"}]}
    _write(
        tmp_path / "data" / "library" / "summarize.flow.json",
        [{"id": "s", "type": "start", "data": start}, agent("sum", "summarize: {{text}}")],
        [link("s", "sum")],
        "Summarize",
    )
    wf = parse_workflow(
        {
            "name": "Code calls flows",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "go"}},
                {
                    "id": "py",
                    "type": "code",
                    "data": {"code": "await call_flow('summarize', text='abc')", "outputVar": "a"},
                },
                {
                    "id": "js",
                    "type": "code",
                    "data": {
                        "language": "javascript",
                        "code": "const r = await api.callAction('docs', 'Summarize', { text: a });\nreturn r.text;",
                        "inputs": {"a": "{{a}}"},
                    },
                },
            ],
            "connections": [{"source": "s", "target": "py"}, {"source": "py", "target": "js"}],
        }
    )
    local = Run(wf, EchoProvider())
    assert await local.start() == "completed", local.error
    w = WorkerProcess(temporal_server, "codeflows")
    try:
        remote, status = await _remote(temporal_server, wf, [], task_queue="codeflows")
    finally:
        w.stop()
    assert status == "completed", [e.content for e in remote if e.type == "error"]
    shape = [(n, t, c, x, "nested" if p else "") for n, t, c, x, p in _comparable(remote)]
    assert shape == [(n, t, c, x, "nested" if p else "") for n, t, c, x, p in _comparable(local.events)]
    answers = [(e.content, bool(e.path)) for e in remote if e.type == "llm_response"]
    assert answers == [("summarize: abc", True), ("summarize: summarize: abc", True)]
