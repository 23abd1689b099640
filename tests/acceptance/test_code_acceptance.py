"""Acceptance: the `code` and `script` kinds and the workflow's `permissions`, checked from
DESIGN.md's names only ("Acting: code, browsers and MCP tools" and "Contract details"),
through the `flowdesk` command line and the public `engine` API, as a user would."""

from __future__ import annotations

import importlib.util
import json
import shutil
import time

import pytest

import engine
from tests.acceptance.support import (
    Home,
    PageServer,
    chain,
    cli,
    link,
    payload,
    result_of,
    start_node,
    var,
)

HAVE_MONTY = importlib.util.find_spec("pydantic_monty") is not None
HAVE_DENO = importlib.util.find_spec("deno") is not None
needs_python = pytest.mark.skipif(not HAVE_MONTY, reason="the code extra (pydantic-monty) is not installed")
needs_deno = pytest.mark.skipif(not HAVE_DENO, reason="the code extra (deno) is not installed")


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path)


def code(node_id: str, source: str, language: str = "python", **data) -> dict:
    return {"id": node_id, "type": "code", "data": {"language": language, "code": source, **data}}


def failed(res, node: str) -> bool:
    ends = [payload(e) for e in res.of_type("step_end", node)]
    return any(
        p.get("status") == "failed" or e.get("content") == "failed" for p, e in zip(ends, res.of_type("step_end", node))
    )


# ---------------------------------------------------------------- Python (pydantic-monty)


@needs_python
def test_python_inputs_last_expression_and_output_var(home):
    wf = chain(
        "py",
        [
            start_node([var("a", "2", "number")]),
            code("c", "b = a * 20\nb + 1 + 1", inputs={"a": "{{a}}"}, outputVar="res"),
            code("d", "r + 1", inputs={"r": "{{res}}"}),
        ],
    )
    res, doc = home.run_json(home.write("py.flow.json", wf))
    assert res.rc == 0, res.combined
    assert doc["status"] == "completed"
    assert result_of(doc, "c")["output"] == 42
    assert doc["vars"]["res"] == 42
    assert result_of(doc, "d")["output"] == 43
    assert doc["output"] == 43


@needs_python
def test_python_is_the_default_language(home):
    node = {"id": "c", "type": "code", "data": {"code": "x = [1, 2, 3]\nsum(x) * 7"}}
    res, doc = home.run_json(home.write("py.flow.json", chain("py", [start_node(), node])))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == 42


@needs_python
def test_python_var_overrides_and_print_is_code_log(home):
    wf = chain(
        "py",
        [
            start_node([var("who", "nobody")]),
            code("c", "print('hello', who)\n'done ' + who", inputs={"who": "{{who}}"}),
        ],
    )
    res = home.run(home.write("py.flow.json", wf), "--var", "who=Ada")
    assert res.rc == 0, res.combined
    logs = [payload(e) for e in res.of_type("code_log", "c")]
    assert logs, res.stdout
    assert {"stream", "text"} <= set(logs[0])
    assert any("hello Ada" in p["text"] for p in logs)


@needs_python
def test_python_error_names_the_line(home):
    wf = chain("py", [start_node(), code("c", "x = 1\ny = 2\nz = not_defined_anywhere + x\nz")])
    res = home.run(home.write("py.flow.json", wf))
    assert res.rc == 1, res.combined
    text = res.text_of("c")
    assert "line 3" in text
    assert "not_defined_anywhere" in text


@needs_python
@pytest.mark.parametrize(
    "src",
    [
        "{1, 2}",
        "b'xy'",
        "def f():\n    return 1\nf",
        "range(3)",
        "[len, 1]",
    ],
    ids=["set", "bytes", "function", "range", "builtin in a list"],
)
def test_python_result_that_is_not_json_fails(home, src):
    wf = chain("py", [start_node(), code("c", src)])
    res = home.run(home.write("py.flow.json", wf))
    assert res.rc == 1, res.combined
    assert failed(res, "c")
    assert "Traceback" not in res.combined


