"""The `file` kind: text, JSON, CSV (first row the header), PDF text; only inside
permissions.files; binary non-PDF files fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import EchoProvider, Run, RunStatus, parse_workflow, validate

from .pdf import tiny_pdf


def workflow(path: str, fmt: str = "text", files: list[str] | None = None, **extra) -> object:
    wf = {
        "name": "Read",
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": ""}},
            {"id": "f", "type": "file", "data": {"path": path, "format": fmt, "outputVar": "content", **extra}},
        ],
        "connections": [{"source": "s", "target": "f", "sourceHandle": "output", "targetHandle": "input"}],
    }
    if files is not None:
        wf["permissions"] = {"files": files}
    return parse_workflow(wf)


async def run_of(wf, tmp_path: Path) -> Run:
    run = Run(wf, EchoProvider(), path=str(tmp_path / "read.flow.json"))
    await run.start()
    return run


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "note.txt").write_text("hello file")
    (d / "data.json").write_text(json.dumps({"a": [1, 2]}))
    (d / "rows.csv").write_text("name,age\nAda,36\nAlan,41\n")
    (d / "doc.pdf").write_bytes(tiny_pdf("Hello PDF world"))
    (d / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    return d


@pytest.mark.parametrize(
    ("name", "fmt", "expected"),
    [
        ("note.txt", "text", "hello file"),
        ("data.json", "json", {"a": [1, 2]}),
        ("rows.csv", "csv", [{"name": "Ada", "age": "36"}, {"name": "Alan", "age": "41"}]),
    ],
)
async def test_formats(docs, tmp_path, name, fmt, expected) -> None:
    run = await run_of(workflow("docs/" + name, fmt, ["docs"]), tmp_path)
    assert run.status == RunStatus.COMPLETED, run.error
    assert run.outputs["f"] == expected
    assert run.variables["content"] == expected


async def test_pdf_text_and_max_chars(docs, tmp_path) -> None:
    run = await run_of(workflow(str(docs / "doc.pdf"), "pdf", [str(docs)]), tmp_path)
    assert run.status == RunStatus.COMPLETED, run.error
    assert "Hello PDF world" in run.outputs["f"]
    run = await run_of(workflow("docs/note.txt", "text", ["docs"], maxChars=5), tmp_path)
    assert run.outputs["f"] == "hello"


async def test_the_path_is_a_template(docs, tmp_path) -> None:
    wf = workflow("docs/{{name}}", "text", ["docs"])
    run = Run(wf, EchoProvider(), path=str(tmp_path / "read.flow.json"), variables={"name": "note.txt"})
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert run.outputs["f"] == "hello file"


async def test_outside_permissions_is_refused(docs, tmp_path) -> None:
    (tmp_path / "secret.txt").write_text("no")
    run = await run_of(workflow(str(tmp_path / "secret.txt"), "text", ["docs"]), tmp_path)
    assert run.status == RunStatus.FAILED and "permission_denied" in run.error
    run = await run_of(workflow("docs/note.txt"), tmp_path)  # no permissions: no files
    assert run.status == RunStatus.FAILED and "permission_denied" in run.error
    codes = [i.code for i in validate(workflow("docs/note.txt"))]
    assert "file_not_permitted" in codes
    assert "file_not_permitted" not in [i.code for i in validate(workflow("docs/note.txt", "text", ["docs"]))]


async def test_binary_non_pdf_fails(docs, tmp_path) -> None:
    run = await run_of(workflow("docs/blob.bin", "text", ["docs"]), tmp_path)
    assert run.status == RunStatus.FAILED and "binary" in run.error
    run = await run_of(workflow("docs/blob.bin", "pdf", ["docs"]), tmp_path)
    assert run.status == RunStatus.FAILED and "not a PDF" in run.error
    run = await run_of(workflow("docs/missing.txt", "text", ["docs"]), tmp_path)
    assert run.status == RunStatus.FAILED and "no file" in run.error
