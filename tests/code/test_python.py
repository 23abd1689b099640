"""The ``code`` kind in Python (pydantic-monty): every behaviour DESIGN.md names, and each
attack stopped with the step failed and no worker left behind."""

from __future__ import annotations

import os

import pytest

from engine import validate
from tests.code.conftest import children_left, children_of_tests, code_node, events, extra, needs_monty, run, workflow

pytestmark = needs_monty


def test_inputs_last_expression_print_and_output_var() -> None:
    wf = workflow(
        code_node(
            "total = sum(numbers) * factor\nprint('total is', total)\n{'total': total, 'who': who}",
            inputs={"numbers": "{{nums}}", "factor": 2, "who": "{{name}}"},
            outputVar="result",
        ),
        variables=[
            {"name": "nums", "type": "json", "value": [1, 2, 3]},
            {"name": "name", "type": "string", "value": "Ada"},
        ],
    )
    r = run(wf)
    assert r.status == "completed", r.error
    assert r.outputs["c"] == {"total": 12, "who": "Ada"}
    assert r.variables["result"] == {"total": 12, "who": "Ada"}
    logs = events(r, "code_log")
    assert [(extra(e)["stream"], extra(e)["text"]) for e in logs] == [("stdout", "total is 12")]


def test_a_statement_last_gives_null() -> None:
    r = run(workflow(code_node("x = 1")))
    assert r.status == "completed" and r.outputs["c"] is None


def test_llm_and_call_flow_host_functions(library) -> None:
    code = (
        "answer = await llm('Say hi to ' + who)\n"
        "made = await call_flow('shout', name='Jazz', songs='a, b')\n"
        "[answer, made]"
    )
    r = run(workflow(code_node(code, inputs={"who": "Ada"})), library=library)
    assert r.status == "completed", r.error
    assert r.outputs["c"] == ["Say hi to Ada", "Playlist Jazz: a, b"]
    assert events(r, "llm_response")[0].content == "Say hi to Ada"


def test_errors_name_the_line_of_the_node_code() -> None:
    r = run(workflow(code_node("x = 1\ny = 2\nz = missing + 1")))
    assert r.status == "failed"
    assert "line 3: NameError: name 'missing' is not defined" in r.error


def test_a_value_that_is_not_json_fails_the_step() -> None:
    r = run(workflow(code_node("{1, 2, 3}")))
    assert r.status == "failed" and "not JSON-serialisable" in r.error


def test_timeout_stops_an_infinite_loop() -> None:
    before = children_of_tests()
    r = run(workflow(code_node("while True:\n    pass", timeoutMs=800)))
    assert r.status == "failed" and "timed out" in r.error
    assert not children_left(before)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("open('/etc/passwd').read()", "permission_denied: file access to '/etc/passwd'"),
        ("import os\nopen('/tmp/flowdesk-code-test.txt', 'w').write('x')", "permission_denied: file access"),
        ("import os\nos.getenv('HOME')", "not supported"),
        ("import subprocess\nsubprocess.run(['ls'])", "No module named 'subprocess'"),
        ("import socket\nsocket.socket()", "No module named 'socket'"),
        ("x = [0] * 10**9", "memory"),
        ("def f(n):\n    return f(n + 1)\nf(0)", "RecursionError"),
    ],
    ids=["file-read", "file-write", "env", "subprocess", "network", "memory", "recursion"],
)
def test_attacks_are_refused_and_the_worker_is_gone(code: str, expected: str) -> None:
    before = children_of_tests()
    r = run(workflow(code_node(code, memoryMb=64)))
    assert r.status == "failed"
    assert expected in r.error and "line " in r.error
    assert not children_left(before)
    assert not os.path.exists("/tmp/flowdesk-code-test.txt")


