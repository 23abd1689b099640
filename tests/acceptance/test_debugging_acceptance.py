"""Acceptance: finding out what went wrong (issue 30, items 3, 9 and 14), through the command
line only: a run that fails or is cancelled prints its id and the commands to use it; `show`,
`runs`, `repair --apply`, `run --from --reuse` and `diff` work on that id; secrets — a
`{{secrets.NAME}}`, the provider's API key echoed by the model, a URL password given with
`--var` — never appear in what `run`, `show` or `runs` print, nor in any file of the data folder.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.acceptance.support import FLOWDESK, CliResult, Home, chain, cli, start_node, var
from tests.acceptance.web_server import RecordingServer
from tests.fakes.openai_server import FakeLLMServer, Recorded, Reply, openai_plain, openai_text

RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")
SECRET = "tok-SECRET-5a1f9e"
API_KEY = "sk-acc-KEY-99887766"
URL_PASSWORD = "pw-URL-4455xyz"


@pytest.fixture(scope="module")
def site() -> Iterator[RecordingServer]:
    with RecordingServer() as server:
        yield server


def answer(rec: Recorded, text: str) -> Reply:
    body = rec.json or {}
    return openai_text(text) if body.get("stream") else openai_plain(text)


def http(node_id: str, url: str, **data: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "http", "data": {"method": "GET", "url": url, **data}}


def model_args(model: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--base-url", model.base_url]


# --------------------------------------------------------------------------- fail, repair, rerun, diff
@pytest.fixture(scope="module")
def failed(site: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A run failing at its second step (a 404), the model's repair applied, the run again from
    the repaired node reusing the first step, and the two runs' ids."""
    home = Home(tmp_path_factory.mktemp("repair"))
    path = home.write(
        "fix.flow.json",
        chain(
            "Fixable",
            [
                start_node(initial="hello"),
                http("first", f"{site.base}/echo/first", outputVar="first"),
                http("broken", f"{site.base}/wrong/path"),
            ],
        ),
    )
    with FakeLLMServer() as model:

        def reply(rec: Recorded) -> Reply:
            patch = {"patch": {"url": f"{site.base}/echo/fixed"}, "reason": "the path had a typo"}
            return answer(rec, json.dumps(patch))

        model.handler = reply
        first_run = cli("run", str(path), *model_args(model), env=home.env, cwd=home.root, timeout=60)
        ids = RUN_ID.findall(first_run.stderr)
        run_id = ids[0] if ids else ""
        repaired = cli(
            "repair", run_id, "--apply", "--yes", *model_args(model), env=home.env, cwd=home.root, timeout=60
        )
        requests_before = len(site.at("/echo/first"))
        again = home.run(path, "--from", "broken", "--reuse", run_id, *model_args(model))
        second_ids = RUN_ID.findall(again.stderr) + [e.get("runId", "") for e in again.events if e.get("runId")]
        one_shot = {}
        for name, extra in (("plain", []), ("jsonl", ["--jsonl"])):
            again_path = home.write(
                f"fix-{name}.flow.json",
                chain("Fixable too", [start_node(initial="hello"), http("broken", f"{site.base}/wrong/path")]),
            )
            asked = len(model.requests)
            done = cli(
                "run", str(again_path), "--repair", "--yes", *extra, *model_args(model), env=home.env, cwd=home.root
            )
            one_shot[name] = (done, again_path, len(model.requests) - asked)
        diff = cli("diff", run_id, (second_ids or [""])[0], "--json", env=home.env, cwd=home.root, timeout=60)
        yield {
            "home": home,
            "path": path,
            "first": first_run,
            "run_id": run_id,
            "repair": repaired,
            "model_requests": list(model.requests),
            "again": again,
            "second_id": (second_ids or [""])[0],
            "first_requests": (requests_before, len(site.at("/echo/first"))),
            "diff": diff,
            "one_shot": one_shot,
        }


def test_failed_run_prints_its_id_and_the_show_and_repair_commands(failed):
    res: CliResult = failed["first"]
    assert res.rc == 1, res.combined
    run_id = failed["run_id"]
    assert run_id, f"no run id printed:\n{res.combined}"
    assert f"flowdesk show {run_id[:8]}" in res.stderr and f"flowdesk repair {run_id[:8]}" in res.stderr, res.stderr


def test_show_of_the_failed_run_prints_its_log_and_error(failed):
    home = failed["home"]
    res = cli("show", failed["run_id"][:8], env=home.env, cwd=home.root)
    assert res.rc == 0, res.combined
    assert "404" in res.stdout and "broken" in res.stdout.lower(), res.stdout


def test_runs_json_lists_the_failed_run_with_its_error(failed):
    home = failed["home"]
    res = cli("runs", "--json", env=home.env, cwd=home.root)
    assert res.rc == 0, res.combined
    rows = {r["id"]: r for r in json.loads(res.stdout)["runs"]}
    row = rows[failed["run_id"]]
    assert row["status"] == "failed" and "404" in (row.get("error") or ""), row


