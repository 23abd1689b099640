"""``flowdesk serve`` as a user runs it: a subprocess on 127.0.0.1, driven over real HTTP.

Every route, Server-Sent Events resumed with ``Last-Event-ID``, a paused run answered over HTTP
(its note reaching the next step), runs paused by another process answered here and the other
way round, webhooks with and without a valid signature, the token, the refusal to listen on
0.0.0.0 without one, the body limit, the OpenAPI document.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.graph.model import load_workflow
from engine.serving.auth import signature_of
from engine.store import RunStore
from tests.serving.conftest import HOOK_SECRET, ROOT, Served, env_for, served

pytest.importorskip("fastapi", reason="flowdesk serve needs the 'serve' extra (FastAPI): pip install -e '.[serve]'")
pytest.importorskip("uvicorn", reason="flowdesk serve needs the 'serve' extra (uvicorn): pip install -e '.[serve]'")
httpx = pytest.importorskip("httpx")

TOKEN = "t0ken-for-tests"


@pytest.fixture(scope="module")
def api(served_dirs: tuple[Path, Path]) -> Iterator[Served]:
    library, data = served_dirs
    args = ["serve", "--port", "0", "--library", str(library), "--provider", "echo"]
    with served(args, data, FLOWDESK_TEST_HOOK_SECRET=HOOK_SECRET) as server:
        yield server


@pytest.fixture(scope="module")
def guarded(served_dirs: tuple[Path, Path]) -> Iterator[Served]:
    """The same library and history served with a token, and a small body limit."""
    library, data = served_dirs
    args = ["serve", "--port", "0", "--library", str(library), "--provider", "echo", "--token", TOKEN]
    args += ["--max-body-bytes", "4096", "--cors-origin", "http://app.example"]
    with served(args, data, FLOWDESK_TEST_HOOK_SECRET=HOOK_SECRET) as server:
        yield server


def client(server: Served, token: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def wait_for(c: httpx.Client, run_id: str, *statuses: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = c.get(f"/runs/{run_id}")
        assert r.status_code == 200, r.text
        body = r.json()
        if body["status"] in statuses:
            return body
        assert time.monotonic() < deadline, f"run {run_id} is still {body['status']}"
        time.sleep(0.05)


def sse(c: httpx.Client, run_id: str, last: int | None = None, limit: int | None = None) -> list[tuple[int, dict]]:
    """The events of a run's stream, until it ends (or ``limit`` events)."""
    headers = {"Last-Event-ID": str(last)} if last is not None else {}
    out: list[tuple[int, dict]] = []
    with c.stream("GET", f"/runs/{run_id}/events", headers=headers) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        seq, data = None, None
        for line in r.iter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "" and data is not None:
                out.append((seq, data))
                seq, data = None, None
                if limit is not None and len(out) >= limit:
                    break
    return out


# ---------------------------------------------------------------------- flows, runs
def test_flows_lists_the_library_with_parameters(api: Served) -> None:
    with client(api) as c:
        r = c.get("/flows")
    assert r.status_code == 200
    flows = {f["id"]: f for f in r.json()}
    assert set(flows) == {"greet", "review", "signed"}
    assert [p["name"] for p in flows["greet"]["parameters"]] == ["who", "times"]
    assert flows["greet"]["parameters"][0]["required"] is True
    assert flows["review"]["canPause"] is True and flows["signed"]["signedWebhook"] is True


def test_a_run_started_over_http_completes_with_its_output_and_vars(
    api: Served, served_dirs: tuple[Path, Path]
) -> None:
    with client(api) as c:
        r = c.post("/flows/greet/runs", json={"vars": {"who": "Ann", "times": "3"}})
        assert r.status_code == 200, r.text
        run_id = r.json()["runId"]
        listed_now = c.get("/runs").json()
        assert run_id in [row["id"] for row in listed_now]  # listed at once
        assert all(row["runId"] == row["id"] for row in listed_now)  # named as every endpoint names a run
        body = wait_for(c, run_id, "completed")
        assert body == {
            "runId": run_id,
            "status": "completed",
            "output": "Hello Ann x3",
            "vars": {"who": "Ann", "times": 3},
            "waitingForInput": False,
            "currentNodeId": None,
            "flow": "Greet",
            "error": None,
            "prompt": None,
            "options": [],
        }
        listed = c.get("/runs", params={"limit": 200}).json()
    assert run_id in [row["id"] for row in listed]
    row = next(row for row in listed if row["id"] == run_id)
    assert row["eventCount"] == len(RunStore(served_dirs[1] / "runs.db").events(run_id)) > 0  # counted, not 0


