"""Issue 30 item 15: the inspector's policy section says the node's retries are the only ones."""

from __future__ import annotations

from editor.panels.variables import PolicySection


def test_retry_hint_says_the_node_policy_is_the_only_retry_layer(qtbot) -> None:
    section = PolicySection()
    qtbot.addWidget(section)
    section.load({"errorMode": "retry", "maxRetries": 2, "retryDelayMs": 500})
    text = section.hint.text()
    assert "only retries" in text and "provider's own HTTP retries are off" in text and "at most 3 requests" in text
