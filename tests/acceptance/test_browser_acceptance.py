"""Acceptance: the `browser` kind (steps, WebFlow scripts, `scope`) and the import of WebFlow
definitions, checked from DESIGN.md's names only, through the `flowdesk` command line
against pages served on 127.0.0.1 (port 0) by the test itself."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from tests.acceptance.support import (
    FLOWDESK,
    Home,
    PageServer,
    chain,
    link,
    payload,
    result_of,
    start_node,
    var,
)


def _chromium() -> str | None:
    named = os.environ.get("FLOWDESK_CHROMIUM")
    if named and os.path.exists(named):
        return named
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


HAVE_PLAYWRIGHT = importlib.util.find_spec("playwright") is not None
HAVE_DENO = importlib.util.find_spec("deno") is not None
pytestmark = [
    pytest.mark.skipif(not HAVE_PLAYWRIGHT, reason="the browser extra (playwright) is not installed"),
    pytest.mark.skipif(_chromium() is None, reason="no Chromium on PATH and no FLOWDESK_CHROMIUM"),
]
needs_deno = pytest.mark.skipif(not HAVE_DENO, reason="WebFlow scripts need the code extra (deno)")

FORM = """<!doctype html><html><head><title>Sign in</title></head><body>
<h1>Sign in</h1>
<form id="login" action="/welcome" method="get">
  <input id="user" name="user" value="prefilled">
  <input id="pass" name="pass" type="password">
  <select id="color" name="color"><option value="r">Red</option><option value="g">Green</option></select>
  <input id="agree" name="agree" type="checkbox">
  <button id="go" type="submit">Sign in</button>