def test_bad_input_is_refused_naming_what_is_wrong(api: Served) -> None:
    with client(api) as c:
        missing = c.post("/flows/greet/runs", json={"vars": {"times": 2}})
        assert missing.status_code == 422 and "'who' is required" in missing.json()["detail"]
        assert "as a key of 'vars'" in missing.json()["detail"] and "--var" not in missing.json()["detail"]
        not_a_number = c.post("/flows/greet/runs", json={"vars": {"who": "A", "times": "many"}})
        assert not_a_number.status_code == 422 and "'times'" in not_a_number.json()["detail"]
        assert c.post("/flows/nope/runs", json={}).status_code == 404
        assert c.get("/runs/no-such-run").status_code == 404
        assert c.get("/runs/no-such-run/events").status_code == 404
        assert c.post("/flows/greet/runs", json={"bogus": 1}).status_code == 422
        assert c.post("/runs/no-such-run/decision", json={"decision": "approve"}).status_code == 404
        empty = c.post("/runs/no-such-run/decision", json={"decision": " "})
        assert empty.status_code == 422 and "approve" in empty.json()["detail"]


def test_the_openapi_document_names_every_route(api: Served) -> None:
    with client(api) as c:
        doc = c.get("/openapi.json").json()
        page = c.get("/docs")
    assert page.status_code == 200 and "swagger" in page.text.lower()
    paths = doc["paths"]
    assert {
        "/flows",
        "/flows/{id}/runs",
        "/runs",
        "/runs/{id}",
        "/runs/{id}/events",
        "/runs/{id}/decision",
        "/runs/{id}/cancel",
        "/hooks/{flowId}",
    } <= set(paths)
    run_schema = doc["components"]["schemas"]["RunOut"]["properties"]
    assert {"runId", "status", "output", "vars", "waitingForInput", "currentNodeId"} <= set(run_schema)


# ---------------------------------------------------------------------- events
def test_events_stream_in_wire_form_end_with_the_run_and_resume_by_last_event_id(
    api: Served, served_dirs: tuple[Path, Path]
) -> None:
    with client(api) as c:
        run_id = c.post("/flows/greet/runs", json={"vars": {"who": "Sse"}}).json()["runId"]
        events = sse(c, run_id)  # returns: the stream ended with the run
        assert [seq for seq, _ in events] == list(range(len(events)))
        assert events[-1][1]["type"] == "run_status" and events[-1][1]["content"] == "completed"
        assert all(set(ev) >= {"timestamp", "nodeId", "type", "content"} for _, ev in events)
        shown = subprocess.run(
            [sys.executable, "-m", "engine.cli", "show", run_id, "--jsonl"],
            cwd=ROOT,
            env=env_for(served_dirs[1]),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert [json.loads(line) for line in shown.stdout.splitlines()] == [ev for _, ev in events]
        again = sse(c, run_id, last=3)
    assert again == events[4:]


def test_a_paused_run_keeps_its_stream_open_and_is_answered_over_http(api: Served) -> None:
    with client(api) as c:
        run_id = c.post("/flows/review/runs", json={"vars": {"topic": "kites"}}).json()["runId"]
        paused = wait_for(c, run_id, "paused")
        assert paused["waitingForInput"] is True and paused["currentNodeId"] == "ok"
        assert paused["prompt"] == "Send the draft?"
        # The stream stays open while paused: read what is there, then the connection is still live.
        with c.stream("GET", f"/runs/{run_id}/events") as r:
            seen: list[dict] = []
            lines = r.iter_lines()
            for line in lines:
                if line.startswith("data: "):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["type"] == "run_status" and seen[-1]["content"] == "paused":
                        break
            assert any(ev["type"] == "wait_input" for ev in seen)
            answer = c.post(f"/runs/{run_id}/decision", json={"decision": "approve", "note": "ship it"})
            assert answer.status_code == 200, answer.text
            rest = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]  # until the stream ends
        assert rest[-1]["content"] == "completed"
        assert any(ev["type"] == "input_received" for ev in rest)
        done = wait_for(c, run_id, "completed")
        assert seen + rest == [ev for _, ev in sse(c, run_id)]
    assert done["output"] == "Sent with note [ship it]: Draft about kites"


