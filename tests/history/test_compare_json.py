"""Issue 30, item 27: Compare is reachable from the Run menu, and JSON outputs are compared key
by key (structurally), not word by word."""

from __future__ import annotations

import asyncio


def test_json_changes_compares_key_by_key_ignoring_key_order():
    from editor.history.compare import json_changes

    a = {"name": "Ann", "tags": ["a", "b"], "n": 1, "gone": True}
    b = {"n": 2, "tags": ["a", "c", "d"], "name": "Ann", "new": {"x": 1}}
    assert json_changes(a, b) == [
        ("tags[1]", "changed", "b", "c"),
        ("tags[2]", "added", None, "d"),
        ("n", "changed", 1, 2),
        ("gone", "removed", True, None),
        ("new", "added", None, {"x": 1}),
    ]
    assert json_changes({"a": 1, "b": 2}, {"b": 2, "a": 1}) == []
    assert json_changes({"a": 1}, {"a": 1.5}) == [("a", "changed", 1, 1.5)]


def test_compare_window_diffs_json_outputs_structurally(qtbot):
    from editor.history.compare import CompareWindow
    from engine import EchoProvider, Run, parse_workflow
    from tests.engine.flows import agent, link, start

    def run(text: str):
        r = Run(
            parse_workflow(
                {"nodes": [start("s", text), agent("a", "{{PREVIOUS_OUTPUT}}")], "connections": [link("s", "a")]}
            ),
            EchoProvider(),
        )
        asyncio.run(r.start())
        return r

    ra = run('{"name": "Ann", "tags": ["a", "b"], "n": 1}')
    rb = run('{"n": 2,\n "name": "Ann", "tags": ["a", "c"]}')
    win = CompareWindow("a" * 32, ra.workflow, ra.events, "b" * 32, rb.workflow, rb.events)
    qtbot.addWidget(win)
    win.select_node("a")
    text = win.diff_view.toPlainText()
    assert "key by key: 2 differences" in text
    assert "tags[1]" in text and "\nn\n" in f"\n{text}\n".replace("\t", "\n")
    assert "name" not in text  # unchanged keys are not listed
    assert "line-through" not in win.diff_view.toHtml()  # not the word diff
