"""Trigger-phrase grammar (docs/design.md, "Reusable flows: library, triggers, import")."""

from __future__ import annotations

import random
import time
from itertools import count

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.flows.grammar import (
    TriggerPattern,
    TriggerPatternError,
    all_trigger_matches,
    best_trigger_match,
    compile_trigger,
    generate_trigger_example,
    trigger_words,
)

PLAYLIST = "create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?"


def captures(pattern: str, sentence: str) -> dict | None:
    m = compile_trigger(pattern).match(sentence)
    return None if m is None else m.captures


# -- the seed's example ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "expected", "wild"),
    [
        ("create a blues playlist with 10 songs", {"genre": "blues", "quantity": 10}, 1),
        ("create blues playlist 10", {"genre": "blues", "quantity": 10}, 1),
        ("Create a Rock & Roll playlist, with 2.5 songs!", {"genre": "Rock & Roll", "quantity": 2.5}, 2),
        ("create a new orleans jazz playlist with 12 songs", {"genre": "new orleans jazz", "quantity": 12}, 3),
        ("create a playlist with 3 songs", {"genre": "a", "quantity": 3}, 1),
    ],
)
def test_seed_pattern(sentence: str, expected: dict, wild: int) -> None:
    m = compile_trigger(PLAYLIST).match(sentence)
    assert m is not None
    assert m.captures == expected
    assert type(m.captures["quantity"]) is type(expected["quantity"])
    assert m.wildcard_words == wild
    for name, (start, end) in m.spans.items():
        assert str(expected[name]) in sentence[start:end]


@pytest.mark.parametrize(
    "sentence",
    [
        "create a blues playlist",
        "create playlist with 3 songs",
        "create a blues playlist with ten songs",
        "please create a blues playlist with 3 songs",
        "create a blues playlist with 3 songs now",
        "",
        "  ,. ",
    ],
)
def test_seed_pattern_refuses(sentence: str) -> None:
    assert compile_trigger(PLAYLIST).match(sentence) is None


# -- optional groups, alternatives -----------------------------------------------------------------


def test_optional_group_takes_its_words_when_it_can() -> None:
    assert captures("(the)? $(x:wildcard)", "the big one") == {"x": "big one"}
    assert captures("(the)? $(x:wildcard)", "the") == {"x": "the"}  # taking it would leave x empty
    assert captures("(the)? $(x:wildcard)", "a big one") == {"x": "a big one"}
    assert captures("(please)? stop", "stop") == {}
    assert captures("(please)? stop", "please stop") == {}
    assert captures("stop (it now)?", "stop it") is None
    assert captures("stop (it now)?", "stop it now") == {}


def test_optional_captures_are_absent_when_skipped() -> None:
    p = "remind me (at $(hour:number))? to $(task:wildcard)"
    assert captures(p, "remind me at 9 to water the plants") == {"hour": 9, "task": "water the plants"}
    assert captures(p, "remind me to water the plants") == {"task": "water the plants"}
    assert captures("find $(what:word) $(where:word)?", "find keys") == {"what": "keys"}
    assert captures("find $(what:word) $(where:word)?", "find keys home") == {"what": "keys", "where": "home"}


def test_alternatives_with_several_words() -> None:
    p = "(turn on|switch on|light) (the)? lamp"
    for s in ("turn on the lamp", "Switch on lamp", "light the lamp"):
        assert captures(p, s) == {}
    assert captures(p, "turn the lamp") is None
    assert captures(p, "switch lamp") is None


def test_alternatives_are_tried_in_order() -> None:
    # both branches can match; the first one written wins
    p = "(a $(x:wildcard)|a b $(y:wildcard))"
    assert captures(p, "a b c") == {"x": "b c"}
    assert captures("(a b $(y:wildcard)|a $(x:wildcard))", "a b c") == {"y": "c"}