def test_repair_apply_writes_the_models_patch_into_the_file(failed):
    res: CliResult = failed["repair"]
    assert res.rc == 0, res.combined
    assert "the path had a typo" in res.combined
    doc = json.loads(failed["path"].read_text())
    broken = next(n for n in doc["nodes"] if n["id"] == "broken")
    assert broken["data"]["url"].endswith("/echo/fixed"), broken
    sent = [r for r in failed["model_requests"] if r.method == "POST"]
    assert sent, "the model was never asked"
    assert "404" in json.dumps(sent[0].json), "the repair request does not carry the error"


def test_run_from_the_repaired_node_reuses_the_step_before_it(failed):
    res: CliResult = failed["again"]
    assert res.rc == 0, res.combined
    assert res.of_type("cache_hit", "first"), [e["type"] for e in res.events]
    before, after = failed["first_requests"]
    assert after == before, "the reused step was sent again"


def check_repaired_and_ran_again(res: CliResult, path, asked: int) -> None:
    assert asked >= 1, f"the model was not asked for a repair\n{res.combined[-1500:]}"
    assert json.loads(path.read_text())["nodes"][1]["data"]["url"].endswith("/echo/fixed")
    assert res.rc == 0, res.combined[-1500:]
    assert "running again from" in res.stderr, res.stderr


def test_run_with_repair_yes_patches_the_failed_node_and_runs_again_from_it(failed):
    check_repaired_and_ran_again(*failed["one_shot"]["plain"])


def test_run_with_repair_yes_and_jsonl_still_repairs(failed):
    check_repaired_and_ran_again(*failed["one_shot"]["jsonl"])


def test_diff_of_the_failed_and_repaired_runs_names_the_changed_node(failed):
    res: CliResult = failed["diff"]
    assert failed["second_id"], failed["again"].combined
    assert res.rc == 0, res.combined
    doc = json.loads(res.stdout)
    assert "broken" in json.dumps(doc), doc


def test_repair_of_a_run_with_no_failed_node_is_a_usage_error(failed):
    home = failed["home"]
    res = cli("repair", failed["second_id"], env=home.env, cwd=home.root)
    assert res.rc == 2, res.combined
    assert "Traceback" not in res.combined


