"""TypeAgent's own TaskFlow samples (tests/code/recipes/typeagent, copied unchanged) import and
run: the echo provider answers ``queryLLM``, library flows named after the actions stand in for
``callAction``, a local SearxNG-shaped server answers ``webSearch``, and a local page answers
``webFetch`` (the recipe's chart URL is pointed at it: the tests reach no outside host)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import Run, apply_arguments, import_flow, parse_workflow, validate
from engine.flows.library import FlowLibrary
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from tests.code.conftest import events, extra, needs_deno, run
from tests.fakes.openai_server import FakeLLMServer, openai_text
from tests.fakes.web_server import WebServer, json_answer, text_answer

pytestmark = needs_deno

SAMPLES = Path(__file__).parent / "recipes" / "typeagent"
#: The actions the samples call, as library flows: (name, the echo agent's prompt, its variables).
ACTIONS = [
    ("createPlaylist", "Playlist {{name}}: {{songs}}", ["name", "songs"]),
    ("findTodaysEvents", "09:00 Standup; 14:00 Review", []),
    ("sendEmail", "Sent '{{subject}}' to {{to}}", ["subject", "body", "to", "genContent"]),
    ("playTrack", "Playing {{trackName}} by {{artists}}", ["trackName", "artists"]),
    ("createList", "List {{listName}}", ["listName"]),
    ("findEmail", "3 emails: Ann (lunch), Bob (report)", ["messageRef"]),
]


@pytest.fixture
def actions(tmp_path: Path) -> FlowLibrary:
    folder = tmp_path / "actions"
    folder.mkdir()
    lib = FlowLibrary([folder], seed=False)
    for name, prompt, variables in ACTIONS:
        start = {"variables": [{"name": v, "value": "", "type": "string"} for v in variables]}
        doc = {
            "id": name.lower(),
            "name": name,
            "nodes": [
                {"id": "s", "type": "start", "data": start},
                {"id": "a", "type": "agent", "data": {"agentName": "a", "userPrompt": prompt, "model": "m"}},
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
        lib.save(parse_workflow(doc))
    return lib


@pytest.fixture
def web(monkeypatch):
    with WebServer() as server:
        server.route("/genre-chart/jazz/tracks/2025/", text_answer("1. So What - Miles Davis"))
        server.route("/charts/kpop-thisweek/", text_answer('#1 {"trackName": "Golden", "artist": "HUNTR/X"}'))
        server.route("/search", json_answer({"results": [{"title": "Bees dance", "url": "https://b.example/1"}]}))
        monkeypatch.setenv("FLOWDESK_SEARXNG_URL", server.url(""))
        yield server


def sample(name: str, web: WebServer, **arguments: Any) -> Any:
    """The sample imported with its page on ``web`` and permissions for that host and the actions."""
    local = web.url("").rstrip("/")
    text = (SAMPLES / f"{name}.recipe.json").read_text()
    text = text.replace("https://www.chosic.com", local).replace("https://onlyhit.us", local)
    doc = import_flow(json.loads(text)).workflow
    host = local.split("://")[1]
    doc["permissions"] = {"network": [host], "flows": [a[0] for a in ACTIONS]}
    return apply_arguments(parse_workflow(doc), arguments)


def methods(r: Any) -> list[str]:
    return [extra(e)["method"] for e in events(r, "api_call_start")]


def test_every_sample_imports_as_one_script_node_and_validates_clean(web) -> None:
    names = sorted(p.name.removesuffix(".recipe.json") for p in SAMPLES.glob("*.recipe.json"))
    assert len(names) == 5
    for name in names:
        wf = sample(name, web)
        assert [n.type for n in wf.nodes] == ["start", "script"], name
        assert [i.message for i in validate(wf)] == [], name  # no template warnings about `${…}` in the script


def test_daily_agenda_email(actions, web) -> None:
    r = run(sample("dailyAgendaEmail", web), library=actions)
    assert r.status == "completed", r.error
    assert r.outputs["n2"] == {"success": True, "message": "Sent 'Daily Agenda' to [\"me\"]"}
    assert methods(r) == ["callAction", "queryLLM", "callAction"]
    assert extra(events(r, "api_call_start")[0])["args"] == ["calendar", "findTodaysEvents", {}]


def test_weekly_email_digest(actions, web) -> None:
    r = run(sample("weeklyEmailDigest", web), library=actions)
    assert r.status == "completed", r.error
    assert r.outputs["n2"]["message"] == "Sent 'Email digest \u2014 this week' to [\"me\"]"
    assert methods(r) == ["callAction", "queryLLM", "callAction"]
    digest = events(r, "api_call_start")[1]
    assert "Focus on: personal and work emails" in extra(digest)["args"][0]


def test_play_popular_kpop_song(actions, web) -> None:
    r = run(sample("playPopularKpopSong", web), library=actions)
    assert r.status == "completed", r.error
    assert r.outputs["n2"] == {"success": True, "message": 'Playing Golden by ["HUNTR/X"]'}
    assert methods(r) == ["webFetch", "queryLLM", "callAction"]
    assert any(req.path == "/charts/kpop-thisweek/" for req in web.requests)


def test_search_and_list(actions, web) -> None:
    r = run(sample("searchAndList", web, topic="bees"), library=actions)
    assert r.status == "completed", r.error
    out = r.outputs["n2"]
    assert out["success"] is True and out["message"] == "List bees findings"
    assert "Bees dance" in out["data"]["findings"] and "top 5 key findings" in out["data"]["findings"]
    assert methods(r) == ["webSearch", "queryLLM", "callAction"]


def test_create_top_songs_playlist_runs_to_its_own_check(actions, web) -> None:
    """The echo provider repeats the prompt, whose first JSON is its own ``[]``: the recipe's
    check then fails the step with the recipe's error, before ``callAction``."""
    r = run(sample("createTopSongsPlaylist", web, genre="jazz"), library=actions)
    assert r.status == "failed" and r.error == "the script failed: Could not extract songs from the chart page"
    assert methods(r) == ["webFetch", "queryLLM"]
    assert any(req.path == "/genre-chart/jazz/tracks/2025/" for req in web.requests)


