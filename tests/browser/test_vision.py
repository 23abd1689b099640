"""The model-backed WebFlow methods show a vision model a picture of the page (issue 34, item 2):
an ``image_url`` part whose data is the viewport's PNG when the node's model reads images, none
when it does not; the picture reaches the model only (not the run record), and stays small."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from engine import Run
from engine.browser.host import host_for_loop
from engine.browser.scope import Guard, Scope
from engine.browser.shots import page_image_for_model
from engine.code.deno import deno_available
from engine.graph.permissions import access_for
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from tests.browser.conftest import settled_chromium
from tests.browser.site import Site
from tests.browser.test_webflow import script_flow
from tests.fakes.openai_server import FakeLLMServer, openai_text

needs_deno = pytest.mark.skipif(not deno_available(), reason="WebFlow scripts need Deno (the code extra)")

ASKING_SCRIPT = """async function execute(browser, params) {
  await browser.navigateTo(params.url);
  const field = await browser.extractComponent(
    { typeName: "UserField", schema: "interface UserField { cssSelector: string }" }, "the user name box");
  const state = await browser.checkPageState("a login form is shown");
  const answer = await browser.queryContent("What does the button say?");
  return { success: true, data: { field, state, answer } };
}"""

API_KEY = "sk-vision-test-key-0123456789"


def provider(server: FakeLLMServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key=API_KEY, http=HttpSettings(maxRetries=0))


def answers() -> tuple[Any, ...]:
    return (
        openai_text('{"cssSelector": "#user"}'),
        openai_text('{"matched": true, "explanation": "a form"}'),
        openai_text('{"answered": true, "answerText": "Log in", "confidence": 0.8}'),
    )


def user_content(recorded: Any) -> Any:
    return next(m["content"] for m in recorded.json["messages"] if m["role"] == "user")


async def ask_about_the_login_page(site: Site, model: str) -> tuple[Run, FakeLLMServer]:
    with FakeLLMServer() as llm:
        llm.push(*answers())
        wf = script_flow(ASKING_SCRIPT, params={"url": site.url("/login")}, model=model)
        run = Run(wf, provider(llm))
        await run.start()
    assert str(run.status) == "completed", [e.content for e in run.events if e.type == "error"]
    return run, llm


@needs_deno
async def test_a_vision_model_is_shown_the_page_as_a_png() -> None:
    with Site() as site:
        run, llm = await ask_about_the_login_page(site, "gpt-4o-mini")
    assert len(llm.requests) == 3  # extractComponent, checkPageState, queryContent
    for recorded in llm.requests:
        content = user_content(recorded)
        assert isinstance(content, list), content
        text = [p for p in content if p["type"] == "text"]
        images = [p for p in content if p["type"] == "image_url"]
        assert len(text) == 1 and "Log in" in text[0]["text"]  # the page text still goes
        assert len(images) == 1
        url = images[0]["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        png = base64.b64decode(url.split(",", 1)[1], validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and 0 < len(png) <= 1_000_000
        assert API_KEY not in recorded.body.decode()  # the key goes in the header only
        assert recorded.headers["authorization"] == f"Bearer {API_KEY}"
    assert run.outputs["b"]["data"]["field"] == {"cssSelector": "#user"}
    # The run record notes that a picture went (its size), never the picture itself.
    asked = [e for e in run.events if e.type == "browser_action" and e.extra["action"] == "extractComponent"]
    assert asked[0].extra["image"]["mime"] == "image/png" and asked[0].extra["image"]["size"] > 0
    record = json.dumps([e.to_wire() for e in run.events])
    assert "base64," not in record and "iVBORw0KGgo" not in record  # no PNG (base64 of its signature)
    assert not [e for e in run.events if e.type == "browser_screenshot"]
    assert settled_chromium() == []


@needs_deno
async def test_a_text_only_model_gets_the_text_alone() -> None:
    with Site() as site:
        run, llm = await ask_about_the_login_page(site, "llama3.2")
    assert len(llm.requests) == 3
    for recorded in llm.requests:
        content = user_content(recorded)
        assert isinstance(content, str) and "Log in" in content
        assert "image_url" not in recorded.body.decode()
    asked = [e for e in run.events if e.type == "browser_action" and e.extra["action"] == "checkPageState"]
    assert "image" not in asked[0].extra


NOISE_PAGE = """<html><body style="margin:0"><canvas id="c" width="1280" height="800"></canvas><script>
const c = document.getElementById('c').getContext('2d');
const img = c.createImageData(1280, 800);
for (let i = 0; i < img.data.length; i++) { img.data[i] = i % 4 === 3 ? 255 : Math.floor(Math.random() * 256); }
c.putImageData(img, 0, 0);
</script></body></html>"""


async def test_a_picture_too_large_is_made_smaller() -> None:
    guard = Guard(Scope.of(None), access_for(None, open_by_default=True))
    async with host_for_loop().context(guard) as context:
        page = await context.new_page()
        await page.set_content("<html><body><h1>Small</h1></body></html>")
        small = await page_image_for_model(page)
        assert small is not None and small[1] == "image/png" and small[0].startswith(b"\x89PNG")
        await page.set_content(NOISE_PAGE)  # random pixels: a PNG of several MB
        big = await page_image_for_model(page)
        assert big is not None and len(big[0]) <= 1_000_000
        assert big[1] == "image/jpeg" and big[0].startswith(b"\xff\xd8")
        tiny = await page_image_for_model(page, limit=60_000)  # only a scaled-down JPEG fits
        assert tiny is not None and tiny[1] == "image/jpeg" and len(tiny[0]) <= 60_000
        assert await page_image_for_model(page, limit=10) is None  # nothing fits: no picture
    assert settled_chromium() == []


SECRET = "tok-5ecret-4711-value"


@needs_deno
async def test_the_steps_secrets_stay_out_of_the_models_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SITE_TOKEN", SECRET)
    script = """async function execute(browser, params) {
  await browser.navigateTo(params.url);
  await browser.enterText('#user', params.token);
  return await browser.checkPageState('the user box holds ' + params.token);
}"""
    with Site() as site, FakeLLMServer() as llm:
        llm.push(openai_text('{"matched": true, "explanation": "it does"}'))
        wf = script_flow(script, params={"url": site.url("/login"), "token": "{{secrets.SITE_TOKEN}}"}, model="gpt-4o")
        run = Run(wf, provider(llm))
        await run.start()
    assert str(run.status) == "completed", [e.content for e in run.events if e.type == "error"]
    [recorded] = llm.requests
    body = recorded.body.decode()
    assert SECRET not in body and "the user box holds ••••" in body
    assert any(p["type"] == "image_url" for p in user_content(recorded))


async def test_fields_holding_a_secret_are_shown_empty_and_put_back() -> None:
    form = "<html><body><input id='a' value='{}' style='color: red'><textarea id='t'>{}</textarea></body></html>"
    guard = Guard(Scope.of(None), access_for(None, open_by_default=True))
    async with host_for_loop().context(guard) as context:
        page = await context.new_page()
        await page.set_content(form.format("", ""))
        empty = await page_image_for_model(page)
        await page.set_content(form.format(SECRET, "note " + SECRET))
        shown = await page_image_for_model(page)
        hidden = await page_image_for_model(page, hide=[SECRET])
        assert empty is not None and shown is not None and hidden is not None
        assert hidden[0] == empty[0] != shown[0]  # the picture of the empty form, to the pixel
        assert await page.input_value("#a") == SECRET  # the page is as it was
        assert await page.evaluate("document.getElementById('a').getAttribute('style')") == "color: red;"
        assert await page.evaluate("document.querySelectorAll('[data-flowdesk-hidden]').length") == 0
    assert settled_chromium() == []