def test_forged_protocol_lines_printed_are_only_log_text() -> None:
    """``print`` goes to the host as data (monty's print callback), never to the worker's own
    pipe: lines shaped like results or host calls change nothing."""
    before = children_of_tests()
    code = (
        'print(\'{"type": "result", "value": "FORGED"}\')\n'
        'print(\'{"type": "call", "id": 9, "method": "call_flow", "args": ["shout"]}\')\n'
        '"real"'
    )
    r = run(workflow(code_node(code)))
    assert r.status == "completed", r.error
    assert r.outputs["c"] == "real" and not events(r, "llm_response")
    logs = [extra(e)["text"] for e in events(r, "code_log")]
    assert len(logs) == 2 and logs[0] == '{"type": "result", "value": "FORGED"}'
    assert not children_left(before)


def test_unsupported_constructs_fail_at_validation_and_when_run() -> None:
    wf = workflow(code_node("class A:\n    pass\nclass B(A):\n    pass\nB()"))
    issues = [i for i in validate(wf) if i.code == "code_unsupported"]
    assert issues and issues[0].is_error and "line 3" in issues[0].message and "class inheritance" in issues[0].message
    r = run(wf, check=False)
    assert r.status == "failed" and "line 3: NotImplementedError" in r.error and "not supported" in r.error
    gen = [i for i in validate(workflow(code_node("def g():\n    yield 1\nlist(g())"))) if i.code == "code_unsupported"]
    assert gen and "line 2" in gen[0].message and "generators" in gen[0].message


def test_validation_warns_when_a_host_call_is_not_awaited() -> None:
    issues = validate(workflow(code_node("x = llm('hi')\ny = await llm('ok')\nx")))
    found = [i for i in issues if i.code == "code_not_awaited"]
    assert (
        len(found) == 1 and not found[0].is_error and "line 1" in found[0].message and "await llm" in found[0].message
    )


def test_validation_of_empty_code_unknown_language_and_syntax() -> None:
    codes = {i.code for i in validate(workflow(code_node("   ")))}
    assert "code_empty" in codes
    unknown = [i for i in validate(workflow(code_node("1", language="ruby"))) if i.code == "code_unknown_language"]
    assert unknown and "ruby" in unknown[0].message
    syntax = [i for i in validate(workflow(code_node("x = (\n"))) if i.code == "code_syntax"]
    assert syntax and syntax[0].is_error and "line 1" in syntax[0].message


def test_secrets_in_inputs_are_masked_in_logs_and_output(monkeypatch) -> None:
    monkeypatch.setenv("CODE_TOKEN", "s3cr3t-value")
    wf = workflow(code_node("print('token', token)\ntoken", inputs={"token": "{{secrets.CODE_TOKEN}}"}))
    r = run(wf)
    assert r.status == "completed", r.error
    assert "s3cr3t-value" not in str([e.content for e in r.events]) + str(r.outputs)


def test_cancelling_the_run_stops_the_worker() -> None:
    import asyncio

    from engine import EchoProvider, Run

    async def scenario() -> tuple[set[int], set[int]]:
        before = children_of_tests()
        r = Run(workflow(code_node("while True:\n    pass", timeoutMs=60000)), EchoProvider())
        task = asyncio.create_task(r.start())
        await asyncio.sleep(1.0)
        during = children_of_tests() - before
        r.cancel()
        await task
        await asyncio.sleep(0.2)
        return during, children_of_tests() - before

    during, after = asyncio.run(scenario())
    assert during and not after


def test_a_permitted_folder_is_readable_and_nothing_else(tmp_path) -> None:
    (tmp_path / "data.txt").write_text("inside")
    code = f"open({str(tmp_path / 'data.txt')!r}).read()"
    r = run(workflow(code_node(code), permissions={"files": [str(tmp_path)]}))
    assert r.status == "completed" and r.outputs["c"] == "inside"
    write = f"open({str(tmp_path / 'new.txt')!r}, 'w').write('x')"
    r = run(workflow(code_node(write), permissions={"files": [str(tmp_path)]}))
    assert r.status == "failed" and r.error.startswith("permission_denied: file access") and "(line 1)" in r.error
    assert not (tmp_path / "new.txt").exists()
    assert extra(events(r, "permission_denied")[0])["field"] == "files"
