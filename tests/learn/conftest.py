"""Fixtures for learning and routing: an isolated data and config folder per test, the CLI run
in-process (``cli(...)`` → exit code, stdout, stderr), the fake OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.flows.library import set_default_library
from tests.fakes.openai_server import FakeLLMServer


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    set_default_library(None)
    yield tmp_path
    set_default_library(None)


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    def call(*args: str) -> Result:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return call


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s
