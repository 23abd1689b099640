"""Acceptance: `flowdesk serve`, approvals' options and timeouts, and `flowdesk inbox`, from
DESIGN.md's names only.

One `flowdesk serve` per module (a subprocess on 127.0.0.1, port 0, the echo provider) serves a
library written here; the tests talk to it over HTTP only.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.acceptance.support import FLOWDESK, Home, chain, cli, link, payload, start_node, var

pytest.importorskip("fastapi", reason="the `serve` extra is not installed (pip install -e '.[serve]')")
httpx = pytest.importorskip("httpx")


def code(node_id: str, source: str, inputs: dict[str, str]) -> dict[str, Any]:
    return {"id": node_id, "type": "code", "data": {"language": "python", "code": source, "inputs": inputs}}


def greet_flow() -> dict[str, Any]:
    return chain(
        "greet",
        [start_node([var("name", "nobody", "string")]), code("say", "'Hello ' + name", {"name": "{{name}}"})],
        description="Greets someone.",
    )


def review_flow() -> dict[str, Any]:
    flow = chain(
        "review",
        [
            start_node(initial="a draft"),
            {"id": "gate", "type": "approval", "data": {"prompt": "Ship the draft?"}},
            code("after", "'note was ' + n", {"n": "{{APPROVAL_NOTE}}"}),
        ],
    )
    flow["connections"] = [link("start", "gate"), link("gate", "after", "approve")]
    return flow


class Served:
    """A running `flowdesk serve`: its base URL and process."""

    def __init__(self, home: Home, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [FLOWDESK, "serve", "--port", "0", "--provider", "echo", *extra],
            env=home.env,
            cwd=home.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.base = ""
        self.lines: list[str] = []
        deadline = time.monotonic() + 60
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            found = re.search(r"serving on (http://\S+)", line)
            if found:
                self.base = found.group(1).rstrip("/")
                break
        assert self.base, "".join(self.lines)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("serve-acc"))
    home.add_library_flow("greet", greet_flow())
    home.add_library_flow("review", review_flow())
    home.add_library_flow("signed", {**greet_flow(), "webhook": {"secret": "ACC_HOOK_SECRET"}})
    home.env["ACC_HOOK_SECRET"] = "hook-secret-value"
    return home


@pytest.fixture(scope="module")
def api(world: Home) -> Iterator[httpx.Client]:
    served = Served(world)
    try:
        with httpx.Client(base_url=served.base, timeout=30) as client:
            yield client
    finally:
        served.stop()


def wait_for(client: httpx.Client, run_id: str, want: set[str], seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    doc: dict[str, Any] = {}
    while time.monotonic() < deadline:
        resp = client.get(f"/runs/{run_id}")
        if resp.status_code == 200:
            doc = resp.json()
            if doc.get("status") in want:
                return doc
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} never reached {want}: {doc}")


def start(client: httpx.Client, flow_id: str, body: dict[str, Any] | None = None) -> str:
    resp = client.post(f"/flows/{flow_id}/runs", json=body or {})
    assert resp.status_code == 200, resp.text
    run_id = resp.json()["runId"]
    assert isinstance(run_id, str) and run_id
    return run_id


# ----------------------------------------------------------------------------- the HTTP API
def test_get_flows_lists_the_library(api: httpx.Client) -> None:
    resp = api.get("/flows")
    assert resp.status_code == 200, resp.text
    flows = {f["id"]: f for f in resp.json()}
    assert {"greet", "review"} <= set(flows)
    assert "name" in json.dumps(flows["greet"])


def test_start_a_run_and_read_it(api: httpx.Client) -> None:
    run_id = start(api, "greet", {"vars": {"name": "Ann"}})
    doc = wait_for(api, run_id, {"completed", "failed"})
    for key in ("runId", "status", "output", "vars", "waitingForInput", "currentNodeId"):
        assert key in doc, (key, doc)
    assert doc["runId"] == run_id and doc["status"] == "completed"
    assert doc["output"] == "Hello Ann"
    assert doc["vars"].get("name") == "Ann"
    assert doc["waitingForInput"] in (False, None)


def sse_events(api: httpx.Client, run_id: str, seconds: float = 20) -> tuple[list[dict[str, Any]], bool]:
    """The events of the stream, and whether the server ended it by itself."""
    events: list[dict[str, Any]] = []
    ended = False
    with api.stream("GET", f"/runs/{run_id}/events", timeout=seconds) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        try:
            for line in resp.iter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:].strip()))
            ended = True
        except httpx.ReadTimeout:
            ended = False
    return events, ended


def test_sse_stream_ends_after_completion(api: httpx.Client) -> None:
    run_id = start(api, "greet", {"vars": {"name": "Cy"}})
    events, ended = sse_events(api, run_id)
    assert ended, "the stream stayed open after the run ended"
    assert events and all({"timestamp", "nodeId", "type"} <= set(e) for e in events)
    assert "Hello Cy" in json.dumps(events)


def test_a_paused_run_answered_over_http_note_reaches_next_step(api: httpx.Client) -> None:
    run_id = start(api, "review")
    doc = wait_for(api, run_id, {"paused", "waiting"})
    assert doc["waitingForInput"], doc
    assert doc["currentNodeId"] == "gate"
    resp = api.post(f"/runs/{run_id}/decision", json={"decision": "approve", "note": "ship it"})
    assert resp.status_code == 200, resp.text
    done = wait_for(api, run_id, {"completed", "failed"})
    assert done["status"] == "completed"
    assert done["output"] == "note was ship it"


def test_cancel_a_paused_run(api: httpx.Client) -> None:
    run_id = start(api, "review")
    wait_for(api, run_id, {"paused", "waiting"})
    resp = api.post(f"/runs/{run_id}/cancel")
    assert resp.status_code == 200, resp.text
    assert wait_for(api, run_id, {"cancelled"})["status"] == "cancelled"
    again = api.post(f"/runs/{run_id}/decision", json={"decision": "approve"})
    assert again.status_code == 409, again.text


def test_webhook_body_keys_become_variables(api: httpx.Client) -> None:
    resp = api.post("/hooks/greet", json={"name": "Bo"})
    assert resp.status_code == 200, resp.text
    doc = wait_for(api, resp.json()["runId"], {"completed", "failed"})
    assert doc["output"] == "Hello Bo"


def test_openapi_document(api: httpx.Client) -> None:
    resp = api.get("/openapi.json")
    assert resp.status_code == 200
    paths = resp.json()["paths"]
    for path in ("/flows", "/flows/{id}/runs", "/runs/{id}", "/runs/{id}/events", "/hooks/{flowId}"):
        assert any(re.sub(r"\{[^}]+\}", "{}", p) == re.sub(r"\{[^}]+\}", "{}", path) for p in paths), (path, paths)


def test_unknown_run_is_404(api: httpx.Client) -> None:
    resp = api.get("/runs/no-such-run")
    assert resp.status_code == 404
    assert "detail" in resp.json()


def test_token_required_when_set(world: Home) -> None:
    served = Served(world, "--token", "s3cret-token")
    try:
        assert httpx.get(served.base + "/flows", timeout=10).status_code == 401
        wrong = httpx.get(served.base + "/flows", headers={"Authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401
        ok = httpx.get(served.base + "/flows", headers={"Authorization": "Bearer s3cret-token"}, timeout=10)
        assert ok.status_code == 200
        assert "s3cret-token" not in "".join(served.lines)
    finally:
        served.stop()


def test_refuses_to_bind_everywhere_without_a_token(world: Home) -> None:
    res = cli("serve", "--host", "0.0.0.0", "--port", "0", env=world.env, cwd=world.root, timeout=30)
    assert res.rc == 2, res.combined
    assert "token" in res.combined.lower()


# ----------------------------------------------------------------------------- approvals and the inbox
def test_approval_options_picked_with_decide_label(world: Home) -> None:
    flow = chain(
        "options",
        [
            start_node(initial="x"),
            {"id": "gate", "type": "approval", "data": {"prompt": "Now?", "options": ["Later"]}},
            code("later", "'chose ' + d", {"d": "{{APPROVAL_DECISION}}"}),
            code("now", "'approved'", {}),
        ],
    )
    flow["connections"] = [link("start", "gate"), link("gate", "later", "Later"), link("gate", "now", "approve")]
    res, doc = world.run_json(world.write("options.flow.json", flow), "--decide", "Later")
    assert res.rc == 0, res.combined
    assert doc["output"] == "chose Later"


def test_approval_timeout_takes_on_timeout(world: Home) -> None:
    flow = chain(
        "timeout",
        [
            start_node(initial="x"),
            {"id": "gate", "type": "approval", "data": {"prompt": "Quick?", "timeoutMs": 1500, "onTimeout": "approve"}},
            code("after", "'went ' + d", {"d": "{{APPROVAL_DECISION}}"}),
        ],
    )
    flow["connections"] = [link("start", "gate"), link("gate", "after", "approve")]
    began = time.monotonic()
    res = world.run(world.write("timeout.flow.json", flow), timeout=60)
    assert res.rc == 0, res.combined
    assert time.monotonic() - began >= 1.4
    received = [payload(e) for e in res.of_type("input_received")]
    assert received and received[0].get("timedOut") is True and received[0].get("decision") == "approve"
    assert "went approve" in res.stdout


def test_inbox_json_lists_a_waiting_run(world: Home) -> None:
    res = world.run(world.write("inbox.flow.json", review_flow()))
    assert res.rc == 3, res.combined
    found = re.search(r"resume\s+([0-9A-Za-z_-]{6,})", res.combined)
    assert found, res.combined
    run_id = found.group(1)
    inbox = cli("inbox", "--json", env=world.env, cwd=world.root, timeout=60)
    assert inbox.rc == 0, inbox.combined
    rows = json.loads(inbox.stdout)
    assert isinstance(rows, list)
    mine = [r for r in rows if r.get("runId") == run_id]
    assert len(mine) == 1, rows
    row = mine[0]
    for key in ("runId", "flow", "nodeId", "prompt", "waitingSince", "ageS", "where"):
        assert key in row, (key, row)
    assert row["nodeId"] == "gate" and row["prompt"] == "Ship the draft?" and row["where"] == "local"
    assert isinstance(row["ageS"], (int, float)) and row["ageS"] >= 0


def test_sse_stays_open_while_paused_and_resumes_from_last_event_id(api: httpx.Client) -> None:
    run_id = start(api, "review")
    wait_for(api, run_id, {"paused", "waiting"})
    seen: list[dict[str, Any]] = []
    ids: list[str] = []
    outcome: dict[str, bool] = {}

    def follow() -> None:
        with api.stream("GET", f"/runs/{run_id}/events", timeout=30) as resp:
            for line in resp.iter_lines():
                if line.startswith("id:"):
                    ids.append(line[3:].strip())
                elif line.startswith("data:"):
                    seen.append(json.loads(line[5:].strip()))
        outcome["ended"] = True

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    time.sleep(1.5)
    assert reader.is_alive(), "the stream of a paused run ended"
    assert any(e["type"] == "wait_input" for e in seen), seen
    resp = api.post(f"/runs/{run_id}/decision", json={"decision": "approve", "note": "later on"})
    assert resp.status_code == 200, resp.text
    reader.join(30)
    assert outcome.get("ended"), "the stream did not end after the run completed"
    assert any(e["type"] == "input_received" for e in seen)
    assert ids and len(ids) == len(seen)
    # Reconnecting after event N gives exactly the events after it.
    cut = len(seen) // 2
    with api.stream("GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": ids[cut]}, timeout=20) as again:
        rest = [json.loads(line[5:].strip()) for line in again.iter_lines() if line.startswith("data:")]
    assert rest == seen[cut + 1 :]


def test_start_unknown_flow_is_404_and_bad_body_is_refused(api: httpx.Client) -> None:
    resp = api.post("/flows/no-such-flow/runs", json={})
    assert resp.status_code == 404 and "no-such-flow" in resp.json()["detail"]
    bad = api.post("/flows/greet/runs", content=b"{not json", headers={"content-type": "application/json"})
    assert bad.status_code == 422, bad.text
    # Every refusal is {"detail": "a sentence"} (docs/serving.md), a malformed body included.
    assert isinstance(bad.json()["detail"], str), bad.text
    wrong = api.post("/flows/greet/runs", json={"vars": "x"})
    assert wrong.status_code == 422 and "'vars'" in wrong.json()["detail"], wrong.text


def test_a_wrong_decision_is_refused_and_the_run_stays_paused(api: httpx.Client) -> None:
    run_id = start(api, "review")
    wait_for(api, run_id, {"paused", "waiting"})
    bad = api.post(f"/runs/{run_id}/decision", json={"decision": "maybe"})
    assert bad.status_code in (409, 422), bad.text
    assert "maybe" in bad.json()["detail"]
    assert api.get(f"/runs/{run_id}").json()["waitingForInput"]
    edited = api.post(f"/runs/{run_id}/decision", json={"decision": "approve", "note": "n1", "output": "edited draft"})
    assert edited.status_code == 200, edited.text
    assert wait_for(api, run_id, {"completed", "failed"})["output"] == "note was n1"
    late = api.post(f"/runs/{run_id}/decision", json={"decision": "approve"})
    assert late.status_code == 409, late.text


def test_approval_option_chosen_over_http(api: httpx.Client, world: Home) -> None:
    flow = chain(
        "later-api",
        [
            start_node(initial="x"),
            {"id": "gate", "type": "approval", "data": {"prompt": "Now?", "options": ["Later"]}},
            code("later", "'chose ' + d", {"d": "{{APPROVAL_DECISION}}"}),
        ],
    )
    flow["connections"] = [link("start", "gate"), link("gate", "later", "Later")]
    world.add_library_flow("later-api", flow)
    run_id = start(api, "later-api")
    wait_for(api, run_id, {"paused", "waiting"})
    resp = api.post(f"/runs/{run_id}/decision", json={"decision": "Later"})
    assert resp.status_code == 200, resp.text
    assert wait_for(api, run_id, {"completed", "failed"})["output"] == "chose Later"


def test_a_timeout_left_by_a_killed_process_is_taken_by_serve(api: httpx.Client, world: Home) -> None:
    flow = chain(
        "orphan",
        [
            start_node(initial="x"),
            {"id": "gate", "type": "approval", "data": {"prompt": "Soon?", "timeoutMs": 2500, "onTimeout": "approve"}},
            code("after", "'went ' + d", {"d": "{{APPROVAL_DECISION}}"}),
        ],
    )
    flow["connections"] = [link("start", "gate"), link("gate", "after", "approve")]
    path = world.write("orphan.flow.json", flow)
    proc = subprocess.Popen(
        [FLOWDESK, "run", str(path), "--provider", "echo", "--jsonl"],
        env=world.env,
        cwd=world.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if '"run_status"' in line and '"paused"' in line:
                break  # the run says it is paused: from here the pause must survive the process
        proc.kill()  # kill -9 while it waits for the deadline
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    runs = api.get("/runs", params={"flow": "orphan", "limit": 1}).json()
    assert runs, "the paused run is not in the history"
    run_id = runs[0].get("runId") or runs[0].get("id")
    doc = wait_for(api, run_id, {"completed", "failed"}, seconds=30)
    assert doc["output"] == "went approve", doc


SLOW_SERVER = """
import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("acc-slow")


