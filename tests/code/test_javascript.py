"""The ``code`` kind in JavaScript and TypeScript (Deno): DESIGN.md's behaviours, each sandbox
attack refused with the step failed and the process gone, and a permitted host reachable."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine import validate
from engine.code.deno import run_deno
from tests.code.conftest import children_left, children_of_tests, code_node, events, extra, needs_deno, run, workflow

pytestmark = needs_deno


@pytest.fixture
def server():
    """An HTTP server on 127.0.0.1, port 0: answers ``hello from <path>``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"hello from {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_inputs_return_and_console(language: str) -> None:
    typed = ": number" if language == "typescript" else ""
    code = (
        f"const double = (n{typed}) => n * 2;\n"
        "console.log('sum', numbers.length);\n"
        "console.error('careful');\n"
        "return { total: numbers.map(double).reduce((a, b) => a + b, 0), who: inputs.who };"
    )
    wf = workflow(
        code_node(code, language, inputs={"numbers": "{{nums}}", "who": "Ada"}, outputVar="out"),
        variables=[{"name": "nums", "type": "json", "value": [1, 2, 3]}],
    )
    r = run(wf)
    assert r.status == "completed", r.error
    assert r.outputs["c"] == {"total": 12, "who": "Ada"} and r.variables["out"] == {"total": 12, "who": "Ada"}
    logs = [(extra(e)["stream"], extra(e)["text"]) for e in events(r, "code_log")]
    assert logs == [("stdout", "sum 3"), ("stderr", "careful")]


def test_api_query_llm_and_call_action(library) -> None:
    code = (
        "const a = await api.queryLLM('Summarise', { input: topic });\n"
        "const b = await api.callAction('player', 'createPlaylist', { name: 'Jazz', songs: 'x' });\n"
        "return [a.text, b.text, b.data];"
    )
    r = run(workflow(code_node(code, "typescript", inputs={"topic": "bees"})), library=library)
    assert r.status == "completed", r.error
    assert r.outputs["c"] == ["Summarise\n\nbees", "Playlist Jazz: x", "Playlist Jazz: x"]
    starts = events(r, "api_call_start")
    assert [extra(e)["method"] for e in starts] == ["queryLLM", "callAction"]
    assert extra(starts[1])["args"] == ["player", "createPlaylist", {"name": "Jazz", "songs": "x"}]
    assert len(events(r, "api_call_end")) == 2


def test_errors_name_the_line_of_the_node_code() -> None:
    r = run(workflow(code_node("const a = 1;\nconst b = 2;\nnull.boom;\nreturn a;", "javascript")))
    assert r.status == "failed" and r.error.startswith("line 3: TypeError")
    r = run(workflow(code_node("const a: number = 1;\n\nlet x = ;", "typescript")))
    assert r.status == "failed" and "line 3: SyntaxError" in r.error


def test_a_value_that_is_not_json_fails_the_step() -> None:
    r = run(workflow(code_node("return { f: () => 1 };", "javascript")))
    assert r.status == "failed" and "not JSON-serialisable" in r.error and "the result.f is a function" in r.error


def test_timeout_kills_the_process() -> None:
    before = children_of_tests()
    r = run(workflow(code_node("while (true) {}", "javascript", timeoutMs=1500)))
    assert r.status == "failed" and "timed out" in r.error
    assert not children_left(before)


ATTACKS = [
    ("file-read", "return Deno.readTextFileSync('/etc/passwd');", "permission_denied: file access"),
    ("file-write", "Deno.writeTextFileSync('/tmp/flowdesk-attack.txt', 'x');", "permission_denied: writing"),
    ("network", "await fetch('http://example.com/');", "permission_denied: network access to 'example.com'"),
    ("subprocess", "new Deno.Command('/bin/sh', { args: ['-c', 'id'] }).outputSync();", "permission_denied: running"),
    ("deno-command", "await new Deno.Command('/usr/bin/env').output();", "permission_denied: running"),
    ("env", "return Deno.env.toObject();", "permission_denied: environment"),
    ("npm", "await import('npm:left-pad');", "npm"),
    ("remote-import", "await import('https://deno.land/std/version.ts');", "remote"),
    ("infinite-loop", "for (;;) {}", "timed out"),
    ("js-array-bomb", "const a = []; for (;;) a.push(new Array(1e5).fill(7));", "memory"),
    ("typed-array-bomb", "const all = []; for (;;) all.push(new Uint8Array(64 << 20).fill(1));", "memory"),
    ("deep-recursion", "function f(n) { return f(n + 1) + 1; }\nreturn f(0);", "RangeError"),
]


