"""Acceptance: trigger phrases and `flowdesk do` (issue 30, items 2, 5 and 6), from DESIGN.md's
grammar: words, `(a|b)`, `(…)?`, `$(name:wildcard|word|number)`; matching ignores case and the
punctuation at the sentence's ends only, so a capture keeps its own leading punctuation
(`/srv/data`, `@alice`, `$100`). Hostile patterns and sentences (groups nested hundreds deep,
thousands of words, 120k punctuation marks) end quickly with a clear message, never a crash.

One library (a module fixture) serves every test; `do --dry-run --json` shows what matched
without running it, `do --yes` runs it with the offline `echo` provider.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.acceptance.support import CliResult, Home, chain, cli, start_node, var

LONG_WORDS = [f"w{i}" for i in range(3000)]


def echo_flow(flow_id: str, triggers: list[Any], names: list[str], description: str = "") -> dict[str, Any]:
    """Start (the captures as variables), then an agent whose prompt shows each variable: with
    the echo provider the run's output says what each variable received."""
    prompt = " ".join(f"{n}=[{{{{{n}}}}}]" for n in names)
    doc = chain(
        flow_id.capitalize(),
        [
            start_node([var(n, "") for n in names]),
            {
                "id": "say",
                "type": "agent",
                "data": {
                    "agentName": "Say",
                    "userPrompt": prompt,
                    "model": "echo",
                    "tools": {"web_search": False, "subagents": False},
                },
            },
        ],
        description=description or f"The {flow_id} flow.",
    )
    doc["triggers"] = triggers
    return doc


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Home:
    home = Home(tmp_path_factory.mktemp("triggers"))
    home.add_library_flow(
        "files", echo_flow("files", ["(list|show) files under $(path:wildcard)"], ["path"], "Lists files in a folder.")
    )
    home.add_library_flow("greet", echo_flow("greet", ["(greet|hello) $(who:word)( please)?"], ["who"]))
    home.add_library_flow("pay", echo_flow("pay", ["pay $(amount:word) to $(who:wildcard)"], ["amount", "who"]))
    home.add_library_flow("count", echo_flow("count", ["count to $(n:number)"], ["n"]))
    home.add_library_flow("play", echo_flow("play", ["play $(song:wildcard)"], ["song"]))
    home.add_library_flow(
        "playby", echo_flow("playby", ["play $(song:wildcard) by $(artist:wildcard)"], ["song", "artist"])
    )
    home.add_library_flow("long", echo_flow("long", [" ".join(LONG_WORDS) + " $(rest:wildcard)"], ["rest"]))
    home.add_library_flow("deep", echo_flow("deep", ["(" * 400 + "dig deeper" + ")" * 400], []))
    return home


def do(home: Home, sentence: str, *extra: str, timeout: float = 60) -> tuple[CliResult, float]:
    began = time.monotonic()
    res = cli("do", sentence, "--provider", "echo", "--json", *extra, env=home.env, cwd=home.root, timeout=timeout)
    return res, time.monotonic() - began


def chosen(res: CliResult) -> dict[str, Any]:
    value, _ = json.JSONDecoder().raw_decode(res.stdout.lstrip())
    return value


def no_crash(res: CliResult) -> None:
    text = res.combined
    assert "Traceback" not in text and "RecursionError" not in text, text[-3000:]


# --------------------------------------------------------------------------- captures
def test_wildcard_capture_keeps_the_leading_slash_of_a_path_and_the_run_gets_it(library):
    res, _ = do(library, "list files under /srv/data", "--yes")
    no_crash(res)
    assert res.rc == 0, res.combined
    doc = chosen(res)
    assert doc["flow"] == "files" and doc["arguments"] == {"path": "/srv/data"}, doc
    assert doc["match"]["by"] == "trigger"
    assert "path=[/srv/data]" in res.combined, res.combined