def test_top_level_alternatives_and_same_name_in_branches() -> None:
    p = "play $(song:wildcard) | put on $(song:wildcard)"
    assert captures(p, "play hey jude") == {"song": "hey jude"}
    assert captures(p, "put on hey jude") == {"song": "hey jude"}
    assert compile_trigger(p).captures == {"song": "wildcard"}


def test_nested_groups() -> None:
    p = "(send (an)? (email|mail)|write) to $(who:word)"
    for s in ("send an email to Ada", "send mail to Ada", "write to Ada"):
        assert captures(p, s) == {"who": "Ada"}
    assert captures(p, "send an to Ada") is None


# -- wildcards ----------------------------------------------------------------------------------------


def test_wildcard_takes_the_fewest_words_that_let_the_rest_match() -> None:
    p = "play $(track:wildcard) by $(artist:wildcard)"
    assert captures(p, "play stand by me by ben e king") == {"track": "stand", "artist": "me by ben e king"}
    assert captures(p, "play yesterday by the beatles") == {"track": "yesterday", "artist": "the beatles"}
    assert captures("$(a:wildcard) and $(b:wildcard) and x", "1 and 2 and 3 and x") == {"a": "1", "b": "2 and 3"}


def test_wildcard_takes_what_the_rest_needs_it_to() -> None:
    # minimal: one word; maximal: everything up to a last literal, or to the end
    p = "search for $(q:wildcard) on $(site:word)"
    assert captures(p, "search for cats on web") == {"q": "cats", "site": "web"}
    assert captures(p, "search for cats on mats on web") == {"q": "cats on mats", "site": "web"}
    assert captures("say $(text:wildcard)", "say it, loud and clear!") == {"text": "it, loud and clear"}
    assert captures("say $(text:wildcard)", "say") is None


def test_wildcard_keeps_inner_text_and_case_and_drops_surrounding_punctuation() -> None:
    assert captures("play $(track:wildcard) by $(artist:wildcard)", 'Play "Hello,  Goodbye" by The Beatles.') == {
        "track": "Hello,  Goodbye",
        "artist": "The Beatles",
    }
    assert captures("open $(name:word)", "open 'notes.txt'!") == {"name": "notes.txt"}


def test_capture_without_type_and_string_are_wildcards() -> None:
    assert compile_trigger("play $(track) by $( artist : string )").captures == {
        "track": "wildcard",
        "artist": "wildcard",
    }
    assert captures("play $(track) by $(artist:string)", "play a b by c d") == {"track": "a b", "artist": "c d"}


def test_word_capture_is_one_word() -> None:
    assert captures("call $(who:word)", "call Ada") == {"who": "Ada"}
    assert captures("call $(who:word)", "call Ada Lovelace") is None
    assert captures("call $(who:word) now", "call Ada now") == {"who": "Ada"}


# -- numbers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("3", 3),
        ("0", 0),
        ("-4", -4),
        ("+7", 7),
        ("12.5", 12.5),
        ("0.25", 0.25),
        (".5", 0.5),
        ("-0.75", -0.75),
        ("1,000", 1000),
        ("2,500.5", 2500.5),
        ("10.", 10),
        ("(3)", 3),
        ("$20", 20),
        ("'42'", 42),
    ],
)
def test_numbers(token: str, value: int | float) -> None:
    got = captures("wait $(n:number) minutes", f"wait {token} minutes")
    assert got == {"n": value}
    assert type(got["n"]) is type(value)


@pytest.mark.parametrize("token", ["ten", "3x", "1.2.3", "12,5", "1e5", "--3", "3-4"])
def test_not_numbers(token: str) -> None:
    assert captures("wait $(n:number) minutes", f"wait {token} minutes") is None


# -- punctuation and case -------------------------------------------------------------------------------