def test_a_client_that_drops_while_paused_resumes_by_last_event_id(api: Served) -> None:
    with client(api) as c:
        run_id = c.post("/flows/review/runs", json={}).json()["runId"]
        wait_for(c, run_id, "paused")
        before = sse(c, run_id, limit=3)  # then the client drops the connection
        last = before[-1][0]
        assert c.post(f"/runs/{run_id}/decision", json={"decision": "approve"}).status_code == 200
        after = sse(c, run_id, last=last)  # reconnected: from the next event to the end of the run
        whole = sse(c, run_id)
    assert before + after == whole and after[0][0] == last + 1
    assert whole[-1][1]["content"] == "completed"


def test_a_rejection_with_a_note_follows_the_reject_branch(api: Served) -> None:
    with client(api) as c:
        run_id = c.post("/flows/review/runs", json={}).json()["runId"]
        wait_for(c, run_id, "paused")
        assert c.post(f"/runs/{run_id}/decision", json={"decision": "reject", "note": "too long"}).status_code == 200
        done = wait_for(c, run_id, "completed")
        assert done["output"] == "Rejected with note [too long]"
        again = c.post(f"/runs/{run_id}/decision", json={"decision": "approve"})
    assert again.status_code == 409 and "not waiting" in again.json()["detail"]


def test_cancel_a_paused_run(api: Served) -> None:
    with client(api) as c:
        run_id = c.post("/flows/review/runs", json={}).json()["runId"]
        wait_for(c, run_id, "paused")
        assert c.post(f"/runs/{run_id}/cancel").status_code == 200
        assert wait_for(c, run_id, "cancelled")["status"] == "cancelled"
        assert c.post(f"/runs/{run_id}/cancel").status_code == 409


