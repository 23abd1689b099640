"""``validate(..., warnings=False)``: the errors alone, the same as the full list's errors
(what ``flowdesk run`` checks before it starts; it skips the passes that can only warn)."""

from __future__ import annotations

from engine import validate
from tests.engine.flows import agent, approval, flow, link, start


def test_errors_only_are_the_full_lists_errors() -> None:
    bad_approve = agent("b", "{{nobody}}")  # an unknown name: a data-flow warning
    bad_approve["data"]["approve"] = "sometimes"  # an agent's own rule: an error
    cases = [
        flow([start(), agent("a", "{{PREVIOUS_OUTPUT}}")], [link("s", "a")]),  # nothing wrong
        flow([start(), bad_approve, agent("c", model="")], [link("s", "b"), link("b", "c")]),
        flow([start(), approval("p"), agent("x")], [link("s", "p"), link("p", "x", "nowhere")]),
        flow([agent("lonely", "{{missing}}")], []),  # no start: an error, and warnings
    ]
    for wf in cases:
        full = validate(wf)
        assert validate(wf, warnings=False) == [i for i in full if i.is_error]
    assert any(i.code == "agent_bad_approve" for i in validate(cases[1], warnings=False))
    assert any(not i.is_error for i in validate(cases[1]))  # (the warnings were there to skip)