async def test_create_top_songs_playlist_with_a_model_that_answers_json(actions, web) -> None:
    """The same recipe with a (fake) model that answers the JSON asked for: the playlist action
    runs with the songs the model read from the page."""
    songs = [{"trackName": "So What", "artist": "Miles Davis"}]
    with FakeLLMServer() as llm:
        llm.push(openai_text(json.dumps(songs)), openai_text("Playlist made"))
        provider = OpenAIProvider(
            base_url=llm.base_url, api_key="k", http=HttpSettings(maxRetries=0), default_model="fake-model"
        )
        r = Run(sample("createTopSongsPlaylist", web, genre="jazz", quantity=1), provider, library=actions)
        await r.start()
        asked = json.dumps(llm.requests[0].json["messages"])
    assert str(r.status) == "completed", r.error
    assert r.outputs["n2"] == {"success": True, "message": "Playlist made", "data": "Playlist made"}
    assert methods(r) == ["webFetch", "queryLLM", "callAction"]
    assert "So What - Miles Davis" in asked  # the page's text went to the model as the input
    call = extra(events(r, "api_call_start")[2])["args"]
    assert call == ["player", "createPlaylist", {"name": "Top 1 jazz \u2013 this month", "songs": songs}]


def test_without_permissions_a_sample_reaches_no_page(actions, web) -> None:
    wf = sample("playPopularKpopSong", web)
    wf = wf.model_copy(update={"permissions": None})
    r = run(wf, library=actions)
    assert r.status == "failed" and r.error.startswith("permission_denied: network access to '127.0.0.1:")
    assert not any(req.path == "/charts/kpop-thisweek/" for req in web.requests)