@needs_python
def test_python_timeout(home):
    wf = chain("py", [start_node(), code("c", "i = 0\nwhile True:\n    i = i + 1", timeoutMs=1000)])
    t0 = time.monotonic()
    res = home.run(home.write("py.flow.json", wf), timeout=90)
    assert res.rc == 1, res.combined
    assert time.monotonic() - t0 < 60
    assert "timed out" in res.text_of("c").lower()


@needs_python
def test_python_memory_limit(home):
    wf = chain("py", [start_node(), code("c", "x = []\nwhile True:\n    x.append('a' * 1000000)", memoryMb=32)])
    res = home.run(home.write("py.flow.json", wf), timeout=120)
    assert res.rc == 1, res.combined
    assert "memory" in res.text_of("c").lower()


@needs_python
def test_python_file_read_refused(home, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-42")
    wf = chain("py", [start_node(), code("c", f"open({str(secret)!r}).read()")])
    res = home.run(home.write("py.flow.json", wf))
    assert res.rc == 1, res.combined
    assert "TOP-SECRET-42" not in res.stdout


@needs_python
def test_python_llm_and_call_flow_host_functions(home):
    home.add_library_flow(
        "double",
        chain("double", [start_node([var("n", "0", "number")]), code("c", "n * 2", inputs={"n": "{{n}}"})]),
    )
    wf = chain(
        "py",
        [
            start_node(),
            code("c", "r = await call_flow('double', n=21)\nt = await llm('say hi')\n[r, type(t).__name__]"),
        ],
    )
    res, doc = home.run_json(home.write("py.flow.json", wf))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == [42, "str"]


# ---------------------------------------------------------------- JavaScript / TypeScript (Deno)


@needs_deno
def test_javascript_inputs_as_constants_return_value_and_output_var(home):
    wf = chain(
        "js",
        [
            start_node([var("total", "20", "number"), var("who", "Ada")]),
            code(
                "c",
                "console.log('adding', total);\nreturn {sum: total + inputs.total + 2, who};",
                "javascript",
                inputs={"total": "{{total}}", "who": "{{who}}"},
                outputVar="res",
            ),
            code("d", "return res.sum + 1;", "javascript", inputs={"res": "{{res}}"}),
        ],
    )
    res, doc = home.run_json(home.write("js.flow.json", wf))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == {"sum": 42, "who": "Ada"}
    assert doc["vars"]["res"] == {"sum": 42, "who": "Ada"}
    assert result_of(doc, "d")["output"] == 43


@needs_deno
def test_javascript_console_log_is_code_log(home):
    wf = chain("js", [start_node(), code("c", "console.log('hello', 1 + 1);\nreturn 1;", "javascript")])
    res = home.run(home.write("js.flow.json", wf))
    assert res.rc == 0, res.combined
    logs = [payload(e) for e in res.of_type("code_log", "c")]
    assert any(p.get("text", "").strip() == "hello 2" and p.get("stream") for p in logs), logs


@needs_deno
def test_typescript_types_and_return_value(home):
    src = "interface P { n: number }\nconst p: P = { n: total };\nconst twice = (x: number): number => x * 2;\nreturn twice(p.n);"
    wf = chain(
        "ts", [start_node([var("total", "21", "number")]), code("c", src, "typescript", inputs={"total": "{{total}}"})]
    )
    res, doc = home.run_json(home.write("ts.flow.json", wf))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == 42


@needs_deno
@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_js_ts_error_names_the_line_of_the_nodes_own_code(home, language):
    decl = "const a: number = 1;" if language == "typescript" else "const a = 1;"
    src = f"{decl}\nconst b = a + 1;\nthrow new Error('boom at three');\nreturn b;"
    wf = chain("js", [start_node(), code("c", src, language)])
    res = home.run(home.write("js.flow.json", wf))
    assert res.rc == 1, res.combined
    text = res.text_of("c")
    assert "boom at three" in text
    assert "line 3" in text


@pytest.mark.skipif(not (HAVE_MONTY and HAVE_DENO), reason="the code extra is not installed")
@pytest.mark.parametrize(
    "language,src,line",
    [
        ("python", "x = 1\ny = (\nz = 3", 2),
        ("javascript", "const a = 1;\nconst = ;\nreturn a;", 2),
        ("typescript", "const a: number = 1;\nlet b: = 2;\nreturn a;", 2),
        ("javascript", "const a = 1;\n\nfunction f() {\n  return undefinedThing.x;\n}\nreturn f();", 4),
    ],
    ids=["python-syntax", "js-syntax", "ts-syntax", "js-nested-call"],
)
def test_syntax_and_nested_errors_name_the_line(home, language, src, line):
    res = home.run(home.write("c.flow.json", chain("c", [start_node(), code("c", src, language)])))
    assert res.rc == 1, res.combined
    assert f"line {line}" in res.text_of("c")


@needs_deno
def test_taskflow_script_error_names_the_line_of_the_script(home):
    script = 'async function execute(api, params) {\n  const a = 1;\n  throw new Error("boom three");\n}'
    res = home.run(home.write("r.recipe.json", taskflow(script, [])))
    assert res.rc == 1, res.combined
    assert "line 3" in res.text_of() and "boom three" in res.text_of()


@needs_deno
def test_javascript_result_that_is_not_json_fails(home):
    wf = chain("js", [start_node(), code("c", "const o = {};\no.self = o;\nreturn o;", "javascript")])
    res = home.run(home.write("js.flow.json", wf))
    assert res.rc == 1, res.combined
    assert failed(res, "c")


@needs_deno
def test_javascript_timeout(home):
    wf = chain("js", [start_node(), code("c", "while (true) {}", "javascript", timeoutMs=1500)])
    t0 = time.monotonic()
    res = home.run(home.write("js.flow.json", wf), timeout=90)
    assert res.rc == 1, res.combined
    assert time.monotonic() - t0 < 60
    assert "timed out" in res.text_of("c").lower()


@needs_deno
@pytest.mark.parametrize(
    "src",
    [
        "const a = [];\nwhile (true) { a.push(new Array(1000000).fill(7)); }",
        "const a = [];\nwhile (true) { a.push(new Uint8Array(64 * 1024 * 1024).fill(1)); }",
    ],
    ids=["js-array", "typed-array"],
)
def test_javascript_memory_limit(home, src):
    wf = chain("js", [start_node(), code("c", src, "javascript", memoryMb=128, timeoutMs=60000)])
    res = home.run(home.write("js.flow.json", wf), timeout=150)
    assert res.rc == 1, res.combined
    assert "memory" in res.text_of("c").lower()


# ---------------------------------------------------------------- permissions


@pytest.fixture
def site():
    with PageServer({"/data": ("application/json", '{"ok": true, "n": 7}')}) as server:
        yield server


def fetch_code(url: str) -> dict:
    return code("c", f"const r = await fetch({url!r});\nreturn await r.json();", "javascript")


@needs_deno
@pytest.mark.parametrize("entry", ["127.0.0.1:{port}", "127.0.0.1", "*"], ids=["host-port", "host", "any"])
def test_network_to_listed_host_is_reachable(home, site, entry):
    permissions = {"network": [entry.format(port=site.port)]}
    wf = chain("net", [start_node(), fetch_code(site.base + "/data")], permissions=permissions)
    res, doc = home.run_json(home.write("net.flow.json", wf))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == {"ok": True, "n": 7}
    assert "/data" in site.paths()


@needs_deno
@pytest.mark.parametrize("permissions", [None, {"network": ["example.org"]}], ids=["no-permissions", "other-host"])
def test_network_to_unlisted_host_is_permission_denied(home, site, permissions):
    top = {"permissions": permissions} if permissions is not None else {}
    wf = chain("net", [start_node(), fetch_code(site.base + "/data")], **top)
    res = home.run(home.write("net.flow.json", wf))
    assert res.rc == 1, res.combined
    text = res.text_of("c")
    assert "permission_denied" in text
    assert "127.0.0.1" in text
    assert "/data" not in site.paths(), "the request was sent"


@needs_deno
@pytest.mark.parametrize(
    "src",
    [
        "return Deno.env.get('FLOWDESK_ACCEPTANCE_SECRET');",
        "const out = await new Deno.Command('id').output();\nreturn new TextDecoder().decode(out.stdout);",
        "await Deno.writeTextFile('{root}/written-by-code.txt', 'x');\nreturn 1;",
    ],
    ids=["env", "subprocess", "file-write"],
)
def test_javascript_without_permissions_reaches_no_env_process_or_file(home, src):
    home.env["FLOWDESK_ACCEPTANCE_SECRET"] = "env-secret-value-42"
    wf = chain("sandbox", [start_node(), code("c", src.replace("{root}", str(home.root)), "javascript")])
    res = home.run(home.write("sandbox.flow.json", wf))
    assert res.rc == 1, res.combined
    assert "env-secret-value-42" not in res.stdout
    assert not (home.root / "written-by-code.txt").exists()


@needs_python
@pytest.mark.parametrize(
    "src", ["import os\nos.listdir('/')", "import subprocess\nsubprocess.run(['id'])"], ids=["os", "subprocess"]
)
def test_python_imports_beyond_the_sandbox_fail(home, src):
    res = home.run(home.write("py.flow.json", chain("py", [start_node(), code("c", src)])))
    assert res.rc == 1, res.combined
    assert "Traceback (most recent call last)" not in res.stderr


@needs_deno
def test_file_read_inside_permitted_folder_only(home, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "note.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("TOP-SECRET-42")
    inside = chain(
        "files",
        [start_node(), code("c", f"return await Deno.readTextFile({str(allowed / 'note.txt')!r});", "javascript")],
        permissions={"files": [str(allowed)]},
    )
    res, doc = home.run_json(home.write("in.flow.json", inside))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == "inside"

    outside = chain(
        "files",
        [start_node(), code("c", f"return await Deno.readTextFile({str(tmp_path / 'secret.txt')!r});", "javascript")],
        permissions={"files": [str(allowed)]},
    )
    res = home.run(home.write("out.flow.json", outside))
    assert res.rc == 1, res.combined
    assert "TOP-SECRET-42" not in res.stdout
    assert "permission_denied" in res.text_of("c")


@needs_python
def test_call_flow_outside_permissions_flows_is_denied(home):
    home.add_library_flow(
        "double",
        chain("double", [start_node([var("n", "0", "number")]), code("c", "n * 2", inputs={"n": "{{n}}"})]),
    )
    wf = chain(
        "py", [start_node(), code("c", "await call_flow('double', n=1)")], permissions={"flows": ["something-else"]}
    )
    res = home.run(home.write("py.flow.json", wf))
    assert res.rc == 1, res.combined
    text = res.text_of("c")
    assert "permission_denied" in text and "double" in text


@needs_deno
def test_javascript_code_api_call_action(home):
    greet_library_flow(home)
    wf = chain(
        "js",
        [
            start_node(),
            code(
                "c", "const r = await api.callAction('greeter', 'greet', {name: 'Bo'});\nreturn r.text;", "javascript"
            ),
        ],
    )
    res, doc = home.run_json(home.write("js.flow.json", wf))
    assert res.rc == 0, res.combined
    assert result_of(doc, "c")["output"] == "Hello Bo"


# ---------------------------------------------------------------- the error handle


@pytest.mark.skipif(not (HAVE_MONTY and HAVE_DENO), reason="the code extra is not installed")
@pytest.mark.parametrize("language", ["python", "javascript"])
def test_failure_takes_the_error_handle(home, language):
    src = "x = 1\nraise ValueError('kaput')" if language == "python" else "const x = 1;\nthrow new Error('kaput');"
    wf = chain(
        "err",
        [start_node(), code("c", src, language)],
        extra_links=[link("c", "h", "error")],
    )
    wf["nodes"].append(code("h", "return 'handled: ' + input;", "javascript", inputs={"input": "{{input}}"}))
    res, doc = home.run_json(home.write("err.flow.json", wf))
    assert res.rc == 0, res.combined
    assert doc["status"] == "completed"
    out = result_of(doc, "h")["output"]
    assert out.startswith("handled: ") and "kaput" in out


# ---------------------------------------------------------------- step policies and run from here


@needs_deno
def test_error_mode_skip_goes_on_with_null(home):
    wf = chain(
        "skip",
        [
            start_node(),
            code("c", "const a = 1;\nthrow new Error('x');", "javascript", errorMode="skip"),
            code("d", "return 'after ' + JSON.stringify(input);", "javascript", inputs={"input": "{{input}}"}),
        ],
    )
    res = home.run(home.write("skip.flow.json", wf))
    assert res.rc == 0, res.combined
    assert res.of_type("step_skipped", "c")
    assert [payload(e).get("status") for e in res.of_type("step_end", "c")] == ["skipped"]
    res, doc = home.run_json(home.write("skip.flow.json", wf))
    assert result_of(doc, "d")["output"] == "after null"


@needs_python
def test_run_from_here_reuses_a_code_step(home):
    wf = chain(
        "from", [start_node(), code("c1", "print('ran c1')\n21"), code("c2", "v * 2", inputs={"v": "{{input}}"})]
    )
    path = home.write("from.flow.json", wf)
    assert home.run(path).rc == 0
    res = home.run(path, "--from", "c2")
    assert res.rc == 0, res.combined
    assert res.of_type("cache_hit", "c1")
    assert not res.of_type("code_log", "c1"), "c1 ran again"
    assert not res.of_type("cache_hit", "c2")


@needs_deno
def test_javascript_remote_import_is_not_fetched(home):
    wf = chain(
        "npm",
        [start_node(), code("c", "const m = await import('npm:left-pad');\nreturn 1;", "javascript", timeoutMs=20000)],
    )
    t0 = time.monotonic()
    res = home.run(home.write("npm.flow.json", wf), timeout=90)
    assert res.rc == 1, res.combined
    assert time.monotonic() - t0 < 60


# ---------------------------------------------------------------- TaskFlow scripts


def greet_library_flow(home: Home) -> None:
    home.add_library_flow(
        "greet",
        chain(
            "greet",
            [
                start_node([var("name", "")]),
                code("c", "return 'Hello ' + name;", "javascript", inputs={"name": "{{name}}"}),
            ],
        ),
    )


def taskflow(script: str, params=None) -> dict:
    return {
        "name": "greetSomeone",
        "description": "Greets someone through the greet action",
        "parameters": params
        if params is not None
        else [{"name": "who", "type": "string", "required": True, "description": "Who to greet"}],
        "script": script,
        "grammarPatterns": ["greet $(who:wildcard)"],
        "source": {"type": "manual", "timestamp": "2026-01-01T00:00:00Z"},
    }


CALL_ACTION_SCRIPT = """async function execute(api: TaskFlowScriptAPI, params: FlowParams): Promise<TaskFlowScriptResult> {
  const r = await api.callAction("greeter", "greet", { name: params.who });
  if (r.error) {
    return { success: false, error: r.error };
  }
  return { success: true, message: r.text, data: { said: r.text } };
}"""


@needs_deno
def test_taskflow_script_calls_a_library_flow_with_api_events(home):
    greet_library_flow(home)
    recipe = home.write("greet.recipe.json", taskflow(CALL_ACTION_SCRIPT))
    res = home.run(recipe, "--var", "who=Ada")
    assert res.rc == 0, res.combined
    starts = [payload(e) for e in res.of_type("api_call_start")]
    ends = [payload(e) for e in res.of_type("api_call_end")]
    assert starts and ends, res.stdout
    assert starts[0].get("method") == "callAction"
    assert "args" in starts[0] and "greet" in json.dumps(starts[0]["args"])
    assert ends[0].get("method") == "callAction"

    res, doc = home.run_json(recipe, "--var", "who=Ada")
    assert res.rc == 0, res.combined
    out = doc["output"]
    assert out["success"] is True
    assert "Hello Ada" in out["message"]


@needs_deno
def test_taskflow_plain_result_is_wrapped_and_success_false_fails(home):
    plain = home.write("plain.recipe.json", taskflow("async function execute(api, params) {\n  return 42;\n}", []))
    res, doc = home.run_json(plain)
    assert res.rc == 0, res.combined
    assert doc["output"] == {"success": True, "message": "42", "data": 42}

    bad = home.write(
        "bad.recipe.json",
        taskflow("async function execute(api, params) {\n  return { success: false, error: 'no songs found' };\n}", []),
    )
    res = home.run(bad)
    assert res.rc == 1, res.combined
    assert "no songs found" in res.text_of()


@needs_deno
def test_taskflow_import_keeps_parameters_and_triggers(home):
    recipe = home.write("greet.recipe.json", taskflow(CALL_ACTION_SCRIPT))
    out = home.root / "greet.flow.json"
    res = home.import_(recipe, out)
    assert res.rc == 0, res.combined
    wf = json.loads(out.read_text())
    kinds = [n["type"] for n in wf["nodes"]]
    assert kinds.count("script") == 1
    start = next(n for n in wf["nodes"] if n["type"] == "start")
    assert [v["name"] for v in start["data"]["variables"]] == ["who"]
    triggers = [t if isinstance(t, str) else t.get("pattern") for t in wf.get("triggers", [])]
    assert "greet $(who:wildcard)" in triggers
    script = next(n for n in wf["nodes"] if n["type"] == "script")
    assert script["data"]["script"] == CALL_ACTION_SCRIPT
    assert script["data"]["language"] == "typescript"


WEBFETCH_SCRIPT = """async function execute(api, params) {
  const page = await api.webFetch(params.url);
  if (page.error) {
    return { success: false, error: page.error };
  }
  return { success: true, message: page.text };
}"""


@needs_deno
def test_taskflow_web_fetch_bounded_by_permissions(home):
    url_param = [{"name": "url", "type": "string", "required": True, "description": "Page"}]
    page = "<html><body><h1>Chart</h1><p>Song one by Someone</p></body></html>"
    with PageServer({"/chart": ("text/html", page)}) as server:
        url = server.base + "/chart"
        denied = home.write("denied.recipe.json", taskflow(WEBFETCH_SCRIPT, url_param))
        res = home.run(denied, "--var", f"url={url}")
        assert res.rc == 1, res.combined
        assert "permission_denied" in res.text_of()
        assert "/chart" not in server.paths(), "sent without permission"

        allowed = home.write("allowed.recipe.json", {**taskflow(WEBFETCH_SCRIPT, url_param)})
        # A recipe has no permissions field: grant the host on the imported workflow.
        out = home.root / "allowed.flow.json"
        assert home.import_(allowed, out).rc == 0
        wf = json.loads(out.read_text())
        wf["permissions"] = {"network": [f"127.0.0.1:{server.port}"]}
        out.write_text(json.dumps(wf))
        res, doc = home.run_json(out, "--var", f"url={url}")
        assert res.rc == 0, res.combined
        assert "Song one by Someone" in doc["output"]["message"]
        assert "/chart" in server.paths()


@needs_deno
def test_taskflow_api_results_have_text_data_and_error(home):
    script = (
        "async function execute(api, params) {\n"
        '  const r = await api.callAction("x", "noSuchFlow", {});\n'
        '  const q = await api.queryLLM("Answer", {input: "[1,2]", parseJson: true});\n'
        "  return { success: true, data: { r, q } };\n}"
    )
    res = home.run(home.write("r.recipe.json", taskflow(script, [])))
    assert res.rc == 0, res.combined
    methods = [payload(e).get("method") for e in res.of_type("api_call_end")]
    assert methods == ["callAction", "queryLLM"]
    res, doc = home.run_json(home.write("r.recipe.json", taskflow(script, [])))
    data = doc["output"]["data"]
    assert {"text", "data"} <= set(data["r"]) and data["r"].get("error"), data["r"]
    assert "noSuchFlow" in data["r"]["error"]
    assert {"text", "data"} <= set(data["q"]) and not data["q"].get("error"), data["q"]


BLOCKED_SCRIPT = """async function execute(api, params) {
  const note = "eval is only a word in a string";
  const x = eval("1 + 1");
  return { success: true, data: x };
}"""


def test_script_blocked_is_a_validation_error_naming_identifier_and_line(home):
    recipe = home.write("blocked.recipe.json", taskflow(BLOCKED_SCRIPT, []))
    res = home.validate(recipe)
    assert res.rc == 1, res.combined
    assert "script_blocked" in res.combined
    assert "eval" in res.combined
    assert "line 3" in res.combined
    assert "line 2" not in res.combined, "a string literal counted as a use"

    run = home.run(recipe)
    assert run.rc == 1, run.combined
    assert not run.of_type("step_start"), "a step ran although the script is blocked"

    workflow, _ = engine.load_any_workflow(recipe)
    issues = [i for i in engine.validate(workflow) if i.code == "script_blocked"]
    assert issues and issues[0].severity == engine.Severity.ERROR
    assert "eval" in issues[0].message and "line 3" in issues[0].message


def test_string_literals_do_not_count_as_blocked(home):
    script = 'async function execute(api, params) {\n  const s = "do not eval or fetch this";\n  return s;\n}'
    res = home.validate(home.write("ok.recipe.json", taskflow(script, [])))
    assert "script_blocked" not in res.combined
    assert res.rc == 0, res.combined


@pytest.mark.skipif(shutil.which("pwsh") is not None, reason="pwsh is installed: the interpreter is not missing")
def test_scriptflow_without_pwsh_is_script_interpreter_missing(home):
    recipe = {
        "version": 1,
        "actionName": "listFiles",
        "description": "Lists files",
        "displayName": "List files",
        "parameters": [{"name": "path", "type": "path", "required": False, "description": "Folder"}],
        "script": {
            "language": "powershell",
            "body": "param($path)\nGet-ChildItem $path",
            "expectedOutputFormat": "text",
        },
        "grammarPatterns": [{"pattern": "list files", "isAlias": False, "examples": ["list files"]}],
        "sandbox": {
            "allowedCmdlets": ["Get-ChildItem"],
            "allowedPaths": ["."],
            "allowedModules": [],
            "maxExecutionTime": 30,
            "networkAccess": False,
        },
    }
    res = home.validate(home.write("list.recipe.json", recipe))
    assert res.rc == 1, res.combined
    assert "script_interpreter_missing" in res.combined
    assert "pwsh" in res.combined


# ---------------------------------------------------------------- AnythingLLM code blocks


def anythingllm_flow() -> dict:
    return {
        "name": "Greeting maker",
        "description": "Builds a greeting in code",
        "active": True,
        "steps": [
            {
                "type": "start",
                "config": {
                    "variables": [
                        {"name": "greeting", "value": "Hi", "description": "The word"},
                        {"name": "who", "value": "Ada", "description": "The person"},
                    ]
                },
            },
            {
                "type": "code",
                "config": {
                    "language": "javascript",
                    "code": "return greeting + ', ' + who + '!';",
                    "resultVariable": "message",
                },
            },
        ],
    }


@needs_deno
def test_anythingllm_code_block_imports_as_javascript_code_node_and_runs(home):
    src = home.write("greeting.json", anythingllm_flow())
    out = home.root / "greeting.flow.json"
    res = home.import_(src, out)
    assert res.rc == 0, res.combined
    wf = json.loads(out.read_text())
    codes = [n for n in wf["nodes"] if n["type"] == "code"]
    assert len(codes) == 1
    data = codes[0]["data"]
    assert data["language"] == "javascript"
    assert data["outputVar"] == "message"
    assert {"greeting", "who"} <= set(data.get("inputs", {}))

    res, doc = home.run_json(src)
    assert res.rc == 0, res.combined
    assert doc["vars"]["message"] == "Hi, Ada!"

    res, doc = home.run_json(out, "--var", "who=Alan")
    assert res.rc == 0, res.combined
    assert doc["vars"]["message"] == "Hi, Alan!"


def test_anythingllm_code_block_exports_back(home):
    src = home.write("greeting.json", anythingllm_flow())
    imported = home.root / "greeting.flow.json"
    assert home.import_(src, imported).rc == 0
    out = home.root / "back.json"
    res = cli("export", str(imported), "--to", "anythingllm", "-o", str(out), env=home.env, cwd=home.root)
    assert res.rc == 0, res.combined
    steps = json.loads(out.read_text())["steps"]
    blocks = [b for b in steps if b["type"] == "code"]
    assert len(blocks) == 1
    assert blocks[0]["config"]["code"] == anythingllm_flow()["steps"][1]["config"]["code"]
    assert blocks[0]["config"].get("resultVariable") == "message"
