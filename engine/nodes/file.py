"""The ``file`` node kind: a local file read as the step's output (seed 001's ``file_read``).

Data (DESIGN.md, "Learning and routing", *File input*): ``path`` (a template, resolved when the
step runs; relative to the workflow's folder, else the working directory), ``format`` — ``text``
(default), ``json`` (the parsed value), ``csv`` (a list of rows as objects, the first row being
the header), ``pdf`` (its text, through pypdf) — ``maxChars`` (text longer than that is cut;
0: no limit), ``outputVar``.

Only files inside the workflow's ``permissions.files`` folders may be read: a workflow without
``permissions`` reaches no file (the validator says so), a path outside them fails the step
with ``permission_denied``. A file that is binary (a NUL byte, or not UTF-8) fails unless the
format is ``pdf``; so does a file larger than :data:`MAX_BYTES`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from engine.graph.permissions import access_for, permissions_of
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, resolve_for_step

__all__ = ["FileData", "FileSpec", "read_file", "SPEC", "MAX_BYTES"]

MAX_BYTES = 50 * 1024 * 1024  # a bigger file fails rather than filling the run's memory
FORMATS = ("text", "json", "csv", "pdf")


class FileData(PolicyData):
    path: str = Field(
        default="", description="The file to read (templates allowed).", json_schema_extra={"filePicker": True}
    )
    format: Literal["text", "json", "csv", "pdf"] = "text"
    maxChars: int = Field(default=0, title="Max characters", description="Cut text longer than this (0: no limit).")

    @field_validator("path", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, v: Any) -> Any:
        return str(v or "text").strip().lower()

    @field_validator("maxChars", mode="before")
    @classmethod
    def _max_chars(cls, v: Any) -> Any:
        return 0 if v in (None, "") else v


def _text(raw: bytes, path: Path) -> str:
    if b"\x00" in raw[:8192]:
        raise NodeError(f"{path.name} is a binary file, not text (only PDF files are read as documents)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise NodeError(f"{path.name} is not UTF-8 text (a binary file?)") from None


def _pdf_text(raw: bytes, path: Path) -> str:
    from pypdf import PdfReader  # a base dependency, loaded only when a PDF is read
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(raw))
        return "\n\n".join((page.extract_text() or "").strip() for page in reader.pages).strip()
    except (PdfReadError, ValueError, KeyError, OSError) as err:
        raise NodeError(f"{path.name} is not a readable PDF ({err})") from None


def read_file(path: Path, fmt: str, max_chars: int = 0) -> Any:
    """The content of ``path`` as ``fmt`` says; :class:`NodeError` naming what is wrong."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise NodeError(f"{path} is not a file")
        if size > MAX_BYTES:
            raise NodeError(f"{path.name} is {size} bytes, more than the {MAX_BYTES} a file step reads")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise NodeError(f"there is no file {path}") from None
    except OSError as err:
        raise NodeError(f"{path} cannot be read: {err.strerror or err}") from None
    if fmt == "pdf":
        if not raw.startswith(b"%PDF"):
            raise NodeError(f"{path.name} is not a PDF file")
        text = _pdf_text(raw, path)
    else:
        text = _text(raw, path)
    if fmt == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise NodeError(f"{path.name} is not valid JSON ({err.msg} at line {err.lineno})") from None
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        if not rows:
            return []
        header = [h.strip() for h in rows[0]]
        return [dict(zip(header, row + [""] * (len(header) - len(row)), strict=False)) for row in rows[1:] if row]
    if max_chars and len(text) > max_chars:
        text = text[:max_chars]
    return text


class FileSpec(NodeSpec):
    kind = "file"
    data_model = FileData
    label = "Read file"
    description = "Reads a local file (text, JSON, CSV rows or PDF text) inside the workflow's permitted folders."
    icon = "file"
    color = "#6d5bd0"
    width = 224.0
    category = "Data"
    reports_output = False
    works = True

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        return [(getattr(data, "path", "") or "(no file)", False), (getattr(data, "format", "text"), True)]

    def new_data(self) -> dict[str, Any]:
        return {"path": "", "format": "text"}

    def describe(self, node: Any) -> str:
        return f"Read file '{node.id}'"

    def check(self, node: Any, checks: Any) -> None:
        d = node.data
        if not d.path.strip():
            checks.warning("file_no_path", f"{checks.label(node)} has no file path.")
        if d.maxChars < 0:
            checks.error("file_bad_max_chars", f"{checks.label(node)}: maxChars cannot be negative.")
        workflow = getattr(checks, "workflow", None)
        perms = permissions_of(workflow) if workflow is not None else None
        if workflow is not None and (perms is None or not perms.files):
            checks.warning(
                "file_not_permitted",
                f"{checks.label(node)} can read no file: the workflow's permissions list no folders "
                "(add the folder to permissions.files).",
            )

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        data, _secrets = resolve_for_step(ctx, node, value)
        raw_path = str(data.get("path") or "").strip()
        if not raw_path:
            raise NodeError(f"{self.describe(node)} has no file path")
        base = Path(ctx.path).parent if ctx.path else None
        access = access_for(ctx.workflow, open_by_default=False, base=base)
        access.check_file(raw_path)
        path = Path(os.path.expanduser(raw_path))
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        fmt = str(data.get("format") or "text")
        output = read_file(path, fmt if fmt in FORMATS else "text", int(data.get("maxChars") or 0))
        return output, "output"


SPEC = FileSpec()