def test_a_run_paused_by_another_process_is_answered_here_and_the_other_way_round(
    api: Served, served_dirs: tuple[Path, Path]
) -> None:
    library, data = served_dirs
    env = env_for(data)
    # paused by `flowdesk run` (as by the desktop: the same history), answered over HTTP
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "run", str(library / "review.flow.json"), "--provider", "echo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 3, res.stderr
    with client(api) as c:
        cli_run = next(
            r
            for r in c.get("/runs", params={"status": "paused"}).json()
            if r["workflowPath"].endswith("review.flow.json")
        )
        run_id = cli_run["id"]
        assert c.get(f"/runs/{run_id}").json()["waitingForInput"] is True
        assert c.post(f"/runs/{run_id}/decision", json={"decision": "approve", "note": "from http"}).status_code == 200
        assert wait_for(c, run_id, "completed")["output"].startswith("Sent with note [from http]")
        # paused over HTTP, answered by `flowdesk resume` in another process
        served_run = c.post("/flows/review/runs", json={"vars": {"topic": "maps"}}).json()["runId"]
        wait_for(c, served_run, "paused")
        res = subprocess.run(
            [sys.executable, "-m", "engine.cli", "resume", served_run, "--decide", "approve:from the cli"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stderr
        done = wait_for(c, served_run, "completed")
    assert done["output"] == "Sent with note [from the cli]: Draft about maps"


# ---------------------------------------------------------------------- webhooks and auth
def test_a_signed_webhook_starts_its_flow_and_an_unsigned_one_is_refused(api: Served) -> None:
    body = json.dumps({"event": "push"}).encode()
    with client(api) as c:
        unsigned = c.post("/hooks/signed", content=body, headers={"Content-Type": "application/json"})
        assert unsigned.status_code == 401 and "X-Flowdesk-Signature" in unsigned.json()["detail"]
        wrong = c.post("/hooks/signed", content=body, headers={"X-Flowdesk-Signature": signature_of("nope", body)})
        assert wrong.status_code == 401
        good = c.post("/hooks/signed", content=body, headers={"X-Flowdesk-Signature": signature_of(HOOK_SECRET, body)})
        assert good.status_code == 200, good.text
        done = wait_for(c, good.json()["runId"], "completed")
        assert done["output"] == "Got push" and done["vars"] == {"event": "push"}
        # the body's keys are checked as Start variables are; a body that is not an object is refused
        empty = b"{}"
        refused = c.post(
            "/hooks/signed", content=empty, headers={"X-Flowdesk-Signature": signature_of(HOOK_SECRET, empty)}
        )
        assert refused.status_code == 422 and "'event' is required" in refused.json()["detail"]
        assert "as a key of the JSON body" in refused.json()["detail"]  # not the command line's --var
        listed = b"[1, 2]"
        assert (
            c.post(
                "/hooks/signed", content=listed, headers={"X-Flowdesk-Signature": signature_of(HOOK_SECRET, listed)}
            ).status_code
            == 422
        )
        # a flow without a secret: its webhook is open on loopback without a token
        plain = c.post("/hooks/greet", json={"who": "Hook"})
        assert plain.status_code == 200
        assert wait_for(c, plain.json()["runId"], "completed")["output"] == "Hello Hook x1"


def test_with_a_token_every_route_but_the_documentation_needs_it(guarded: Served) -> None:
    with client(guarded) as anonymous:
        for method, path in [
            ("GET", "/flows"),
            ("GET", "/runs"),
            ("POST", "/flows/greet/runs"),
            ("GET", "/runs/x"),
            ("GET", "/runs/x/events"),
            ("POST", "/runs/x/decision"),
            ("POST", "/runs/x/cancel"),
            ("POST", "/hooks/greet"),
        ]:
            r = anonymous.request(method, path, json={})
            assert r.status_code == 401, (method, path, r.text)
            assert r.headers.get("www-authenticate", "").lower().startswith("bearer")
        assert anonymous.get("/flows", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert anonymous.post("/hooks/no-such-flow", json={}).status_code == 401
        assert anonymous.get("/openapi.json").status_code == 200
        body = json.dumps({"event": "signed, no token"}).encode()
        signed = anonymous.post(
            "/hooks/signed", content=body, headers={"X-Flowdesk-Signature": signature_of(HOOK_SECRET, body)}
        )
        assert signed.status_code == 200
    with client(guarded, TOKEN) as c:
        assert c.get("/flows").status_code == 200
        run_id = c.post("/hooks/greet", json={"who": "Token"}).json()["runId"]
        assert wait_for(c, run_id, "completed")["output"] == "Hello Token x1"
        too_big = c.post("/flows/greet/runs", json={"vars": {"who": "x" * 5000}})
    assert too_big.status_code == 413


def test_without_a_token_only_local_host_names_are_answered(api: Served) -> None:
    with client(api) as c:
        rebound = c.get("/flows", headers={"Host": "evil.example:8377"})
        assert rebound.status_code == 421 and "evil.example" in rebound.json()["detail"]
        assert c.get("/flows", headers={"Host": "localhost"}).status_code == 200


def test_cors_is_off_unless_an_origin_is_given(api: Served, guarded: Served) -> None:
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST"}
    with client(api) as c:
        r = c.options("/flows/greet/runs", headers=preflight)
        assert "access-control-allow-origin" not in r.headers
        assert "access-control-allow-origin" not in c.get("/flows", headers={"Origin": "http://app.example"}).headers
    with client(guarded) as c:
        r = c.options("/flows/greet/runs", headers={**preflight, "Access-Control-Request-Headers": "authorization"})
        assert r.headers.get("access-control-allow-origin") == "http://app.example"
        other = c.options("/flows/greet/runs", headers={**preflight, "Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


def test_listening_off_loopback_without_a_token_is_refused(served_dirs: tuple[Path, Path]) -> None:
    library, data = served_dirs
    env = env_for(data)
    env.pop("FLOWDESK_TOKEN", None)
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "serve", "--host", "0.0.0.0", "--port", "0", "--library", str(library)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in res.stderr
    assert "Traceback" not in res.stderr


def test_a_run_whose_process_died_is_marked_interrupted_and_its_stream_ends(
    api: Served, served_dirs: tuple[Path, Path]
) -> None:
    library, data = served_dirs
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    store = RunStore(data / "runs.db")
    store.create_run("died-midway-0001", load_workflow(library / "greet.flow.json"), status="running")
    store.update_run("died-midway-0001", owner_pid=int(gone.stdout))
    with client(api) as c:
        started = time.monotonic()
        assert sse(c, "died-midway-0001") == []  # the stream ends once the run is found interrupted
        assert time.monotonic() - started < 20
        assert c.get("/runs/died-midway-0001").json()["status"] == "interrupted"
