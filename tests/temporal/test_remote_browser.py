"""A browser step on Temporal: an activity on a worker (which has Chromium), with the same
events as a local run, and bounded by the workflow's permissions on the worker too."""

from __future__ import annotations

import pytest

from engine import parse_workflow
from engine.browser import browser_problem
from tests.browser.site import Site

from .conftest import needs_temporal
from .test_remote_runs import _remote

pytestmark = [
    needs_temporal,
    pytest.mark.skipif(browser_problem() is not None, reason=str((browser_problem() or ("", ""))[1])),
]


def _flow(url: str, **extra) -> object:
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {
                    "id": "web",
                    "type": "browser",
                    "data": {
                        "steps": [
                            {"action": "goto", "value": url},
                            {"action": "extractTable"},
                            {"action": "screenshot"},
                        ]
                    },
                },
            ],
            "connections": [{"source": "s", "target": "web"}],
            **extra,
        }
    )


async def test_a_browser_step_runs_as_an_activity_on_the_worker(temporal_server, worker) -> None:
    with Site() as site:
        events, status = await _remote(temporal_server, _flow(site.url("/table")), [])
    assert status == "completed"
    kinds = [e.type for e in events if e.node_id == "web"]
    assert kinds.count("browser_action") == 3 and "browser_screenshot" in kinds
    output = next(e for e in events if e.node_id == "web" and e.type == "node_output")
    assert "Ada" in output.content


async def test_the_workflows_permissions_bound_the_browser_on_the_worker(temporal_server, worker) -> None:
    with Site() as site:
        wf = _flow(site.url("/table"), permissions={"network": ["example.org"]})
        events, status = await _remote(temporal_server, wf, [])
        assert site.requests == []
    assert status == "failed"
    assert any("permission_denied" in e.content for e in events if e.type == "error")
