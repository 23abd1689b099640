"""Images in a model request (engine.llm.vision): which models are sent them, and the request
shapes of the OpenAI-compatible and Anthropic providers; other providers get the text alone."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import AgentInvocation, NoToolsContext
from engine.llm.config import ModelInfo, providers
from engine.llm.echo import EchoProvider
from engine.llm.openai import OpenAIProvider
from engine.llm.registry import build_provider, make_resolver
from engine.llm.vision import (
    image_data_url,
    model_accepts_images,
    provider_accepts_images,
    split_data_url,
)
from tests.fakes.anthropic_server import anthropic_text

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
KEY = "sk-ant-vision-secret-0123456789"


def invocation(model: str, *images: str) -> AgentInvocation:
    return AgentInvocation(
        "n1", "Browser", "You look at pages.", "What is shown?", model, "low", {}, [], images=list(images)
    )


@pytest.mark.parametrize(
    ("model", "vision"),
    [
        ("gpt-4o-mini", True),
        ("gpt-4o", True),
        ("gpt-4.1-nano", True),
        ("gpt-5-mini", True),
        ("o3", True),
        ("o3-mini", False),
        ("o4-mini", True),
        ("claude-3-5-sonnet-latest", True),
        ("claude-sonnet-4-5", True),
        ("claude-opus-4-1", True),
        ("openai/gpt-4o-mini", True),
        ("anthropic/claude-sonnet-4.5", True),
        ("llava:13b", True),
        ("llama3.2-vision", True),
        ("qwen2.5vl:7b", True),
        ("llama3.2", False),
        ("qwen2.5", False),
        ("gpt-3.5-turbo", False),
        ("echo", False),
        ("", False),
    ],
)
def test_vision_by_model_name(model: str, vision: bool) -> None:
    assert model_accepts_images(model) is vision


def test_the_catalogue_entry_then_the_provider_then_the_name_decide() -> None:
    assert model_accepts_images("gpt-4o", ModelInfo(id="gpt-4o", supportsImages=False)) is False
    assert model_accepts_images("my-model", ModelInfo(id="my-model", supportsImages=True)) is True
    assert model_accepts_images("my-model", ModelInfo(id="my-model"), provider_default=True) is True
    assert model_accepts_images("gpt-4o", None, provider_default=False) is False
    assert model_accepts_images("gpt-4o", ModelInfo(id="gpt-4o")) is True


def test_the_catalogue_flags_and_a_settings_override(isolated_config) -> None:
    table = providers()
    assert table["openai"].model("gpt-4o-mini").supportsImages is True  # type: ignore[union-attr]
    assert table["anthropic"].model("claude-haiku-4-5").supportsImages is True  # type: ignore[union-attr]
    assert table["ollama"].model("llama3.2").supportsImages is None  # type: ignore[union-attr]
    (isolated_config / "settings.json").write_text(
        json.dumps(
            {
                "providers": {
                    "ollama": {"models": [{"id": "my-vision", "supportsImages": True}]},
                    "lmstudio": {"supportsImages": True},
                }
            }
        )
    )
    ollama = build_provider("ollama")
    assert ollama.accepts_images("my-vision") and not ollama.accepts_images("llama3.2")  # type: ignore[attr-defined]
    assert build_provider("lmstudio").accepts_images("local-model")  # type: ignore[attr-defined]
    assert not provider_accepts_images(EchoProvider(), "gpt-4o")  # echo takes no images
    forced = make_resolver("ollama", model="llava")(invocation("llama3.2"))  # --model wins
    assert provider_accepts_images(forced, "llama3.2")


def test_data_urls() -> None:
    url = image_data_url(PNG)
    assert url.startswith("data:image/png;base64,")
    assert split_data_url(url) == ("image/png", url.split(",", 1)[1])
    assert split_data_url("data:image/png;base64,@@@") is None
    assert split_data_url("https://example.com/a.png") is None


def test_openai_sends_image_url_parts_to_a_vision_model_only() -> None:
    p = OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key=KEY)
    url = image_data_url(PNG)
    user = p._initial_messages(invocation("gpt-4o-mini", url))[1]
    assert user == {
        "role": "user",
        "content": [{"type": "text", "text": "What is shown?"}, {"type": "image_url", "image_url": {"url": url}}],
    }
    assert p._initial_messages(invocation("llama3.2", url))[1] == {"role": "user", "content": "What is shown?"}
    assert p._initial_messages(invocation("gpt-4o-mini"))[1] == {"role": "user", "content": "What is shown?"}


def test_anthropic_sends_image_blocks_before_the_text() -> None:
    p = AnthropicProvider(base_url="http://127.0.0.1:9", api_key=KEY)
    url = image_data_url(PNG)
    [user] = p._initial_messages(invocation("claude-sonnet-4-5", url, "data:image/png;base64,not base64!"))
    assert user == {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": url.split(",", 1)[1]}},
            {"type": "text", "text": "What is shown?"},
        ],
    }
    assert KEY not in json.dumps(user)
    text_only = p._initial_messages(invocation("claude-2.1", url))
    assert text_only == [{"role": "user", "content": "What is shown?"}]


async def test_anthropic_request_carries_the_image_and_no_secret(server, fast) -> None:
    server.push(anthropic_text("A login form."))
    p = AnthropicProvider(base_url=server.url, api_key=KEY, **fast)
    result = await p.complete(invocation("claude-haiku-4-5", image_data_url(PNG)), NoToolsContext("n1"))
    assert result.text == "A login form."
    recorded = server.requests[0]
    assert recorded.headers["x-api-key"] == KEY and KEY not in recorded.body.decode()
    [block, text] = recorded.json["messages"][0]["content"]
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == PNG and text == {"type": "text", "text": "What is shown?"}


async def test_echo_ignores_images() -> None:
    inv = invocation("echo", image_data_url(PNG))
    with_image = await EchoProvider().complete(inv, NoToolsContext("n1"))
    without = await EchoProvider().complete(dataclasses.replace(inv, images=[]), NoToolsContext("n1"))
    assert with_image.text == without.text and "base64" not in with_image.text