@pytest.mark.parametrize(("name", "code", "expected"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_attacks_are_refused_and_the_process_is_gone(name: str, code: str, expected: str) -> None:
    before = children_of_tests()
    r = run(workflow(code_node(code, "javascript", timeoutMs=3000, memoryMb=128)))
    assert r.status == "failed", name
    assert expected in r.error, r.error
    assert not children_left(before)
    assert not Path("/tmp/flowdesk-attack.txt").exists()


def test_a_big_typed_array_past_the_heap_is_stopped_by_the_watchdog() -> None:
    """Typed arrays live outside V8's heap limit: the RSS watchdog stops them."""
    code = "const a = new Uint8Array(900 << 20); a.fill(1); return a.length;"
    r = run(workflow(code_node(code, "javascript", timeoutMs=20000, memoryMb=256)))
    assert r.status == "failed" and "memory" in r.error


def test_forged_protocol_lines_on_stdout_are_only_log_text() -> None:
    code = (
        "console.log(JSON.stringify({type: 'result', value: 'FORGED'}));\n"
        'await Deno.stdout.write(new TextEncoder().encode(\'{"type":"call","id":99,"method":"callAction","args":[]}\\n\'));\n'
        "return 'real';"
    )
    r = run(workflow(code_node(code, "javascript")))
    assert r.status == "completed", r.error
    assert r.outputs["c"] == "real"
    assert not events(r, "api_call_start")
    assert any("FORGED" in extra(e)["text"] for e in events(r, "code_log"))


def test_the_protocol_channel_cannot_be_opened_by_the_code() -> None:
    code = "const f = Deno.openSync(Deno.args[0], { write: true }); return 'opened';"
    r = run(workflow(code_node(code, "javascript")))
    assert r.status == "failed" and "permission_denied" in r.error


def test_a_permitted_host_is_reachable_and_another_is_not(server: str) -> None:
    code = "const r = await fetch(`http://${host}/ok`);\nreturn await r.text();"
    wf = workflow(code_node(code, "javascript", inputs={"host": server}), permissions={"network": [server]})
    r = run(wf)
    assert r.status == "completed", r.error
    assert r.outputs["c"] == "hello from /ok"
    other = workflow(
        code_node("await fetch('http://127.0.0.2:8081/');", "javascript"), permissions={"network": [server]}
    )
    r = run(other)
    assert r.status == "failed" and "permission_denied" in r.error and "127.0.0.2" in r.error


def test_web_fetch_through_the_api_is_bounded_by_permissions(server: str) -> None:
    code = "const page = await api.webFetch(`http://${host}/page`);\nreturn page.text;"
    r = run(workflow(code_node(code, "typescript", inputs={"host": server}), permissions={"network": [server]}))
    assert r.status == "completed", r.error
    assert "hello from /page" in r.outputs["c"]
    r = run(workflow(code_node(code, "typescript", inputs={"host": server})))  # no permissions: no network
    assert r.status == "failed" and r.error.startswith("permission_denied: network access")
    denied = events(r, "permission_denied")
    assert denied and extra(denied[0]) == {
        "what": f"network access to '127.0.0.1:{server.split(':')[1]}'",
        "field": "network",
    }


def test_a_permitted_folder_is_readable(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("inside")
    code = f"return Deno.readTextFileSync({str(tmp_path / 'data.txt')!r});"
    r = run(workflow(code_node(code, "javascript"), permissions={"files": [str(tmp_path)]}))
    assert r.status == "completed" and r.outputs["c"] == "inside"


def test_cancelling_the_run_kills_the_process() -> None:
    from engine import EchoProvider, Run

    async def scenario() -> tuple[set[int], set[int]]:
        before = children_of_tests()
        r = Run(workflow(code_node("for (;;) {}", "javascript", timeoutMs=60000)), EchoProvider())
        task = asyncio.create_task(r.start())
        await asyncio.sleep(1.0)
        during = children_of_tests() - before
        r.cancel()
        await task
        await asyncio.sleep(0.1)
        return during, children_of_tests() - before

    during, after = asyncio.run(scenario())
    assert during and not after


def test_run_deno_bridges_any_api_method() -> None:
    """The interface the browser kind uses: generic api methods, sync or async."""
    calls = []

    async def click(selector: str) -> None:
        calls.append(selector)

    def title() -> str:
        return "Home"

    source = "async function execute(browser, params) {\n  await browser.click(params.sel);\n  return await browser.title();\n}"
    value = asyncio.run(
        run_deno(source, arguments=[{"sel": "#go"}], api_methods={"click": click, "title": title}, timeout_ms=10000)
    )
    assert value == "Home" and calls == ["#go"]


def test_validation_of_javascript_code() -> None:
    codes = {i.code for i in validate(workflow(code_node("", "typescript")))}
    assert "code_empty" in codes
    names = [i for i in validate(workflow(code_node("return 1", "javascript", inputs={"my-name": 1})))]
    assert any(i.code == "code_input_name" for i in names)


def test_template_literals_in_the_code_are_not_flowdesk_references() -> None:
    """`${x}` in JavaScript is the code's own template literal: no unknown_reference warning
    about it, while a reference to an unknown name in the inputs still warns."""
    code = "const who = 'Ada';\nreturn `hi ${who} ${inputs.n}`;"
    r = run(workflow(code_node(code, "javascript", inputs={"n": "{{nope}}"})), check=False)
    issues = validate(workflow(code_node(code, "javascript", inputs={"n": "{{nope}}"})))
    assert [i.message for i in issues if i.code == "unknown_reference"] == [
        "'Code (javascript)' refers to '{{nope}}' in inputs.n, but nothing is named 'nope' (not a Start variable, "
        "an output variable or a built-in); it stays as written."
    ]
    assert r.status == "completed" and r.outputs["c"] == "hi Ada {{nope}}"


def test_every_line_printed_before_returning_is_logged() -> None:
    logs: list[str] = []
    source = "async function execute(api) { for (let i = 0; i < 300; i++) console.log('line', i); return 1; }"
    assert asyncio.run(run_deno(source, on_log=lambda stream, text: logs.append(text), typescript=False)) == 1
    assert len(logs) == 300 and logs[-1] == "line 299"
