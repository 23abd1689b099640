"""Helpers of the acceptance suite: it drives Flowdesk as an outside user does, through the
`flowdesk` command line (a real subprocess) and files on disk, and checks what
DESIGN.md names (kinds, fields, handles, event types, validation codes). Nothing here
knows how the engine is built: only its commands, its file format and its event stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FLOWDESK = str(Path(sys.executable).with_name("flowdesk"))


@dataclass
class CliResult:
    """One `flowdesk` invocation: exit code, its output and (with --jsonl) the events."""

    rc: int
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)

    def of_type(self, kind: str, node: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind and (node is None or e.get("nodeId") == node)]

    def text_of(self, node: str | None = None) -> str:
        """Everything said about a node (or the whole run): event contents and the output,
        so a test can look for an error message wherever the product chose to put it."""
        parts = [json.dumps(e) for e in self.events if node is None or e.get("nodeId") in (node, "system")]
        return "\n".join(parts) + "\n" + self.stdout + "\n" + self.stderr

    @property
    def combined(self) -> str:
        return self.stdout + "\n" + self.stderr


def payload(event: dict[str, Any]) -> dict[str, Any]:
    """An event's fields: its `content` when that is an object, plus any extra top-level
    fields (the wire form is `{timestamp, nodeId, type, content}`; where the fields live is
    not what this suite checks)."""
    out: dict[str, Any] = {}
    content = event.get("content")
    if isinstance(content, str):
        try:
            decoded = json.loads(content)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            out.update(decoded)
    elif isinstance(content, dict):
        out.update(content)
    for key, value in event.items():
        if key not in ("timestamp", "nodeId", "type", "content"):
            out.setdefault(key, value)
    return out


def cli(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 180) -> CliResult:
    proc = subprocess.run(
        [FLOWDESK, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    events = []
    if "--jsonl" in args:
        for line in proc.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    return CliResult(proc.returncode, proc.stdout, proc.stderr, events)


class Home:
    """A user's world for one test: a data and config folder (with the flow library in
    `data/library`), a working folder, and the commands run in it."""

    def __init__(self, root: Path):
        self.root = root
        self.data = root / "data"
        self.library = self.data / "library"
        self.library.mkdir(parents=True)
        (root / "config").mkdir()
        self.env = dict(os.environ)
        self.env["FLOWDESK_DATA_DIR"] = str(self.data)
        self.env["FLOWDESK_CONFIG_DIR"] = str(root / "config")
        self.env.pop("FLOWDESK_SHOW_BROWSER", None)

    def write(self, name: str, doc: dict[str, Any] | str) -> Path:
        path = self.root / name
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1), encoding="utf-8")
        return path

    def add_library_flow(self, flow_id: str, doc: dict[str, Any]) -> Path:
        doc = {**doc, "id": flow_id, "name": doc.get("name", flow_id)}
        path = self.library / f"{flow_id}.flow.json"
        path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        return path

    def run(self, path: Path, *extra: str, timeout: float = 180) -> CliResult:
        """`flowdesk run FILE --provider echo --jsonl`: the events of the run."""
        return cli(
            "run", str(path), "--provider", "echo", "--jsonl", *extra, env=self.env, cwd=self.root, timeout=timeout
        )

    def run_json(self, path: Path, *extra: str, timeout: float = 180) -> tuple[CliResult, dict[str, Any]]:
        """`flowdesk run FILE --provider echo --json`: `{runId, status, output, vars, results}`."""
        res = cli(
            "run", str(path), "--provider", "echo", "--json", *extra, env=self.env, cwd=self.root, timeout=timeout
        )
        start = res.stdout.find("{")
        assert start >= 0, f"no JSON document printed (rc {res.rc}): {res.combined}"
        return res, json.loads(res.stdout[start:])

    def validate(self, path: Path, *extra: str) -> CliResult:
        return cli("validate", str(path), *extra, env=self.env, cwd=self.root, timeout=120)

    def import_(self, path: Path, out: Path) -> CliResult:
        return cli("import", str(path), "-o", str(out), env=self.env, cwd=self.root, timeout=120)


def start_node(variables: list[dict[str, Any]] | None = None, initial: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"initialInput": initial}
    if variables:
        data["variables"] = variables
    return {"id": "start", "type": "start", "x": 0, "y": 0, "data": data}


def var(name: str, value: Any = "", type_: str = "string", required: bool = False) -> dict[str, Any]:
    return {"name": name, "value": value, "type": type_, "description": name, "required": required}


def link(source: str, target: str, handle: str = "output") -> dict[str, Any]:
    return {"source": source, "target": target, "sourceHandle": handle, "targetHandle": "input"}


def chain(name: str, nodes: list[dict[str, Any]], extra_links=(), **top: Any) -> dict[str, Any]:
    """A workflow whose nodes run one after the other (the first is the Start node)."""
    links = [link(a["id"], b["id"]) for a, b in zip(nodes, nodes[1:])]
    for i, node in enumerate(nodes):
        node.setdefault("x", 200 * i)
        node.setdefault("y", 100)
    return {"name": name, "version": 1, "nodes": nodes, "connections": links + list(extra_links), **top}


def result_of(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    for row in doc.get("results", []):
        if row.get("nodeId") == node_id:
            return row
    raise AssertionError(f"node {node_id} not in the results: {doc.get('results')}")


class PageServer:
    """A small web site on 127.0.0.1, port 0: `pages` maps a path to (content type, body),
    ("redirect", location) or a function of the query string giving one; every request is remembered (host, path) so a
    test can prove a request was never sent."""

    def __init__(self, pages: dict[str, Any]):
        self.pages = pages
        self.requests: list[tuple[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                path, _, query = self.path.partition("?")
                server.requests.append((self.headers.get("Host", ""), path))
                page = server.pages.get(path)
                if callable(page):
                    page = page(query)
                if page is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                ctype, body = page
                if ctype == "redirect":  # ("redirect", location)
                    self.send_response(302)
                    self.send_header("Location", body)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = body.encode() if isinstance(body, str) else body
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> PageServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def paths(self) -> list[str]:
        return [p for _, p in self.requests]