@server.tool(structured_output=False)
def linger(pid_file: str) -> str:
    # Notes its process id, then takes a long time.
    with open(pid_file, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)
    return "done"


if __name__ == "__main__":
    server.run()
"""


def test_cancel_a_running_mcp_call_closes_its_server(api: httpx.Client, world: Home) -> None:
    pytest.importorskip("mcp", reason="the `mcp` extra is not installed (pip install -e '.[mcp]')")
    import os
    import sys

    script = world.root / "slow_server.py"
    script.write_text(SLOW_SERVER, encoding="utf-8")
    pid_file = world.root / "slow.pid"
    flow = chain(
        "linger",
        [
            start_node(),
            {
                "id": "wait",
                "type": "mcp",
                "data": {"server": "slow", "tool": "linger", "arguments": {"pid_file": str(pid_file)}},
            },
        ],
        mcpServers={"slow": {"command": sys.executable, "args": [str(script)], "env": {}}},
    )
    world.add_library_flow("linger", flow)
    run_id = start(api, "linger")
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pid_file.exists(), api.get(f"/runs/{run_id}").json()
    pid = int(pid_file.read_text())
    resp = api.post(f"/runs/{run_id}/cancel")
    assert resp.status_code == 200, resp.text
    assert wait_for(api, run_id, {"cancelled"}, seconds=15)["status"] == "cancelled"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.kill(pid, 9)
        raise AssertionError("the MCP server of a cancelled run is still running")


def test_a_signed_webhook_needs_a_valid_signature(api: httpx.Client) -> None:
    import hashlib
    import hmac

    body = json.dumps({"name": "Sig"}).encode()
    good = "sha256=" + hmac.new(b"hook-secret-value", body, hashlib.sha256).hexdigest()
    headers = {"content-type": "application/json"}
    assert api.post("/hooks/signed", content=body, headers=headers).status_code == 401
    wrong = {**headers, "X-Flowdesk-Signature": "sha256=" + "0" * 64}
    assert api.post("/hooks/signed", content=body, headers=wrong).status_code == 401
    ok = api.post("/hooks/signed", content=body, headers={**headers, "X-Flowdesk-Signature": good})
    assert ok.status_code == 200, ok.text
    assert wait_for(api, ok.json()["runId"], {"completed", "failed"})["output"] == "Hello Sig"
