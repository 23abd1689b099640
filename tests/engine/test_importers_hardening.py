"""Issue 30: literal credentials (short, with a space, Basic, api keys in headers, query rows and
URLs) kept out of imported files, warned about by validate and by export; AnythingLLM blocks
whose ``config`` is not an object refused clearly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import parse_workflow, validate
from engine.flows.importers import ImportRefused, export_anythingllm, import_flow
from engine.nodes.credentials import literal_credentials, looks_like_literal_credential

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name, value",
    [
        ("Authorization", "Bearer 1234567890"),
        ("Authorization", "Bearer  abc12345"),
        ("X-Custom", "Bearer 1234567890"),
        ("X-Custom", "Token t0k3"),
        ("Authorization", "Basic dXNlcjpw"),
        ("X-API-Key", "k3y1"),
        ("api_key", "abcd1234"),
        ("token", "tok 12 34"),
        ("Authorization", "my secret value"),
    ],
)
def test_short_and_spaced_literal_credentials_are_detected(name: str, value: str) -> None:
    assert looks_like_literal_credential(value, name)


@pytest.mark.parametrize(
    "name, value",
    [
        ("Authorization", "Bearer {{secrets.API_KEY}}"),
        ("Authorization", "Bearer ${apiKey}"),
        ("Accept", "application/json"),
        ("X-Request-Id", "123e4567-e89b-12d3-a456-426614174000"),
        ("q", "cats"),
    ],
)
def test_references_and_ordinary_values_are_not_credentials(name: str, value: str) -> None:
    assert not looks_like_literal_credential(value, name)


def anythingllm(config: dict[str, Any] | Any) -> dict[str, Any]:
    return {
        "name": "Digest",
        "steps": [{"type": "start", "config": {"variables": []}}, {"type": "apiCall", "config": config}],
    }


def http_data(result: Any) -> dict[str, Any]:
    return next(n["data"] for n in result.workflow["nodes"] if n["type"] == "http")


def test_import_strips_short_bearer_basic_and_url_api_key() -> None:
    doc = anythingllm(
        {
            "url": "https://api.example.com/v1/items?api_key=abc12345&q=cats",
            "method": "GET",
            "headers": [
                {"key": "Authorization", "value": "Bearer 1234567890"},
                {"key": "X-Other", "value": "Basic dXNlcjpw"},
            ],
        }
    )
    result = import_flow(doc)
    text = json.dumps(result.workflow)
    assert "1234567890" not in text and "dXNlcjpw" not in text and "abc12345" not in text
    data = http_data(result)
    assert data["headers"][0]["value"] == "Bearer {{secrets.AUTHORIZATION}}"
    assert data["headers"][1]["value"] == "Basic {{secrets.X_OTHER}}"
    assert data["url"] == "https://api.example.com/v1/items?api_key={{secrets.API_KEY}}&q=cats"
    assert sum("literal credential" in w for w in result.warnings) == 3


def test_import_strips_a_credential_from_headers_written_as_an_object() -> None:
    result = import_flow(anythingllm({"url": "https://x.example/", "headers": {"X-API-Key": "short1"}}))
    assert "short1" not in json.dumps(result.workflow)


def test_validate_warns_about_short_literal_bearer_and_url_key() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {
                    "id": "h",
                    "type": "http",
                    "data": {
                        "url": "https://api.example.com/?key=abcd1234",
                        "headers": [{"key": "Authorization", "value": "Bearer 1234567890"}],
                        "query": [{"key": "token", "value": "t0k3n"}],
                    },
                },
            ],
            "connections": [{"source": "s", "target": "h"}],
        }
    )
    warnings = [i.message for i in validate(wf) if i.code == "literal_credential"]
    assert len(warnings) == 3
    assert any("'Authorization'" in w for w in warnings) and any("query parameter 'token'" in w for w in warnings)
    assert any("URL's query parameter 'key'" in w for w in warnings)


def test_export_warns_when_copying_a_literal_credential(tmp_path: Path) -> None:
    wf = {
        "name": "x",
        "nodes": [
            {"id": "s", "type": "start", "data": {}},
            {
                "id": "h",
                "type": "http",
                "data": {
                    "url": "https://api.example.com/",
                    "headers": [{"key": "Authorization", "value": "Bearer 1234567890"}],
                },
            },
        ],
        "connections": [{"source": "s", "target": "h"}],
    }
    warnings: list[str] = []
    export_anythingllm(parse_workflow(wf), warnings)
    assert len(warnings) == 1 and "'Authorization'" in warnings[0] and "1234567890" not in warnings[0]
    src = tmp_path / "x.flow.json"
    src.write_text(json.dumps(wf))
    r = subprocess.run(
        [sys.executable, "-m", "engine.cli", "export", str(src), "--to", "anythingllm"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        env={**os.environ, "FLOWDESK_CONFIG_DIR": str(tmp_path / "c"), "FLOWDESK_DATA_DIR": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    assert "warning:" in r.stderr and "credential" in r.stderr


@pytest.mark.parametrize("config", ["oops", 3, ["a", "b"], True])
def test_anythingllm_block_config_not_an_object_is_refused_clearly(config: Any) -> None:
    with pytest.raises(ImportRefused) as err:
        import_flow(anythingllm(config))
    assert "steps[1].config is not an object" in str(err.value)
    doc = {"name": "x", "steps": [{"type": "start", "config": "vars"}]}
    with pytest.raises(ImportRefused, match=r"steps\[0\]\.config is not an object"):
        import_flow(doc)
    doc = {"name": "x", "steps": [{"type": "start", "config": {"variables": 5}}]}
    with pytest.raises(ImportRefused, match="not a list"):
        import_flow(doc)


def test_literal_credentials_lists_each_place() -> None:
    found = literal_credentials({"url": "https://u:pw12345@h.example/?sig=abcdef", "headers": [], "query": []})
    assert found == ["the URL's query parameter 'sig'", "the URL's password"]
