"""A Temporal server that cannot be reached is named with the reason a person reads
("Connection refused"), not the SDK's Rust error text (``tonic::transport::Error(...)``)."""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("temporalio", reason="the 'temporal' extra is not installed (pip install -e '.[temporal]')")

from engine.temporal import TemporalUnavailable  # noqa: E402
from engine.temporal.client import connect, connect_reason  # noqa: E402


def test_a_refused_connection_says_why_in_words() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TemporalUnavailable) as refused:
        asyncio.run(connect(f"127.0.0.1:{port}"))
    text = str(refused.value)
    assert text.startswith(f"cannot reach the Temporal server at 127.0.0.1:{port} (namespace default): ")
    assert "tonic" not in text and "ConnectError" not in text
    assert "refused" in text.lower()


def test_the_reason_is_found_inside_the_sdk_text() -> None:
    dns = RuntimeError(
        "Failed client connect: Server connection error: tonic::transport::Error(Transport, ConnectError(ConnectError("
        '"dns error", Custom { kind: Uncategorized, error: "failed to lookup address information: Name or service not '
        'known" })))'
    )
    assert connect_reason(dns) == "failed to lookup address information: Name or service not known"
    assert connect_reason(RuntimeError("plain words")) == "plain words"