# --------------------------------------------------------------------------- cancel
def test_cancelled_run_prints_its_id_and_show_reads_it(site, tmp_path):
    home = Home(tmp_path)
    path = home.write("slow.flow.json", chain("Slow", [start_node(), http("slow", f"{site.base}/drip")]))
    proc = subprocess.Popen(
        [FLOWDESK, "run", str(path), "--provider", "echo", "--jsonl"],
        env=home.env,
        cwd=home.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        if '"http_request"' in line or time.monotonic() > deadline:
            break
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 4, f"exit {proc.returncode}\n{err}"
    assert "Traceback" not in err, err
    ids = RUN_ID.findall(err)
    assert ids, f"no run id printed on cancel:\n{err}"
    shown = cli("show", ids[0], env=home.env, cwd=home.root)
    assert shown.rc == 0 and "cancelled" in shown.stdout, shown.combined


# --------------------------------------------------------------------------- masking
@pytest.fixture(scope="module")
def leaky(site: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A run whose API answers with the token it was sent, whose model answers with the API key,
    and whose second request's URL (given with --var) holds a password."""
    home = Home(tmp_path_factory.mktemp("leaky"))
    home.env.update(SECRET_TOKEN=SECRET, OPENAI_API_KEY=API_KEY)
    doc = chain(
        "Leaky",
        [
            start_node([var("url", "")], initial="go"),
            http(
                "api",
                f"{site.base}/mirror",
                headers=[{"key": "Authorization", "value": "Bearer {{secrets.SECRET_TOKEN}}"}],
                outputVar="said",
            ),
            http("withpw", "{{url}}"),
            http("inquery", f"{site.base}/echo/query?key={{{{secrets.SECRET_TOKEN}}}}"),
            {
                "id": "chat",
                "type": "agent",
                "data": {
                    "agentName": "Chat",
                    "userPrompt": "summarise {{said}}",
                    "model": "gpt-4o-mini",
                    "tools": {"web_search": False, "subagents": False},
                },
            },
        ],
    )
    path = home.write("leaky.flow.json", doc)
    url = f"http://bob:{URL_PASSWORD}@127.0.0.1:{site.port}/echo/with-password"
    with FakeLLMServer() as model:
        model.handler = lambda rec: answer(rec, f"Your key is {API_KEY}. Done.")
        ran = cli("run", str(path), "--var", f"url={url}", "--jsonl", *model_args(model), env=home.env, cwd=home.root)
        sent_key = any(API_KEY in json.dumps(r.headers) for r in model.requests)
    ids = RUN_ID.findall(ran.stderr)
    run_id = ids[0] if ids else ""
    shown = cli("show", run_id, env=home.env, cwd=home.root)
    listed = cli("runs", env=home.env, cwd=home.root)
    listed_json = cli("runs", "--json", env=home.env, cwd=home.root)
    yield {
        "home": home,
        "run": ran,
        "run_id": run_id,
        "show": shown,
        "runs": listed,
        "runs_json": listed_json,
        "sent_key": sent_key,
    }


def leaks(text: str) -> list[str]:
    return [s for s in (SECRET, API_KEY, URL_PASSWORD) if s in text]


def test_secret_template_reaches_the_server_but_is_never_printed(leaky, site):
    res: CliResult = leaky["run"]
    assert res.rc == 0, res.combined
    assert any(SECRET in s.headers.get("Authorization", "") for s in site.at("/mirror")), "the token was not sent"
    assert any(SECRET in s.query for s in site.at("/echo/query")), "the token was not sent in the query"
    assert SECRET not in res.combined, "the secret echoed by the API was printed"


def test_api_key_echoed_by_the_model_is_masked_in_the_run_output(leaky):
    res: CliResult = leaky["run"]
    assert leaky["sent_key"], "the API key was not sent to the model server"
    assert res.of_type("llm_response", "chat"), res.combined
    assert API_KEY not in res.combined, "the API key echoed in the model's answer was printed"


def test_url_password_from_var_is_masked_in_the_run_output(leaky):
    res: CliResult = leaky["run"]
    assert URL_PASSWORD not in res.combined, [line for line in res.combined.splitlines() if URL_PASSWORD in line][:3]


@pytest.mark.parametrize("what", ["show", "runs", "runs_json"])
def test_show_and_runs_never_print_a_secret_api_key_or_url_password(leaky, what):
    res: CliResult = leaky[what]
    assert leaky["run_id"], leaky["run"].combined
    assert res.rc == 0, res.combined
    assert not leaks(res.combined), [line for line in res.combined.splitlines() if leaks(line)][:3]


def test_show_still_prints_the_runs_arguments_with_the_password_masked(leaky):
    res: CliResult = leaky["show"]
    assert "/echo/with-password" in res.stdout and "bob" in res.stdout, res.stdout[:2000]


def test_no_file_of_the_data_folder_holds_a_secret_api_key_or_url_password(leaky):
    home: Home = leaky["home"]
    found = []
    for file in home.root.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            found += [f"{file.name}: {s}" for s in (SECRET, API_KEY, URL_PASSWORD) if s.encode() in data]
    assert not found, found


# --------------------------------------------------------------------------- output closed
def piped_into_head(home: Home, nodes: list[dict[str, Any]]) -> tuple[subprocess.CompletedProcess, float]:
    """`flowdesk run FILE --no-store | head -5`: flowdesk's own exit status and how long it took."""
    path = home.write("long.flow.json", chain("Long", [start_node(initial="go"), *nodes]))
    began = time.monotonic()
    res = subprocess.run(
        ["bash", "-c", f'"{FLOWDESK}" run "{path}" --provider echo --no-store | head -5; exit ${{PIPESTATUS[0]}}'],
        env=home.env,
        cwd=home.root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in res.stderr and "BrokenPipeError" not in res.stderr, res.stderr
    assert len(res.stdout.splitlines()) == 5
    return res, time.monotonic() - began


def big_agents() -> list[dict[str, Any]]:
    """Twelve echo agents printing ~480 kB in all: more than a pipe holds, so the command meets
    the pipe's closed end while it still has output to write."""
    return [
        {"id": f"a{i}", "type": "agent", "data": {"agentName": f"A{i}", "userPrompt": f"step {i} " + "word " * 4000}}
        for i in range(12)
    ]


def test_run_piped_into_head_exits_141(tmp_path):
    res, _took = piped_into_head(Home(tmp_path), big_agents())
    assert res.returncode == 141, f"exit {res.returncode}\n{res.stderr}"


def test_run_piped_into_head_stops_once_its_output_is_closed(site, tmp_path):
    slow = http("slow", f"{site.base}/drip", timeoutMs=9000)
    res, took = piped_into_head(Home(tmp_path), [*big_agents(), slow])
    assert took < 7, f"the run went on for {took:.0f} s after its output was closed (exit {res.returncode})"


# --------------------------------------------------------------------------- Ctrl+C early
@pytest.mark.parametrize("delay", [0.4, 0.8])
def test_ctrl_c_soon_after_start_cancels_with_exit_4_and_no_traceback(tmp_path, delay):
    """Ctrl+C once Python itself has started (earlier, it is the interpreter's own start-up)."""
    home = Home(tmp_path)
    path = home.write("long.flow.json", chain("Long", [start_node(initial="go"), *big_agents()]))
    proc = subprocess.Popen(
        [FLOWDESK, "run", str(path), "--provider", "echo", "--no-store"],
        env=home.env,
        cwd=home.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-1500:]
    assert proc.returncode in (0, 4), f"exit {proc.returncode}\n{err[-1500:]}"
