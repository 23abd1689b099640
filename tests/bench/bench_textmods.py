"""Templates and trigger grammar: cost per node step and per sentence.

    python -m tests.bench.bench_textmods [--quick] [--json]

Templates: resolving a typical node's data (an http node with headers, a JSON body and a
prompt) with and without references, next to a baseline of ``copy.deepcopy`` of the same data
(the least a runtime that must not mutate node data would pay). Grammar: matching a sentence
against a library of 200 trigger patterns (``best_trigger_match``), and one adversarial pattern of four
wildcards against sentences of growing length, to show the cost grows polynomially (about
linearly per wildcard state), not exponentially. A script, not a timed test.
"""

from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from engine.flows.grammar import best_trigger_match, compile_trigger  # noqa: E402
from engine.graph.templates import TemplateScope, resolve_templates, resolve_templates_masked  # noqa: E402
from tests.bench.common import median_time, parse_args, report  # noqa: E402

NODE_WITH = {
    "method": "POST",
    "url": "https://api.example.com/users/{{user.id}}/items?limit=${limit}",
    "headers": [
        {"key": "Authorization", "value": "Bearer {{secrets.API_TOKEN}}"},
        {"key": "X-Run", "value": "{{run.id}}"},
    ],
    "bodyType": "json",
    "body": {"query": "{{input}}", "items": "{{resp.items}}", "n": "{{limit}}"},
    "prompt": "Summarise {{resp.items[0].name}} for {{user.name}} (iteration {{iteration}}): {{PREVIOUS_OUTPUT}}",
    "outputVar": "answer",
    "timeoutMs": 2000,
}
NODE_WITHOUT = {
    "method": "POST",
    "url": "https://api.example.com/users/7/items?limit=5",
    "headers": [{"key": "Authorization", "value": "Bearer none"}, {"key": "X-Run", "value": "r"}],
    "bodyType": "json",
    "body": {"query": "hello", "items": "[]", "n": "5"},
    "prompt": "Summarise the first item for Ada: a fairly long previous output would go here",
    "outputVar": "answer",
    "timeoutMs": 2000,
}


def scope() -> TemplateScope:
    return TemplateScope(
        variables={
            "user": {"id": 7, "name": "Ada"},
            "limit": 5,
            "resp": {"items": [{"name": f"item {i}", "n": i} for i in range(20)]},
        },
        builtins={"input": "hello", "PREVIOUS_OUTPUT": "x" * 2000, "iteration": 2, "run": {"id": "r-1"}},
        secrets={"API_TOKEN": "tok-123456"}.get,
        env={},
    )


def main() -> int:
    args = parse_args(__doc__.splitlines()[0])
    n = 200 if args.quick else 2000
    sc = scope()
    rows = []
    base = median_time(lambda: [copy.deepcopy(NODE_WITH) for _ in range(n)]) / n
    for label, data, fn in [
        ("resolve_templates, 10 references", NODE_WITH, resolve_templates),
        ("resolve_templates_masked, 10 references", NODE_WITH, resolve_templates_masked),
        ("resolve_templates, no references", NODE_WITHOUT, resolve_templates),
    ]:
        t = median_time(lambda: [fn(data, sc) for _ in range(n)]) / n
        rows.append({"case": label, "us_per_node": t * 1e6, "deepcopy_us": base * 1e6, "ratio": t / base})
    report("templates: one node's data per step", rows, args.json)

    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    patterns = []
    for i in range(200):
        a, b, c = words[i % 10], words[(i // 10) % 10], words[(i // 3) % 10]
        patterns.append((f"flow{i}", compile_trigger(f"{a} (the)? $(x:wildcard) {b} (with|using) $(n:number) {c}{i}")))
    patterns.append(
        ("target", compile_trigger("create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?"))
    )
    sentence = "create a new orleans jazz playlist with 12 songs"
    assert best_trigger_match(sentence, patterns)[0] == "target"
    miss = "nothing in the library matches this rather long sentence at all " * 2
    rows = []
    for label, s in [("match among 201 patterns", sentence), ("no match among 201 patterns", miss)]:
        t = median_time(lambda: best_trigger_match(s, patterns), repeat=5 if args.quick else 15)
        rows.append(
            {
                "case": label,
                "ms": t * 1e3,
                "us_per_pattern": t * 1e6 / len(patterns),
                "time_vs_first": None,
                "words_vs_first": None,
            }
        )
    hard = compile_trigger("$(a:wildcard) x $(b:wildcard) y $(c:wildcard) z $(d:wildcard) (w)?")
    lengths = [100, 200, 400] if args.quick else [250, 500, 1000, 2000]
    first = None
    for length in lengths:
        s = " ".join(["q"] * length)
        t = median_time(lambda: hard.match(s), repeat=3)
        first = first or (length, t)
        rows.append(
            {
                "case": f"4 wildcards, {length} words, no match",
                "ms": t * 1e3,
                "us_per_pattern": None,
                "time_vs_first": t / first[1],
                "words_vs_first": length / first[0],
            }
        )
    report("grammar", rows, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