def test_case_and_surrounding_punctuation_are_ignored() -> None:
    p = "what's the weather in $(city:wildcard)"
    assert captures(p, "What's the WEATHER in Paris?") == {"city": "Paris"}
    assert captures(p, "what\u2019s the weather in  Paris, France!!") == {"city": "Paris, France"}
    assert captures(p, "...what's, the weather -- in Paris") == {"city": "Paris"}
    assert captures("Hello, World!", "hello world") == {}
    assert captures("rock & roll", "ROCK ROLL") == {}
    assert captures(p, "whats the weather in Paris") is None  # inner punctuation is part of the word


def test_split_words() -> None:
    assert trigger_words("  Hello, World! -- it's 3.5 ") == ["hello", "world", "it's", "3.5"]


def test_the_whole_input_must_be_covered() -> None:
    assert captures("stop", "stop") == {}
    assert captures("stop", "stop now") is None
    assert captures("stop", "please stop") is None


# -- several patterns competing -------------------------------------------------------------------------


def test_fewest_wildcard_words_wins_then_order() -> None:
    flows = [
        ("generic", compile_trigger("play $(query:wildcard)")),
        ("by-artist", compile_trigger("play $(track:wildcard) by $(artist:wildcard)")),
        ("exact", compile_trigger("play some music")),
        ("generic-again", compile_trigger("play $(what:wildcard)")),
    ]
    key, m = best_trigger_match("play some music", flows)
    assert (key, m.captures, m.wildcard_words) == ("exact", {}, 0)
    key, m = best_trigger_match("play help by the beatles", flows)
    # by-artist binds 1 + 2 = 3 wildcard words; generic binds 4
    assert (key, m.captures) == ("by-artist", {"track": "help", "artist": "the beatles"})
    key, m = best_trigger_match("play jazz", flows)
    assert (key, m.captures) == ("generic", {"query": "jazz"})  # a tie: the order given
    ranked = all_trigger_matches("play jazz", flows)
    assert [k for k, _ in ranked] == ["generic", "generic-again"]
    ranked = all_trigger_matches("play help by the beatles", flows)
    assert [k for k, _ in ranked] == ["by-artist", "generic", "generic-again"]
    assert best_trigger_match("stop the music", flows) is None
    assert best_trigger_match("", flows) is None


def test_best_match_accepts_any_keys_and_iterables() -> None:
    candidates = ((i, compile_trigger(p)) for i, p in enumerate(["a $(x:word)", "a b", "a $(n:number)"]))
    assert best_trigger_match("a b", candidates)[0] == 1  # a word capture counts as a wildcard word
    candidates = ((i, compile_trigger(p)) for i, p in enumerate(["a $(x:word)", "a $(n:number)"]))
    key, m = best_trigger_match("a 2", candidates)
    assert (key, m.captures, m.wildcard_words) == (1, {"n": 2}, 0)  # a number does not


# -- malformed patterns ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "position", "reason"),
    [
        ("", 0, "empty pattern"),
        ("   ", 0, "empty pattern"),
        ("!!! ...", 0, "empty pattern"),
        ("play ()", 5, "empty group"),
        ("play ( & )", 5, "empty group"),
        ("play (a|)", 7, "empty alternative"),
        ("play (|a)", 6, "empty alternative"),
        ("a | ", 2, "empty alternative"),
        ("play (the song", 5, 'unclosed "("'),
        ("play ((the) song", 5, 'unclosed "("'),
        ("play the) song", 8, 'unmatched ")"'),
        ("play $(", 5, 'unclosed capture "$("'),
        ("play $(song:word", 5, 'unclosed capture "$("'),
        ("play $(song (x)", 5, 'unclosed capture "$("'),
        ("play $() now", 5, "capture without a name"),
        ("play $(:word) now", 5, "capture without a name"),
        ("play $(song:tune) now", 12, 'unknown capture type "tune" (expected wildcard, word or number)'),
        ("play $(2song) now", 7, 'invalid capture name "2song" (letters, digits and _)'),
        ("play ? now", 5, '"?" must follow a group or a capture, as in "(word)?"'),
        ("play now?", -1, ""),  # a "?" inside a word is punctuation: valid
        ("play now ?", 9, '"?" must follow a group or a capture, as in "(word)?"'),
        ("(play)?? now", 7, '"?" must follow a group or a capture, as in "(word)?"'),
        ("play $(x:word) and $(x:word)", 19, 'capture "x" appears twice'),
        ("play $(x:word) (and $(x:number))?", 20, 'capture "x" appears twice'),
    ],
)
def test_malformed_patterns_name_the_pattern_and_the_position(pattern: str, position: int, reason: str) -> None:
    if position < 0:
        compile_trigger(pattern)
        return
    with pytest.raises(TriggerPatternError) as info:
        compile_trigger(pattern)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.pattern, err.position, err.reason) == (pattern, position, reason)
    assert str(err) == f'{reason} at position {position} in pattern "{pattern}"'


