"""A plug-in node kind (tests/plugins) runs in the window like a built-in one."""

from __future__ import annotations

import json

from .conftest import choose_provider, followed, press_run, states


def test_a_plugin_kind_runs_in_the_window(example_plugin, qtbot, window, tmp_path):
    path = tmp_path / "t.flow.json"
    path.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "world"}},
                    {"id": "t", "type": "template", "x": 300, "data": {"template": "Hello {{input}}", "case": "upper"}},
                    {"id": "a", "type": "agent", "x": 600, "data": {"agentName": "Echo", "model": "m"}},
                ],
                "connections": [{"source": "s", "target": "t"}, {"source": "t", "target": "a"}],
            }
        )
    )
    assert window.files.open_path(str(path), ask=False)
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        press_run(qtbot, window)
    assert finished.args == ["completed"]
    run = console.bridge.run
    assert run.outputs["t"] == "HELLO WORLD" and run.outputs["a"] == "HELLO WORLD"
    # The plug-in step's end is its node_output event (extra: the handle followed).
    qtbot.waitUntil(lambda: states(window.scene)["a"] == "done", timeout=2000)
    assert states(window.scene)["t"] == "done"
    assert ("s", "output", "t") in followed(window.scene) and ("t", "output", "a") in followed(window.scene)
