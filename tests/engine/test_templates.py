"""Templates (docs/design.md, "Data flow: variables and templates"): every form, exact outputs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.graph.templates import (
    SECRET_MASK,
    TEMPLATE_BUILTINS,
    TemplateReference,
    TemplateScope,
    find_references,
    mask_secrets,
    reference_first_name,
    render_template_value,
    resolve_templates,
    resolve_templates_masked,
    secret_lookup,
    template_completion,
    unknown_references,
    walk_references,
)

SECRET = "tok-9f8e7d6c5b4a"


def make_scope(**builtins) -> TemplateScope:
    variables = {
        "name": "Ada",
        "resp": {"items": [{"name": "first", "tags": ["x", "y"]}, {"name": "second"}], "total": 2},
        "count": 3,
        "ratio": 0.25,
        "ok": True,
        "off": False,
        "nothing": None,
        "obj": {"a": 1, "b": [1, 2], "c": "é"},
        "lst": [1, "two", None],
        "answer": '{"verdict": "approved", "scores": [4, 5]}',
        "a": {"b": ["zero", "one"]},
        "results": [{"id": "result_123"}],
    }
    base = {"PREVIOUS_OUTPUT": "prev out", "input": "prev out", "run": {"id": "run-1"}, "workflow": {"name": "Review"}}
    base.update(builtins)
    return TemplateScope(
        variables=variables, builtins=base, secrets={"API_TOKEN": SECRET}.get, env={"HOME": "/home/ada", "EMPTY": ""}
    )


# -- finding references ---------------------------------------------------------------------


def test_find_references_every_form_with_offsets() -> None:
    text = "Hi {{name}}, see ${ resp.items[0].name } and {{  a.b[ 1 ] }} or {{resp.items[-1]}}."
    refs = find_references(text)
    assert [(r.raw, r.name, r.path, r.form) for r in refs] == [
        ("{{name}}", "name", (), "braces"),
        ("${ resp.items[0].name }", "resp", ("items", 0, "name"), "dollar"),
        ("{{  a.b[ 1 ] }}", "a", ("b", 1), "braces"),
        ("{{resp.items[-1]}}", "resp", ("items", -1), "braces"),
    ]
    for r in refs:
        assert text[r.start : r.end] == r.raw
    assert [r.dotted for r in refs] == ["name", "resp.items[0].name", "a.b[1]", "resp.items[-1]"]


@pytest.mark.parametrize(
    "text",
    [
        "{{}}",
        "{{ }}",
        "${}",
        "{{1abc}}",
        "{{a..b}}",
        "{{a.}}",
        "{{a[x]}}",
        "{a}",
        "$ {a}",
        "{{a b}}",
        "{{a}",
        "${a",
        "plain text",
        "{{a.b[0]",
    ],
)
def test_not_references(text: str) -> None:
    assert find_references(text) == []


def test_keys_may_hold_hyphens_and_digits() -> None:
    (ref,) = find_references("{{resp.headers.content-type}} ")
    assert ref.path == ("headers", "content-type")
    (ref,) = find_references("${a.0}")
    assert ref.path == ("0",)


def test_triple_braces_take_the_inner_reference() -> None:
    (ref,) = find_references("{{{name}}}")
    assert (ref.raw, ref.start) == ("{{name}}", 1)
    assert resolve_templates("{{{name}}}", make_scope()) == "{Ada}"


def test_first_name_and_walk() -> None:
    assert reference_first_name(find_references("{{resp.items[0].name}}")[0]) == "resp"
    assert reference_first_name("${ env.HOME }") == "env"
    assert reference_first_name("resp.items[0]") == "resp"
    assert reference_first_name("") == ""
    data = {
        "url": "https://x/{{host}}",
        "headers": [{"key": "A", "value": "${secrets.K} {{who}}"}],
        "n": 3,
        "{{key}}": "keys are not templates",
    }
    found = [(where, r.raw) for where, r in walk_references(data)]
    assert found == [
        (("url",), "{{host}}"),
        (("headers", 0, "value"), "${secrets.K}"),
        (("headers", 0, "value"), "{{who}}"),
    ]
    unknown = [(where, r.name) for where, r in unknown_references(data, known={"host"})]
    assert unknown == [(("headers", 0, "value"), "who")]


def test_builtins_are_never_unknown() -> None:
    text = " ".join(f"{{{{{n}.x}}}}" for n in sorted(TEMPLATE_BUILTINS))
    assert unknown_references(text, known=()) == []
    assert {
        "PREVIOUS_OUTPUT",
        "input",
        "iteration",
        "item",
        "APPROVAL_NOTE",
        "APPROVAL_DECISION",
        "__fanout",
        "run",
        "workflow",
        "env",
        "secrets",
    } == TEMPLATE_BUILTINS


# -- resolving -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Hello {{name}}!", "Hello Ada!"),
        ("Hello ${name}!", "Hello Ada!"),
        ("{{ name }} and ${ name }", "Ada and Ada"),
        ("first: {{resp.items[0].name}}", "first: first"),
        ("second: ${resp.items[1].name}", "second: second"),
        ("last: {{resp.items[-1].name}}", "last: second"),
        ("tag ${resp.items[0].tags[1]}", "tag y"),
        ("${a.b[0]}/${a.b[1]}", "zero/one"),
        ("${results[0].id}", "result_123"),
        ("n={{count}} r={{ratio}} t={{ok}} f={{off}}", "n=3 r=0.25 t=true f=false"),
        ("[{{nothing}}]", "[]"),
        ("obj={{obj}}", 'obj={"a":1,"b":[1,2],"c":"é"}'),
        ("lst={{lst}}", 'lst=[1,"two",null]'),
        (
            "total {{resp.total}} of {{resp}}",
            'total 2 of {"items":[{"name":"first","tags":["x","y"]},{"name":"second"}],"total":2}',
        ),
        ("verdict: {{answer.verdict}} {{answer.scores[1]}}", "verdict: approved 5"),
        ("{{input}} / {{PREVIOUS_OUTPUT}}", "prev out / prev out"),
        ("run {{run.id}} of {{workflow.name}}", "run run-1 of Review"),
        ("home={{env.HOME}} empty=[{{env.EMPTY}}]", "home=/home/ada empty=[]"),
    ],
)
def test_resolve_in_text(template: str, expected: str) -> None:
    assert resolve_templates(template, make_scope()) == expected


@pytest.mark.parametrize(
    "template",
    [
        "{{unknown}}",
        "${unknown.x}",
        "{{resp.missing}}",
        "{{resp.items[5].name}}",
        "{{resp.items[0].name.more}}",
        "{{count.x}}",
        "{{name[0]}}",
        "{{env.NOPE}}",
        "{{env}}",
        "{{env.HOME.x}}",
        "{{secrets.NOPE}}",
        "{{secrets}}",
        "{{iteration}}",
        "{{APPROVAL_NOTE}}",
        "{{__fanout}}",
        "{{answer.nope}}",
        "{{lst.x}}",
        "{{run.nope}}",
    ],
)
def test_unresolved_references_stay_as_written(template: str) -> None:
    scope = make_scope()
    assert resolve_templates(template, scope) == template
    assert resolve_templates(f"a {template} b {{{{name}}}}", scope) == f"a {template} b Ada"


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{count}}", 3),
        ("${ratio}", 0.25),
        ("{{ok}}", True),
        ("{{off}}", False),
        ("{{nothing}}", None),
        ("{{obj}}", {"a": 1, "b": [1, 2], "c": "é"}),
        ("${resp.items[0].tags}", ["x", "y"]),
        ("{{ lst }}", [1, "two", None]),
        ("{{answer.scores}}", [4, 5]),
        ("{{name}}", "Ada"),
    ],
)
def test_whole_field_reference_keeps_its_type(template: str, expected: object) -> None:
    assert resolve_templates(template, make_scope()) == expected
    assert type(resolve_templates(template, make_scope())) is type(expected)


def test_not_a_whole_field_when_anything_else_is_there() -> None:
    scope = make_scope()
    assert resolve_templates(" {{count}}", scope) == " 3"
    assert resolve_templates("{{count}}{{count}}", scope) == "33"
    assert resolve_templates("{{obj}}\n", scope) == '{"a":1,"b":[1,2],"c":"é"}\n'


def test_deep_resolution_of_node_data() -> None:
    data = {
        "method": "POST",
        "url": "https://api.test/users/{{resp.items[0].name}}?n=${count}",
        "headers": [{"key": "X-Who", "value": "{{name}}"}, {"key": "{{name}}", "value": "{{unknown}}"}],
        "body": {"count": "{{count}}", "obj": "${obj}", "flag": "{{ok}}", "text": "n={{count}}", "n": 7, "none": None},
        "tuple": ("{{name}}", 1),
        "maxChars": 100,
        "{{name}}": "dict keys are field names, left alone",
    }
    before = json.dumps(data, default=list)
    out = resolve_templates(data, make_scope())
    assert out == {
        "method": "POST",
        "url": "https://api.test/users/first?n=3",
        "headers": [{"key": "X-Who", "value": "Ada"}, {"key": "Ada", "value": "{{unknown}}"}],
        "body": {"count": 3, "obj": {"a": 1, "b": [1, 2], "c": "é"}, "flag": True, "text": "n=3", "n": 7, "none": None},
        "tuple": ("Ada", 1),
        "maxChars": 100,
        "{{name}}": "dict keys are field names, left alone",
    }
    assert json.dumps(data, default=list) == before  # the input is untouched
    assert out["headers"] is not data["headers"]


def test_builtins_shadow_variables_and_loop_and_approval_names() -> None:
    scope = make_scope(
        iteration=2,
        APPROVAL_NOTE="tighten the intro",
        APPROVAL_DECISION="reject",
        __fanout=["a", {"b": 1}],
        name="builtin wins",
    )
    assert (
        resolve_templates("#{{iteration}}: {{APPROVAL_DECISION}} - {{APPROVAL_NOTE}}", scope)
        == "#2: reject - tighten the intro"
    )
    assert resolve_templates("{{__fanout}}", scope) == ["a", {"b": 1}]
    assert resolve_templates("all: {{__fanout}}; {{__fanout[1].b}}", scope) == 'all: ["a",{"b":1}]; 1'
    assert resolve_templates("{{name}}", scope) == "builtin wins"
    assert resolve_templates("{{iteration}}", scope) == 2


def test_escape_applies_to_inserted_values_only() -> None:
    import json as _json
    from urllib.parse import quote

    scope = TemplateScope(variables={"q": 'say "hi" & go', "n": 2, "obj": {"a": 1}}, secrets={"K": "a b"}.get)
    assert (
        resolve_templates("https://x/?q={{q}}&n={{n}}&k={{secrets.K}}", scope, escape=quote)
        == "https://x/?q=say%20%22hi%22%20%26%20go&n=2&k=a%20b"
    )
    as_json = resolve_templates('{"text": "{{q}}"}', scope, escape=lambda s: _json.dumps(s)[1:-1])
    assert _json.loads(as_json) == {"text": 'say "hi" & go'}
    assert resolve_templates("{{q}}", scope, escape=quote) == 'say "hi" & go'  # a whole field keeps its value
    r = resolve_templates_masked("k={{secrets.K}}", scope, escape=quote)
    assert (r.value, r.masked) == ("k=a%20b", "k=••••")


def test_scope_lookup() -> None:
    scope = make_scope()
    assert scope.lookup("resp.items[1].name") == "second"
    assert scope.lookup(find_references("{{ obj }}")[0]) == {"a": 1, "b": [1, 2], "c": "é"}
    with pytest.raises(KeyError):
        scope.lookup("resp.nope")
    with pytest.raises(KeyError):
        scope.lookup("not a path")


def test_env_and_secrets_are_reserved_names() -> None:
    scope = TemplateScope(
        variables={"env": {"HOME": "variable"}, "secrets": {"K": "variable"}}, env={}, secrets=lambda n: None
    )
    assert resolve_templates("{{env.HOME}} {{secrets.K}}", scope) == "{{env.HOME}} {{secrets.K}}"


# -- secrets -------------------------------------------------------------------------------------


def test_secrets_are_sent_but_masked_for_events_and_records() -> None:
    scope = make_scope()
    data = {
        "headers": [{"key": "Authorization", "value": "Bearer {{secrets.API_TOKEN}}"}],
        "body": "${secrets.API_TOKEN}",
        "url": "https://x/?q={{name}}",
        "list": ["{{secrets.API_TOKEN}}", "{{count}}"],
    }
    r = resolve_templates_masked(data, scope)
    assert r.value == {
        "headers": [{"key": "Authorization", "value": f"Bearer {SECRET}"}],
        "body": SECRET,
        "url": "https://x/?q=Ada",
        "list": [SECRET, 3],
    }
    assert r.masked == {
        "headers": [{"key": "Authorization", "value": f"Bearer {SECRET_MASK}"}],
        "body": SECRET_MASK,
        "url": "https://x/?q=Ada",
        "list": [SECRET_MASK, 3],
    }
    assert SECRET not in json.dumps(r.masked)
    assert r.secrets == frozenset({SECRET})
    assert scope.secrets_used == {SECRET}
    assert SECRET_MASK == "••••"


def test_credential_like_environment_variables_are_masked_too() -> None:
    scope = TemplateScope(
        env={"OPENAI_API_KEY": "sk-abcdef123456", "GitHub_Token": "ghp_x1", "HOME": "/h", "EMPTY_PASSWORD": ""}
    )
    r = resolve_templates_masked(
        "{{env.OPENAI_API_KEY}} {{env.GitHub_Token}} {{env.HOME}} [{{env.EMPTY_PASSWORD}}]", scope
    )
    assert r.value == "sk-abcdef123456 ghp_x1 /h []"
    assert r.masked == "•••• •••• /h []"
    assert r.secrets == frozenset({"sk-abcdef123456", "ghp_x1"}) == frozenset(scope.secrets_used)


def test_masked_is_the_value_when_no_secret_is_used() -> None:
    r = resolve_templates_masked({"a": "{{name}}", "b": ["{{count}}"]}, make_scope())
    assert r.masked is r.value
    assert r.secrets == frozenset()


def test_mask_hides_echoed_secrets_anywhere() -> None:
    echoed = {"status": 200, "body": f'{{"auth": "Bearer {SECRET}"}}', "list": [SECRET, 5], "t": (SECRET,)}
    assert mask_secrets(echoed, {SECRET}) == {
        "status": 200,
        "body": '{"auth": "Bearer ••••"}',
        "list": ["••••", 5],
        "t": ("••••",),
    }
    assert mask_secrets("abc-long abc", ["abc", "abc-long", ""]) == "•••• ••••"
    assert mask_secrets("text", []) == "text"


def test_secret_lookup_reads_the_environment_then_the_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring
    from keyring.backend import KeyringBackend

    class MemoryKeyring(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def get_password(self, service: str, username: str) -> str | None:
            return {"flowdesk": {"KEYRING_ONLY": "from-keyring"}}.get(service, {}).get(username)

        def set_password(self, service: str, username: str, password: str) -> None:
            raise NotImplementedError

        def delete_password(self, service: str, username: str) -> None:
            raise NotImplementedError

    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        monkeypatch.setenv("FLOWDESK_TEST_SECRET", "from-env")
        assert secret_lookup("FLOWDESK_TEST_SECRET") == "from-env"
        # tests never read a keyring unless they opt in
        assert secret_lookup("KEYRING_ONLY") is None
        monkeypatch.setenv("FLOWDESK_KEYRING", "1")
        assert secret_lookup("KEYRING_ONLY") == "from-keyring"
        assert secret_lookup("NOT_ANYWHERE_AT_ALL") is None
        r = resolve_templates_masked("k={{secrets.KEYRING_ONLY}} e={{secrets.FLOWDESK_TEST_SECRET}}", TemplateScope())
        assert r.value == "k=from-keyring e=from-env"
        assert r.masked == "k=•••• e=••••"
    finally:
        keyring.set_keyring(previous)


def test_a_failing_secret_lookup_is_no_secret() -> None:
    def broken(name: str) -> str | None:
        raise RuntimeError("locked")

    assert resolve_templates("{{secrets.X}}", TemplateScope(secrets=broken)) == "{{secrets.X}}"


def test_secret_values_are_not_resolved_again() -> None:
    scope = TemplateScope(variables={"name": "Ada"}, secrets={"S": "{{name}}"}.get)
    assert resolve_templates("{{secrets.S}}!", scope) == "{{name}}!"


# -- rendering and completion --------------------------------------------------------------------


def test_render_value() -> None:
    assert [render_template_value(v) for v in ("s", 1, 1.5, True, None, [1, "a"], {"k": None}, (1, 2))] == [
        "s",
        "1",
        "1.5",
        "true",
        "",
        '[1,"a"]',
        '{"k":null}',
        "[1,2]",
    ]


def test_completion_prefix() -> None:
    text = "Summarise {{ resp.ite"
    ctx = template_completion(text, len(text))
    assert ctx is not None and (ctx.prefix, ctx.form, text[ctx.start :]) == ("resp.ite", "braces", "resp.ite")
    ctx = template_completion("x ${", 4)
    assert ctx is not None and (ctx.prefix, ctx.start, ctx.form) == ("", 4, "dollar")
    assert template_completion("{{a}} done", 10) is None
    assert template_completion("no braces", 5) is None
    assert template_completion("{{a b", 5) is None


# -- properties ----------------------------------------------------------------------------------

no_braces = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=200)
no_references = st.text(max_size=200).filter(lambda t: not find_references(t))


@settings(max_examples=200)
@given(no_braces)
def test_text_without_braces_is_unchanged(text: str) -> None:
    assert resolve_templates(text, make_scope()) == text
    assert resolve_templates_masked(text, make_scope()).masked == text


@settings(max_examples=200)
@given(no_references)
def test_resolve_is_idempotent_on_text_without_references(text: str) -> None:
    once = resolve_templates(text, make_scope())
    assert once == text
    assert resolve_templates(once, make_scope()) == once


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["a ", "{{name}}", "${count}", "{{nope}}", "}", "{", "{{", "$", "é"]), max_size=12))
def test_references_are_found_where_they_are(chunks: list[str]) -> None:
    text = "<" + "".join(chunks) + ">"  # never one whole-field reference: the result is text
    for ref in find_references(text):
        assert isinstance(ref, TemplateReference)
        assert text[ref.start : ref.end] == ref.raw
    out = resolve_templates(text, make_scope())
    assert "{{name}}" not in out and "${count}" not in out
    assert out.count("{{nope}}") == text.count("{{nope}}")
