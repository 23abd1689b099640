"""The validator's data-flow rules in the cases its faster passes treat apart.

``validate`` reuses the execution cycles found among the nodes reachable from Start for the
fan-in and loop rules and runs one more pass over the other nodes only; it reads each
node's data once, recursing into nested values (with an explicit stack past a depth).
These tests pin what that must keep: cycles outside the reachable part still excuse their
returning links, deep data is still searched, and the warnings keep their order.
"""

from __future__ import annotations

from typing import Any

from engine import validate

from .flows import agent, flow, link, start


def _codes(wf: Any, code: str) -> list[tuple[str, ...]]:
    return [i.node_ids for i in validate(wf) if i.code == code]


def test_fan_in_inside_an_unreachable_cycle() -> None:
    # s -> a; x <-> y is a cycle nothing reaches. z links into y too: x's link comes back round
    # y's cycle, so z is the only branch arriving and there is no fan-in; with w as well, there is.
    wf = flow(
        [start(), agent("a"), agent("x"), agent("y"), agent("z")],
        [link("s", "a"), link("x", "y"), link("y", "x"), link("z", "y")],
    )
    assert _codes(wf, "fan_in_without_join") == []
    wf2 = flow(
        [start(), agent("a"), agent("x"), agent("y"), agent("z"), agent("w")],
        [link("s", "a"), link("x", "y"), link("y", "x"), link("z", "y"), link("w", "y")],
    )
    assert _codes(wf2, "fan_in_without_join") == [("y", "z", "w")]
    assert [i.code for i in validate(wf2) if i.code == "unreachable"] == ["unreachable"]


def test_fan_in_from_a_reachable_cycle_and_from_outside() -> None:
    # a -> b -> c -> b (a cycle reachable from Start) and d -> b from a branch of s
    wf = flow(
        [start(), agent("a"), agent("b"), agent("c"), agent("d")],
        [link("s", "a"), link("s", "d"), link("a", "b"), link("b", "c"), link("c", "b"), link("d", "b")],
    )
    assert _codes(wf, "fan_in_without_join") == [("b", "a", "d")]


def test_without_a_start_the_cycles_are_found_over_every_node() -> None:
    wf = flow(
        [agent("a"), agent("b"), agent("c"), agent("d")],
        [link("a", "b"), link("b", "a"), link("c", "a"), link("d", "a")],
    )
    assert _codes(wf, "fan_in_without_join") == [("a", "c", "d")]


def _nested(depth: int) -> Any:
    value: Any = "{{bottom}}"
    for i in range(depth):
        value = {"next": value, "here": f"${{level{i}}}"} if i % 2 else [value, f"{{{{level{i}}}}}"]
    return value


def test_references_deep_in_node_data_are_found_without_recursion_errors() -> None:
    wf = flow([start(), {"id": "a", "type": "agent", "data": {"model": "m", "blob": _nested(600)}}], [link("s", "a")])
    names = [
        i.message.split("nothing is named '")[1].split("'")[0] for i in validate(wf) if i.code == "unknown_reference"
    ]
    assert len(names) == 601 and set(names) == {"bottom", *(f"level{i}" for i in range(600))}


def test_unknown_reference_warnings_keep_their_order() -> None:
    # Within a node: fields last to first, each nested value's strings before the next field's;
    # text with a brace but no reference, and known names, give nothing.
    data = {
        "model": "m",
        "agentName": "A",
        "systemPrompt": "{{one}} {not a ref} ${ two } {{one}}",
        "userPrompt": "{{PREVIOUS_OUTPUT}} {{known}}",
        "headers": [{"name": "x", "value": "{{three}}"}, {"value": "${four.a[0]}"}],
        "outputVar": "known",
    }
    wf = flow([start(), {"id": "a", "type": "agent", "data": data}], [link("s", "a")])
    got = [
        (i.node_ids, i.message.split(" refers to ")[1].split(", but")[0])
        for i in validate(wf)
        if i.code == "unknown_reference"
    ]
    assert got == [
        (("a",), "'${four.a[0]}' in headers.1.value"),
        (("a",), "'{{three}}' in headers.0.value"),
        (("a",), "'{{one}}' in systemPrompt"),
        (("a",), "'${ two }' in systemPrompt"),
    ]