# -- bounded matching --------------------------------------------------------------------------------------


def test_matching_is_not_exponential() -> None:
    p = compile_trigger("$(a:wildcard) x $(b:wildcard) y $(c:wildcard) z $(d:wildcard) (w)? (v)?")
    words = ["q"] * 3000
    t0 = time.perf_counter()
    assert p.match(" ".join(words)) is None  # naive backtracking would try ~n^4 splits
    assert p.match(" ".join(["q"] * 1000 + ["x", "q", "y", "q", "z"] + ["q"] * 1000 + ["w"])) is not None
    assert time.perf_counter() - t0 < 10


def test_compiled_patterns_are_cached() -> None:
    assert compile_trigger(PLAYLIST) is compile_trigger(PLAYLIST)
    assert isinstance(compile_trigger(PLAYLIST), TriggerPattern)


def test_generate_example() -> None:
    p = compile_trigger(PLAYLIST)
    assert generate_trigger_example(p) == "create a genre playlist with 3 songs"
    assert p.match(generate_trigger_example(p)).captures == {"genre": "genre", "quantity": 3}
    rng = random.Random(5)
    for _ in range(20):
        sentence = generate_trigger_example(p, rng, {"genre": "deep house", "quantity": 7})
        assert p.match(sentence).captures == {"genre": "deep house", "quantity": 7}


# -- properties ---------------------------------------------------------------------------------------------

# Literal words and capture values come from disjoint alphabets, every literal is used once, every
# optional group and alternative starts with a literal, and a wildcard is followed by a literal (or
# ends the pattern): then the generated derivation is the only parse, so the bindings are exact.
LITERALS = st.text(alphabet="abcdefghijklm", min_size=2, max_size=6)
VALUE_WORDS = st.text(alphabet="nopqrstuvwxyzNOPQRSTUVWXYZ", min_size=1, max_size=6)
NUMBERS = st.one_of(
    st.integers(-1000, 10**7).map(str),
    st.tuples(st.integers(0, 9999), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]}"),
)
LEFT = st.sampled_from(["", "", "", '"', "(", "'"])
RIGHT = st.sampled_from(["", "", "", ",", "!", "?", ".", '"', ")"])


