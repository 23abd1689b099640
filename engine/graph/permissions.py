"""What a workflow's steps may reach: the top-level ``permissions`` of a workflow.

``permissions: {network: [host[:port] | "*.domain" | "*"], files: [folders], flows: [ids | "*"],
tools: ["server/tool" | "server/*" | "*"]}``. Sandboxes deny by default:

* with no ``permissions`` in the workflow, http, fetch, flow, browser (within its scope) and MCP
  steps behave as before (anything), while code and scripts reach no network and no file;
* with ``permissions`` present, every kind is bounded by it (a missing list grants nothing).

A kind asks :class:`Access` (``access_for(workflow, open_by_default=...)``) before it reaches
out, and raises :class:`PermissionDenied` (message ``permission_denied: …`` naming what was
tried and the list that would grant it) when the answer is no.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator

from engine.nodes.base import NodeError

__all__ = ["Permissions", "PermissionDenied", "Access", "access_for", "permissions_of", "host_and_port"]

_FIELDS = ("network", "files", "flows", "tools")


class Permissions(BaseModel):
    """The ``permissions`` object of a workflow file. ``None`` in a list: not granted."""

    model_config = ConfigDict(extra="allow")

    network: list[str] | None = None
    files: list[str] | None = None
    flows: list[str] | None = None
    tools: list[str] | None = None

    @field_validator(*_FIELDS, mode="before")
    @classmethod
    def _text_list(cls, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, str):
            return [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError("must be a list of text entries")
        return [x.strip() for x in v if x.strip()]

    def is_empty(self) -> bool:
        return not any(getattr(self, f) for f in _FIELDS)


class PermissionDenied(NodeError):
    """A step tried to reach something its workflow's ``permissions`` do not grant."""

    code = "permission_denied"

    def __init__(self, what: str, field: str) -> None:
        self.what = what
        self.field = field
        super().__init__(f"permission_denied: {what} is not granted by the workflow's permissions.{field}")


def permissions_of(workflow: Any) -> Permissions | None:
    """The workflow's permissions, or ``None`` when it declares none."""
    value = getattr(workflow, "permissions", None)
    if value is None:
        return None
    if isinstance(value, Permissions):
        return value
    if isinstance(value, dict):
        return Permissions.model_validate(value)
    return None


def host_and_port(target: str) -> tuple[str, int | None]:
    """``("example.com", 443)`` from a URL, ``host`` or ``host:port`` (the port ``None`` when unsaid)."""
    text = target.strip()
    if "://" not in text:
        text = "//" + text
    parts = urlsplit(text)
    host = (parts.hostname or "").lower().rstrip(".")
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None and parts.scheme in ("http", "ws"):
        port = 80
    elif port is None and parts.scheme in ("https", "wss"):
        port = 443
    return host, port


class Access:
    """The answer to "may this step reach X?" for one workflow and one kind.

    ``open_by_default``: what a workflow *without* ``permissions`` allows this kind (True for
    http/fetch/flow/browser/mcp, False for code and scripts).
    """

    __slots__ = ("permissions", "open", "base")

    def __init__(
        self, permissions: Permissions | None, *, open_by_default: bool, base: str | os.PathLike[str] | None = None
    ):
        self.permissions = permissions
        self.open = permissions is None and open_by_default
        self.base = Path(base) if base else None

    def _entries(self, field: str) -> list[str]:
        if self.permissions is None:
            return []
        return list(getattr(self.permissions, field) or [])

    # -- network --------------------------------------------------------------------------
    def network_hosts(self) -> list[str] | None:
        """The granted ``host[:port]`` entries; ``None`` means every host (``"*"`` or open)."""
        entries = self._entries("network")
        if self.open or "*" in entries:
            return None
        return entries

    def allows_network(self, target: str) -> bool:
        if self.open:
            return True
        host, port = host_and_port(target)
        for entry in self._entries("network"):
            if entry == "*":
                return True
            want_host, want_port = host_and_port(entry)
            if ":" in entry.split("://")[-1] and want_port is not None and port != want_port:
                continue
            if want_host.startswith("*."):
                if host == want_host[2:] or host.endswith(want_host[1:]):
                    return True
            elif host == want_host:
                return True
        return False

    def check_network(self, target: str) -> None:
        if not self.allows_network(target):
            host, port = host_and_port(target)
            shown = f"{host}:{port}" if port not in (None, 80, 443) else host
            raise PermissionDenied(f"network access to {shown or target!r}", "network")

    # -- files ----------------------------------------------------------------------------
    def folders(self) -> list[Path]:
        """The granted folders, resolved (relative ones from the workflow's folder, else the cwd)."""
        out = []
        for entry in self._entries("files"):
            path = Path(os.path.expanduser(entry))
            if not path.is_absolute():
                path = (self.base or Path.cwd()) / path
            out.append(path.resolve())
        return out

    def allows_file(self, path: str | os.PathLike[str]) -> bool:
        if self.open:
            return True
        target = Path(os.path.expanduser(str(path)))
        if not target.is_absolute():
            target = (self.base or Path.cwd()) / target
        target = target.resolve()
        return any(target == folder or folder in target.parents for folder in self.folders())

    def check_file(self, path: str | os.PathLike[str]) -> None:
        if not self.allows_file(path):
            raise PermissionDenied(f"file access to {str(path)!r}", "files")

    # -- flows and tools ------------------------------------------------------------------
    def allows_flow(self, flow_id: str) -> bool:
        if self.open:
            return True
        entries = self._entries("flows")
        return "*" in entries or flow_id in entries

    def check_flow(self, flow_id: str) -> None:
        if not self.allows_flow(flow_id):
            raise PermissionDenied(f"the flow {flow_id!r}", "flows")

    def allows_tool(self, server: str, tool: str) -> bool:
        if self.open:
            return True
        entries = self._entries("tools")
        return "*" in entries or f"{server}/*" in entries or f"{server}/{tool}" in entries

    def check_tool(self, server: str, tool: str) -> None:
        if not self.allows_tool(server, tool):
            raise PermissionDenied(f"the tool {server}/{tool}", "tools")


def access_for(workflow: Any, *, open_by_default: bool, base: str | os.PathLike[str] | None = None) -> Access:
    """The :class:`Access` of a kind in ``workflow`` (see :class:`Access` for ``open_by_default``)."""
    return Access(permissions_of(workflow), open_by_default=open_by_default, base=base)
