"""The serving commands' refusals (exit 2, a clear message, nothing listening) and the small
rules they rest on (engine/serving/auth.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.serving.auth import is_loopback, signature_of, signature_ok, split_host_port, token_ok
from tests.serving.conftest import ROOT, env_for


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--port", "99999"], "--port 99999 is not a port number"),
        (["serve", "--provider", "nope"], "Unknown LLM provider 'nope'"),
        (["serve", "--host", "192.0.2.1"], "refusing to listen on 192.0.2.1 without a token"),
        (["mcp"], "usage: flowdesk mcp serve"),
        (["mcp", "serve", "--http", "127.0.0.1:port"], "--http: 'port' is not a port number"),
        (["mcp", "serve", "--http", "[::]:0"], "refusing to listen on :: without a token"),
    ],
)
def test_refused_before_listening(args: list[str], message: str, tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    env = env_for(tmp_path)
    env.pop("FLOWDESK_TOKEN", None)
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 2, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr


def test_the_rules() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "example.com", ""))
    assert split_host_port("127.0.0.1:80", 1) == ("127.0.0.1", 80)
    assert split_host_port("[::1]:9", 1) == ("::1", 9) and split_host_port("localhost", 7) == ("localhost", 7)
    with pytest.raises(ValueError, match="names no host"):
        split_host_port(":80", 1)
    assert token_ok("Bearer abc", "abc") and token_ok("bearer  abc ", "abc")
    assert not token_ok("Bearer abd", "abc") and not token_ok(None, "abc") and not token_ok("Basic abc", "abc")
    body = b'{"a": 1}'
    sig = signature_of("k", body)
    assert sig.startswith("sha256=") and len(sig) == 7 + 64
    assert signature_ok("k", body, sig) and signature_ok("k", body, sig.upper().replace("SHA256", "sha256"))
    assert not signature_ok("k", body + b" ", sig) and not signature_ok("k", body, None)