</form></body></html>"""

TABLE = """<!doctype html><html><body>
<a id="more" href="/more" data-kind="link">More</a>
<table id="people"><thead><tr><th>Name</th><th>Age</th></tr></thead>
<tbody><tr><td>Ada</td><td>36</td></tr><tr><td>Alan</td><td>41</td></tr></tbody></table>
<table id="plain"><tr><td>City</td><td>Country</td></tr><tr><td>Paris</td><td>France</td></tr></table>
</body></html>"""

LATE = """<!doctype html><html><body><div id="box"></div><script>
setTimeout(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'Loaded later';
document.getElementById('box').appendChild(p); }, 400);
</script></body></html>"""


def welcome(query: str):
    q = parse_qs(query)
    user = q.get("user", [""])[0]
    color = q.get("color", [""])[0]
    agree = q.get("agree", ["off"])[0]
    return "text/html", f'<html><body><p id="welcome">Welcome {user} ({color}, {agree})</p></body></html>'


def pages_with_outside(port_holder: dict) -> dict:
    """Pages that refer to `localhost` (the same server under a host name outside a scope of
    `127.0.0.1`)."""

    def outlink(_q):
        return (
            "text/html",
            f'<html><body><a id="out" href="http://localhost:{port_holder["port"]}/elsewhere">out</a></body></html>',
        )

    def subres(_q):
        port = port_holder["port"]
        return "text/html", (
            f'<html><body><p id="status">page shown</p><img src="http://localhost:{port}/pixel.png">'
            f"<script>fetch('http://localhost:{port}/api').catch(() => {{}});</script></body></html>"
        )

    return {
        "/outlink": outlink,
        "/subres": subres,
        "/elsewhere": ("text/html", "<p>elsewhere</p>"),
        "/pixel.png": ("image/png", b"\x89PNG\r\n\x1a\n"),
        "/api": ("application/json", "{}"),
    }


@pytest.fixture
def site():
    holder: dict = {}
    pages = {
        "/form": ("text/html", FORM),
        "/welcome": welcome,
        "/table": ("text/html", TABLE),
        "/late": ("text/html", LATE),
        **pages_with_outside(holder),
    }
    with PageServer(pages) as server:
        holder["port"] = server.port
        yield server


@pytest.fixture
def home(tmp_path):
    return Home(tmp_path)


def browser(node_id: str = "b", **data) -> dict:
    return {"id": node_id, "type": "browser", "data": data}


def step(action: str, selector: str | None = None, value: str | None = None, **extra) -> dict:
    out = {"action": action, **extra}
    if selector is not None:
        out["selector"] = selector
    if value is not None:
        out["value"] = value
    return out


def outside_requests(site: PageServer) -> list[tuple[str, str]]:
    return [(h, p) for h, p in site.requests if h.startswith("localhost")]


# ---------------------------------------------------------------- steps


def test_form_steps_type_select_click_press_and_browser_action_events(home, site):
    steps = [
        step("goto", value="{{base}}/form"),
        step("type", "#user", "{{who}}"),
        step("type", "#pass", "secret"),
        step("select", "#color", "g"),
        step("click", "#agree"),
        step("press", "#pass", "Enter"),
        step("waitFor", "#welcome"),
        step("extractText", "#welcome"),
    ]
    wf = chain(
        "login",
        [start_node([var("base"), var("who", "nobody")]), browser(steps=steps, outputVar="greeting")],
    )
    path = home.write("login.flow.json", wf)
    res = home.run(path, "--var", f"base={site.base}", "--var", "who=Ada")
    assert res.rc == 0, res.combined
    actions = [payload(e) for e in res.of_type("browser_action", "b")]
    assert [a.get("action") for a in actions] == [s["action"] for s in steps]
    for a in actions:
        assert {"action", "selector", "url", "durationMs"} <= set(a), a
        assert isinstance(a["durationMs"], int | float)
    assert actions[0]["url"].startswith(site.base)
    assert actions[1]["selector"] == "#user"
    assert actions[-1]["url"].startswith(site.base + "/welcome")

    res, doc = home.run_json(path, "--var", f"base={site.base}", "--var", "who=Ada")
    assert res.rc == 0, res.combined
    # `type` clears the field first: the prefilled value is gone.
    assert result_of(doc, "b")["output"] == "Welcome Ada (g, on)"
    assert doc["vars"]["greeting"] == "Welcome Ada (g, on)"


def test_select_by_label(home, site):
    steps = [
        step("goto", value=site.base + "/form"),
        step("select", "#color", "Green"),
        step("click", "#go"),
        step("waitFor", "#welcome"),
        step("extractText", "#welcome"),
    ]
    res, doc = home.run_json(home.write("sel.flow.json", chain("sel", [start_node(), browser(steps=steps)])))
    assert res.rc == 0, res.combined
    assert "(g, off)" in result_of(doc, "b")["output"]


def test_wait_for_content_loaded_by_javascript(home, site):
    steps = [step("goto", value=site.base + "/late"), step("waitFor", "#late"), step("extractText", "#late")]
    res, doc = home.run_json(home.write("late.flow.json", chain("late", [start_node(), browser(steps=steps)])))
    assert res.rc == 0, res.combined
    assert result_of(doc, "b")["output"] == "Loaded later"


def test_extract_attribute_and_tables_keyed_by_header(home, site):
    steps = [
        step("goto", value=site.base + "/table"),
        step("extractAttribute", "#more", "data-kind"),
        step("extractTable", "#people"),
        step("extractTable", "#plain"),
    ]
    res, doc = home.run_json(home.write("table.flow.json", chain("table", [start_node(), browser(steps=steps)])))
    assert res.rc == 0, res.combined
    attr, people, plain = result_of(doc, "b")["output"]
    assert attr == "link"
    assert people == [{"Name": "Ada", "Age": "36"}, {"Name": "Alan", "Age": "41"}]
    assert plain == [{"City": "Paris", "Country": "France"}]


def test_screenshot_logs_browser_screenshot(home, site):
    steps = [step("goto", value=site.base + "/table"), step("screenshot")]
    before = set(os.listdir(home.root))
    res = home.run(home.write("shot.flow.json", chain("shot", [start_node(), browser(steps=steps)])))
    assert res.rc == 0, res.combined
    shots = res.of_type("browser_screenshot", "b")
    assert len(shots) == 1, res.stdout
    # Stored in the run record, not as a loose file beside the workflow.
    assert not [f for f in set(os.listdir(home.root)) - before if f.endswith(".png")]


def test_a_step_timeout_fails_the_step_and_takes_the_error_handle(home, site):
    steps = [step("goto", value=site.base + "/table"), step("waitFor", "#never-there", timeoutMs=700)]
    wf = chain("missing", [start_node(), browser(steps=steps)], extra_links=[link("b", "h", "error")])
    wf["nodes"].append(
        {
            "id": "h",
            "type": "agent",
            "x": 400,
            "y": 300,
            "data": {"agentName": "handler", "userPrompt": "failed: {{input}}"},
        }
    )
    t0 = time.monotonic()
    res, doc = home.run_json(home.write("missing.flow.json", wf))
    assert time.monotonic() - t0 < 60
    assert res.rc == 0, res.combined
    assert result_of(doc, "b")["status"] == "failed"
    assert result_of(doc, "h")["status"] == "done"


# ---------------------------------------------------------------- scope


def scoped(steps: list[dict], **data) -> dict:
    return chain(
        "scoped", [start_node(), browser(steps=steps, scope={"type": "site", "domains": ["127.0.0.1"]}, **data)]
    )


def test_goto_outside_scope_fails_outside_scope_naming_the_url(home, site):
    target = f"http://localhost:{site.port}/elsewhere"
    res = home.run(home.write("out.flow.json", scoped([step("goto", value=target)])))
    assert res.rc == 1, res.combined
    text = res.text_of("b")
    assert "outside_scope" in text
    assert target in text or f"localhost:{site.port}" in text
    assert not outside_requests(site), "the navigation was sent"


def test_redirect_outside_scope_fails_outside_scope_before_it_is_followed(home, site):
    site.pages["/hop"] = ("redirect", f"http://localhost:{site.port}/elsewhere")
    res = home.run(home.write("hop.flow.json", scoped([step("goto", value=site.base + "/hop")])))
    assert res.rc == 1, res.combined
    assert "outside_scope" in res.text_of("b")
    assert "/hop" in site.paths()
    assert not outside_requests(site), "the redirect was followed out of the scope"


def test_link_click_outside_scope_fails_outside_scope(home, site):
    steps = [step("goto", value=site.base + "/outlink"), step("click", "#out"), step("waitFor", value="1000")]
    res = home.run(home.write("click.flow.json", scoped(steps)))
    assert res.rc == 1, res.combined
    assert "outside_scope" in res.text_of("b")
    assert (f"localhost:{site.port}", "/elsewhere") not in site.requests


def test_sub_resources_outside_scope_are_blocked_not_sent_and_the_step_goes_on(home, site):
    steps = [step("goto", value=site.base + "/subres"), step("waitFor", value="800"), step("extractText", "#status")]
    res, doc = home.run_json(home.write("sub.flow.json", scoped(steps)))
    assert res.rc == 0, res.combined
    assert result_of(doc, "b")["output"] == "page shown"
    assert "/subres" in site.paths()
    assert not outside_requests(site), f"sent outside the scope: {outside_requests(site)}"

    # The control: with a global scope the same page does reach localhost (so the check above
    # proves a block, not a page that never asked).
    wf = chain("global", [start_node(), browser(steps=steps, scope={"type": "global"})])
    res = home.run(home.write("global.flow.json", wf))
    assert res.rc == 0, res.combined
    assert outside_requests(site), "the control page made no request to localhost"


def test_sub_resources_inside_scope_from_another_origin_are_loaded(home, site):
    # A page on 127.0.0.1 whose image and script request come from another server on 127.0.0.1
    # (another origin, inside the scope): both are sent, as a browser would.
    with PageServer({"/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n"), "/data": ("application/json", "{}")}) as cdn:
        site.pages["/withcdn"] = (
            "text/html",
            f'<html><body><p id="status">shown</p><img src="{cdn.base}/logo.png">'
            f"<script>fetch('{cdn.base}/data').catch(() => {{}});</script></body></html>",
        )
        steps = [
            step("goto", value=site.base + "/withcdn"),
            step("waitFor", value="800"),
            step("extractText", "#status"),
        ]
        res, doc = home.run_json(home.write("cdn.flow.json", scoped(steps)))
        assert res.rc == 0, res.combined
        assert result_of(doc, "b")["output"] == "shown"
        assert "/logo.png" in cdn.paths(), f"an image inside the scope was not loaded: {cdn.requests}"
        assert "/data" in cdn.paths(), f"a script's request inside the scope was not sent: {cdn.requests}"


def test_domain_matching_is_ends_with(home, site):
    # A site scope naming another domain does not cover 127.0.0.1: nothing is sent.
    wf = chain(
        "scoped",
        [
            start_node(),
            browser(
                steps=[step("goto", value=site.base + "/table")], scope={"type": "site", "domains": ["example.org"]}
            ),
        ],
    )
    res = home.run(home.write("other.flow.json", wf))
    assert res.rc == 1, res.combined
    assert "outside_scope" in res.text_of("b")
    assert "/table" not in site.paths()


def test_permissions_network_applies_on_top_of_global_scope(home, site):
    wf = chain(
        "perm",
        [start_node(), browser(steps=[step("goto", value=site.base + "/table")], scope={"type": "global"})],
        permissions={"network": ["example.org"]},
    )
    res = home.run(home.write("perm.flow.json", wf))
    assert res.rc == 1, res.combined
    text = res.text_of("b")
    assert "permission_denied" in text or "outside_scope" in text
    assert "/table" not in site.paths()


# ---------------------------------------------------------------- WebFlow scripts and definitions

LOGIN_SCRIPT = """async function execute(browser, params) {
  await browser.navigateTo(params.base + "/form");
  await browser.enterText("#user", params.person);
  await browser.selectOption("#color", "g");
  await browser.click("#go");
  await browser.awaitPageLoad();
  const text = await browser.getPageText();
  const url = await browser.getCurrentUrl();
  return { success: text.includes("Welcome " + params.person), message: text, data: { url } };
}"""


def webflow_definition(script: str = LOGIN_SCRIPT, **more_params) -> dict:
    return {
        "name": "signInAs",
        "description": "Signs in to the test site as someone",
        "version": 1,
        "parameters": {
            "base": {"type": "string", "required": True, "description": "Site address"},
            "person": {"type": "string", "required": True, "description": "Who signs in"},
            "color": {
                "type": "string",
                "required": False,
                "description": "Colour",
                "valueOptions": ["r", "g"],
                "default": "g",
            },
            **more_params,
        },
        "script": script,
        "grammarPatterns": ["sign in as $(person:wildcard)"],
        "scope": {"type": "site", "domains": ["127.0.0.1"]},
        "source": {"type": "manual", "timestamp": "2026-01-01T00:00:00Z", "originUrl": "http://127.0.0.1/"},
    }


@needs_deno
def test_webflow_script_in_a_browser_node(home, site):
    wf = chain(
        "script",
        [
            start_node([var("base"), var("person", "nobody")]),
            browser(script=LOGIN_SCRIPT, scope={"type": "site", "domains": ["127.0.0.1"]}),
        ],
    )
    res, doc = home.run_json(home.write("wf.flow.json", wf), "--var", f"base={site.base}", "--var", "person=Ada")
    assert res.rc == 0, res.combined
    out = result_of(doc, "b")["output"]
    assert out["success"] is True
    assert "Welcome Ada" in out["message"]
    assert out["data"]["url"].startswith(site.base + "/welcome")


EVERY_METHOD_SCRIPT = """async function execute(browser, params) {
  const seen = {};
  const log = async (name, fn) => { try { seen[name] = await fn(); } catch (e) { seen[name] = "THREW " + e.message; } };
  await log("navigateTo", () => browser.navigateTo(params.base + "/table"));
  await log("awaitPageLoad", () => browser.awaitPageLoad(5000));
  await log("followLink", () => browser.followLink("#more"));
  await log("urlAfterFollow", () => browser.getCurrentUrl());
  await log("goBack", () => browser.goBack());
  await log("urlAfterBack", () => browser.getCurrentUrl());
  await log("navigateForm", () => browser.navigateTo(params.base + "/form"));
  await log("enterText", () => browser.enterText("#user", "A"));
  await log("clearAndType", () => browser.clearAndType("#user", "Ada"));
  await log("selectOption", () => browser.selectOption("#color", "g"));
  await log("click", () => browser.click("#agree"));
  await log("pressKey", () => browser.pressKey("Tab"));
  await log("captureScreenshot", async () => typeof (await browser.captureScreenshot()));
  await log("awaitPageInteraction", () => browser.awaitPageInteraction(300));
  await log("clickAndWait", () => browser.clickAndWait("#go", 5000));
  await log("urlAfterSubmit", () => browser.getCurrentUrl());
  await log("pageText", () => browser.getPageText());
  await log("extractComponent", () => browser.extractComponent({ typeName: "Greeting", schema: "{ text: string }" }, "the welcome line"));
  await log("checkPageState", () => browser.checkPageState("the user is signed in"));
  await log("queryContent", () => browser.queryContent("Who signed in?"));
  await log("navigateForm2", () => browser.navigateTo(params.base + "/form"));
  await log("click2", () => browser.click("#user"));
  await log("enterTextOnPage", () => browser.enterTextOnPage("Zed", true));
  await log("waitForNavigation", () => browser.waitForNavigation(3000));
  // The submit's navigation may not have begun yet: wait for the new page, at most 10 s.
  for (let i = 0; i < 100 && !(await browser.getCurrentUrl()).includes("Zed"); i++) {
    await browser.awaitPageInteraction(100);
  }
  await log("awaitPageLoad2", () => browser.awaitPageLoad(3000));
  await log("text2", () => browser.getPageText());
  await log("urlAfterEnter", () => browser.getCurrentUrl());
  return { success: true, data: seen };
}"""

SEED_METHODS = (
    "navigateTo goBack waitForNavigation awaitPageLoad awaitPageInteraction getCurrentUrl getPageText "
    "captureScreenshot click clickAndWait followLink enterText enterTextOnPage clearAndType pressKey "
    "selectOption extractComponent checkPageState queryContent"
).split()


@needs_deno
def test_webflow_script_has_every_method_of_the_seed_api(home, site):
    site.pages["/more"] = ("text/html", "<p id='m'>more</p>")
    for method in SEED_METHODS:
        assert f"browser.{method}(" in EVERY_METHOD_SCRIPT
    wf = chain("every", [start_node([var("base")]), browser(script=EVERY_METHOD_SCRIPT)])
    res, doc = home.run_json(home.write("every.flow.json", wf), "--var", f"base={site.base}")
    assert res.rc == 0, res.combined
    seen = result_of(doc, "b")["output"]["data"]
    for name, value in seen.items():
        # The model-backed methods may refuse the echo model's answer; none may be missing.
        assert not (isinstance(value, str) and "not a function" in value), (name, value)
        if name not in ("extractComponent", "checkPageState", "queryContent"):
            assert not (isinstance(value, str) and value.startswith("THREW")), (name, value)
    assert seen["urlAfterFollow"] == site.base + "/more"
    assert seen["urlAfterBack"] == site.base + "/table"
    assert seen["urlAfterSubmit"].startswith(site.base + "/welcome")
    assert seen["pageText"].strip() == "Welcome Ada (g, on)"
    assert seen["captureScreenshot"] == "string"
    assert "Zed" in seen["text2"]


@needs_deno
def test_webflow_script_waits_for_a_slow_navigation(home, site):
    def slow_welcome(query):
        time.sleep(1.0)
        return welcome(query)

    site.pages["/welcome"] = slow_welcome
    script = """async function execute(browser, params) {
  await browser.navigateTo(params.base + "/form");
  await browser.enterText("#user", "Ada");
  await browser.click("#go");
  await browser.waitForNavigation(10000);
  return { success: true, data: { url: await browser.getCurrentUrl(), text: await browser.getPageText() } };
}"""
    wf = chain("nav", [start_node([var("base")]), browser(script=script)])
    res, doc = home.run_json(home.write("nav.flow.json", wf), "--var", f"base={site.base}")
    assert res.rc == 0, res.combined
    data = result_of(doc, "b")["output"]["data"]
    assert data["url"].startswith(site.base + "/welcome")
    assert "Welcome Ada" in data["text"]


def test_webflow_definition_imports_as_one_browser_node(home):
    src = home.write("signInAs.json", webflow_definition())
    out = home.root / "signInAs.flow.json"
    res = home.import_(src, out)
    assert res.rc == 0, res.combined
    wf = json.loads(out.read_text())
    kinds = [n["type"] for n in wf["nodes"]]
    assert kinds.count("browser") == 1
    assert kinds.count("start") == 1
    start = next(n for n in wf["nodes"] if n["type"] == "start")
    variables = {v["name"]: v for v in start["data"]["variables"]}
    assert set(variables) == {"base", "person", "color"}
    assert variables["person"].get("required") is True
    assert variables["color"].get("enum") == ["r", "g"]
    triggers = [t if isinstance(t, str) else t.get("pattern") for t in wf.get("triggers", [])]
    assert "sign in as $(person:wildcard)" in triggers
    node = next(n for n in wf["nodes"] if n["type"] == "browser")
    assert node["data"]["script"] == LOGIN_SCRIPT
    assert node["data"]["scope"]["type"] == "site"
    assert node["data"]["scope"]["domains"] == ["127.0.0.1"]
    assert home.validate(out).rc == 0


@needs_deno
def test_webflow_definition_runs_with_start_variables(home, site):
    src = home.write("signInAs.json", webflow_definition())
    res, doc = home.run_json(src, "--var", f"base={site.base}", "--var", "person=Grace")
    assert res.rc == 0, res.combined
    assert doc["output"]["success"] is True
    assert "Welcome Grace" in doc["output"]["message"]


@needs_deno
def test_webflow_script_navigation_outside_scope_fails(home, site):
    script = "async function execute(browser, params) {\n  await browser.navigateTo(params.target);\n  return { success: true };\n}"
    target_param = {"type": "string", "required": True, "description": "Where to go"}
    src = home.write("out.json", webflow_definition(script, target=target_param))
    target = f"http://localhost:{site.port}/elsewhere"
    res = home.run(src, "--var", f"base={site.base}", "--var", "person=x", "--var", f"target={target}")
    assert res.rc == 1, res.combined
    assert "outside_scope" in res.text_of()
    assert not outside_requests(site)


def test_webflow_script_with_blocked_identifier_is_refused(home):
    script = "async function execute(browser, params) {\n  const label = 'window';\n  window.location = params.base;\n  return { success: true };\n}"
    res = home.validate(home.write("blocked.json", webflow_definition(script)))
    assert res.rc == 1, res.combined
    assert "script_blocked" in res.combined
    assert "window" in res.combined and "line 3" in res.combined


# ---------------------------------------------------------------- no Chromium left behind


def _chromium_wrapper(home: Home) -> Path:
    """A FLOWDESK_CHROMIUM that records its process id and becomes the real Chromium (exec
    keeps the id), so the test knows exactly which browser processes were this run's."""
    pids = home.root / "chromium.pids"
    wrapper = home.root / "chromium-wrapper.sh"
    wrapper.write_text(f'#!/bin/sh\necho $$ >> "{pids}"\nexec "{_chromium()}" "$@"\n')
    wrapper.chmod(0o755)
    home.env["FLOWDESK_CHROMIUM"] = str(wrapper)
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to see processes")
def test_no_chromium_left_after_a_failed_step(home, site):
    pids_file = _chromium_wrapper(home)
    target = f"http://localhost:{site.port}/elsewhere"
    res = home.run(
        home.write("out.flow.json", scoped([step("goto", value=site.base + "/table"), step("goto", value=target)]))
    )
    assert res.rc == 1, res.combined
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids, "the browser was not started through FLOWDESK_CHROMIUM"
    assert not _wait_gone(pids), "Chromium outlived the run"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to see processes")
def test_cancel_mid_step_ends_cancelled_and_leaves_no_chromium(home, site):
    pids_file = _chromium_wrapper(home)
    steps = [step("goto", value=site.base + "/table"), step("waitFor", "#never-there", timeoutMs=60000)]
    path = home.write("cancel.flow.json", chain("cancel", [start_node(), browser(steps=steps)]))
    proc = subprocess.Popen(
        [FLOWDESK, "run", str(path), "--provider", "echo", "--jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=home.env,
        cwd=home.root,
    )
    try:
        deadline = time.monotonic() + 60
        for line in proc.stdout:
            if '"browser_action"' in line or time.monotonic() > deadline:
                break
        time.sleep(1.0)  # inside the waitFor now
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 4, f"exit {rc}: {proc.stderr.read()}"
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids
    assert not _wait_gone(pids), "Chromium outlived the cancelled run"