@pytest.fixture(scope="module")
def compound(library: Home) -> tuple[CliResult, list[dict[str, Any]]]:
    """One `do` of four requests joined by "and then", ";" and "then": each part's match."""
    res, _ = do(
        library,
        "Greet @alice! and then pay $100 to @bob; HELLO @carol please then count to 42; play hey jude by the beatles",
        "--dry-run",
    )
    no_crash(res)
    assert res.rc == 0, res.combined
    first = chosen(res)
    return res, [first, *first.get("then", [])]


def test_word_capture_keeps_a_leading_at_sign_and_only_the_sentence_end_is_trimmed(compound):
    _res, parts = compound
    assert parts[0]["flow"] == "greet" and parts[0]["arguments"] == {"who": "@alice"}, parts[0]


def test_captures_keep_a_leading_dollar_sign_and_at_sign(compound):
    _res, parts = compound
    assert parts[1]["flow"] == "pay" and parts[1]["arguments"] == {"amount": "$100", "who": "@bob"}, parts[1]


def test_alternative_and_optional_group_match_and_case_is_ignored(compound):
    _res, parts = compound
    assert parts[2]["flow"] == "greet" and parts[2]["arguments"] == {"who": "@carol"}, parts[2]
    assert parts[2]["match"]["pattern"] == "(greet|hello) $(who:word)( please)?"


def test_match_with_the_fewest_wildcard_words_wins(compound):
    _res, parts = compound
    assert parts[4]["flow"] == "playby", parts[4]
    assert parts[4]["arguments"] == {"song": "hey jude", "artist": "the beatles"}, parts[4]


def test_number_capture_binds_a_number(compound):
    _res, parts = compound
    assert parts[3]["flow"] == "count" and str(parts[3]["arguments"]["n"]) in ("42", "42.0"), parts[3]


# --------------------------------------------------------------------------- hostile input
def test_trigger_nested_400_groups_deep_is_a_validation_error_not_a_crash(library):
    res = library.validate(library.library / "deep.flow.json")
    no_crash(res)
    assert res.rc == 1, res.combined
    assert "trigger" in res.combined.lower() and "nested" in res.combined.lower(), res.combined


def test_run_of_a_flow_with_a_deeply_nested_trigger_does_not_crash(library):
    res = library.run(library.library / "deep.flow.json")
    no_crash(res)
    assert res.rc in (0, 1), res.combined


def test_a_deeply_nested_trigger_in_the_library_does_not_break_do_for_other_flows(compound):
    res, parts = compound
    assert len(parts) == 5, res.stdout
    assert "deep" in res.stderr, "the skipped trigger is not named: " + res.stderr


def test_pattern_of_three_thousand_words_matches_without_crashing(library):
    res, took = do(library, " ".join(LONG_WORDS) + " and the rest", "--dry-run")
    no_crash(res)
    assert res.rc == 0, res.combined
    doc = chosen(res)
    assert doc["flow"] == "long" and doc["arguments"] == {"rest": "and the rest"}, doc
    assert took < 20, f"{took:.1f} s"


def test_sentence_ending_in_120k_punctuation_marks_matches_quickly(library):
    res, took = do(library, "list files under /srv/data" + "!" * 120_000, "--dry-run")
    no_crash(res)
    assert res.rc == 0, res.combined[-2000:]
    assert chosen(res)["arguments"] == {"path": "/srv/data"}
    assert took < 15, f"matching took {took:.1f} s"


def test_sentence_of_only_punctuation_ends_quickly_with_nothing_matched(library):
    res, took = do(library, "?!" * 60_000, "--dry-run")
    no_crash(res)
    assert res.rc == 2, res.combined[-2000:]
    assert took < 15, f"{took:.1f} s"
    assert chosen(res)["flow"] is None


def test_nothing_matched_exits_2_and_suggests_up_to_three_near_flows(library):
    res, _ = do(library, "folder contents in a folder please", "--dry-run")
    no_crash(res)
    assert res.rc == 2, res.combined
    doc = chosen(res)
    ids = [s["id"] for s in doc.get("suggestions", [])]
    assert doc["flow"] is None and "files" in ids and len(ids) <= 3, doc
    assert "did you mean" in res.stderr.lower(), res.stderr