@st.composite
def pattern_and_sentence(draw):
    """``(pattern text, sentence, expected captures, wildcard words)``."""
    used: set[str] = set()
    names = count()

    def literal() -> tuple[str, str]:
        word = draw(LITERALS)
        if word in used:  # keep every literal unique (a letter per clash, still within a..m)
            word += "abcdefghijklm"[len(used) % 13] * (1 + len(used) // 13)
            while word in used:
                word += "m"
        used.add(word)
        shown = draw(st.sampled_from([word, word.upper(), word.title()]))
        return word, draw(LEFT) + shown + draw(RIGHT)

    def sequence(depth: int, top: bool, starts_with_literal: bool) -> tuple[str, list[str], dict, int]:
        allowed = ["lit", "lit", "word", "number", "wild"] + (["alt", "opt", "optcap"] if depth < 2 else [])
        kinds = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=4))
        if starts_with_literal:
            kinds[0] = "lit"
        for i, kind in enumerate(kinds):
            if kind in ("wild", "optcap"):  # followed by a literal, or ending the pattern
                if i + 1 < len(kinds):
                    kinds[i + 1] = "lit"
                elif not top:
                    kinds[i] = "word"
        if top and all(k in ("opt", "optcap") for k in kinds):
            kinds.append("lit")
        parts: list[str] = []
        tokens: list[str] = []
        bound: dict[str, object] = {}
        wild = 0
        for kind in kinds:
            if kind == "lit":
                word, token = literal()
                parts.append(word)
                tokens.append(token)
            elif kind in ("word", "optcap"):
                name = f"w{next(names)}"
                parts.append(f"$({name}:word)" + ("?" if kind == "optcap" else ""))
                if kind == "optcap" and not draw(st.booleans()):
                    continue
                value = draw(VALUE_WORDS)
                bound[name] = value
                wild += 1
                tokens.append(draw(LEFT) + value + draw(RIGHT))
            elif kind == "number":
                name = f"n{next(names)}"
                parts.append(f"$({name}:number)")
                value = draw(NUMBERS)
                bound[name] = float(value) if "." in value else int(value)
                tokens.append(draw(st.sampled_from(["", "", "$"])) + value + draw(st.sampled_from(["", ",", "."])))
            elif kind == "wild":
                name = f"x{next(names)}"
                parts.append(f"$({name}:wildcard)")
                values = draw(st.lists(VALUE_WORDS, min_size=1, max_size=4))
                bound[name] = " ".join(values)
                wild += len(values)
                quote = draw(st.sampled_from(["", '"']))
                values[0] = quote + values[0]
                values[-1] = values[-1] + quote
                tokens.extend(values)
            elif kind == "alt":
                branches = [sequence(depth + 1, False, True) for _ in range(draw(st.integers(2, 3)))]
                parts.append("(" + "|".join(b[0] for b in branches) + ")")
                _, toks, b_bound, b_wild = branches[draw(st.integers(0, len(branches) - 1))]
                tokens.extend(toks)
                bound.update(b_bound)
                wild += b_wild
            else:  # opt
                text, toks, b_bound, b_wild = sequence(depth + 1, False, True)
                parts.append(f"({text})?")
                if draw(st.booleans()):
                    tokens.extend(toks)
                    bound.update(b_bound)
                    wild += b_wild
        return " ".join(parts), tokens, bound, wild

    text, tokens, bound, wild = sequence(0, True, False)
    return text, " ".join(tokens), bound, wild


@settings(max_examples=300, deadline=None)
@given(pattern_and_sentence())
def test_a_generated_sentence_matches_and_binds_the_generated_values(case) -> None:
    pattern, sentence, expected, wild = case
    m = compile_trigger(pattern).match(sentence)
    assert m is not None, (pattern, sentence)
    assert m.captures == expected, (pattern, sentence)
    assert m.wildcard_words == wild


@settings(max_examples=100, deadline=None)
@given(pattern_and_sentence(), st.randoms(use_true_random=False))
def test_generate_example_matches_its_pattern(case, rng) -> None:
    pattern = compile_trigger(case[0])
    values = {name: (4 if kind == "number" else "zz") for name, kind in pattern.captures.items()}
    sentence = generate_trigger_example(pattern, rng, values)
    m = pattern.match(sentence)
    assert m is not None, (case[0], sentence)
    assert all(m.captures[k] == values[k] for k in m.captures)


def test_same_name_with_different_kinds_in_alternatives() -> None:
    p = "set volume (to $(level:number)|$(level:word))"
    assert captures(p, "set volume to 7") == {"level": 7}
    assert captures(p, "set volume loud") == {"level": "loud"}
