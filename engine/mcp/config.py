"""Where MCP servers are declared, and how one is reached (docs/design.md, "Acting": MCP).

A server is declared in the user's settings (``settings.json``: ``mcp.servers: {name: {...}}``)
or in a workflow's top-level ``mcpServers`` (the same shape; a workflow's entry wins over the
settings' of the same name). Two shapes:

* stdio: ``{command, args, env, cwd?}`` — the command is started as a subprocess speaking MCP
  on its stdin/stdout;
* Streamable HTTP: ``{url, headers}``.

``env`` and ``headers`` values may hold ``{{secrets.NAME}}`` (or ``{{env.NAME}}``): they are
resolved when the connection is opened (:func:`resolved`), never written back, and the values
used are returned so that whatever later names them (an error message) can mask them. The
settings file keeps the templates only. This module imports no MCP SDK: it is cheap, and the
validator and the editor use it without the ``mcp`` extra.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import FlowdeskError
from engine.graph.templates import TemplateScope, resolve_templates_masked
from engine.llm.config import load_settings, save_settings

__all__ = [
    "McpServerConfig",
    "McpError",
    "MCP_EXTRA_MESSAGE",
    "settings_servers",
    "workflow_servers",
    "servers_for",
    "save_server",
    "remove_server",
    "resolved",
    "parse_server",
]

log = logging.getLogger("flowdesk.mcp")

MCP_EXTRA_MESSAGE = (
    "MCP needs the 'mcp' extra (the official MCP SDK), which is not installed: pip install 'flowdesk[mcp]' "
    "(or, in a checkout, pip install -e '.[mcp]')."
)


class McpError(FlowdeskError):
    """An MCP server could not be reached, or answered with an error; the message names the server."""


class McpServerConfig(BaseModel):
    """One server: ``command`` (+ ``args``, ``env``, ``cwd``) for stdio, or ``url`` (+ ``headers``)."""

    model_config = ConfigDict(extra="allow")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    #: How long to wait for the server to start and answer its first request, and for a call (ms).
    timeoutMs: int | None = Field(default=None, ge=1)

    @field_validator("args", mode="before")
    @classmethod
    def _args(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            return v.split()
        return [str(x) for x in v] if isinstance(v, list) else v

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _mapping(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, list):  # [{key, value}] rows, as the http kind writes headers
            return {str(r.get("key")): str(r.get("value", "")) for r in v if isinstance(r, dict) and r.get("key")}
        if isinstance(v, dict):
            return {str(k): "" if x is None else str(x) for k, x in v.items()}
        return v

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def problem(self) -> str | None:
        """What makes this declaration unusable (None when it is usable)."""
        if self.command and self.url:
            return "gives both a command (stdio) and a url (HTTP); keep one"
        if not (self.command or "").strip() and not (self.url or "").strip():
            return "gives neither a command (stdio) nor a url (Streamable HTTP)"
        if self.url and not self.url.strip().lower().startswith(("http://", "https://")):
            return f"has the url {self.url!r}, which is not http:// or https://"
        return None

    def describe(self) -> str:
        """One line naming where the server is (no secret: templates are shown as written)."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args]).strip()

    def as_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=True)


def parse_server(name: str, raw: Any) -> McpServerConfig:
    """A server's declaration read; :class:`McpError` naming it when it is not one."""
    if not isinstance(raw, dict):
        raise McpError(
            f"The MCP server '{name}' is not declared as an object ({{command, args, env}} or {{url, headers}})."
        )
    try:
        return McpServerConfig.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise McpError(f"The MCP server '{name}' is not valid: {where}: {first.get('msg')}") from None


def _servers(raw: Any, where: str) -> dict[str, McpServerConfig]:
    out: dict[str, McpServerConfig] = {}
    if not isinstance(raw, dict):
        return out
    for name, value in raw.items():
        try:
            out[str(name)] = parse_server(str(name), value)
        except McpError as err:
            log.warning("%s (in %s)", err, where)
    return out


def _settings_mcp() -> dict[str, Any]:
    try:
        settings = load_settings()
    except FlowdeskError as err:
        log.warning("%s", err)
        return {}
    raw = (settings.model_extra or {}).get("mcp")
    return raw if isinstance(raw, dict) else {}


def settings_servers() -> dict[str, McpServerConfig]:
    """The servers declared in the user's settings (``mcp.servers``), by name."""
    return _servers(_settings_mcp().get("servers"), "the settings")


def workflow_servers(workflow: Any) -> dict[str, McpServerConfig]:
    """The servers a workflow declares at its top level (``mcpServers``), by name."""
    raw = getattr(workflow, "mcpServers", None)
    if raw is None and isinstance(getattr(workflow, "model_extra", None), dict):
        raw = workflow.model_extra.get("mcpServers")
    return _servers(raw, "the workflow")


def servers_for(workflow: Any = None) -> dict[str, McpServerConfig]:
    """Every server a run of ``workflow`` can reach: the settings', then the workflow's (which win)."""
    found = settings_servers()
    if workflow is not None:
        found.update(workflow_servers(workflow))
    return found


def save_server(name: str, server: McpServerConfig | dict[str, Any]) -> None:
    """Add (or replace) a server in the user's settings. A literal credential is not refused
    here (a local server may want a plain flag); the settings page suggests ``{{secrets.NAME}}``."""
    name = name.strip()
    if not name:
        raise McpError("An MCP server needs a name.")
    cfg = server if isinstance(server, McpServerConfig) else parse_server(name, server)
    problem = cfg.problem()
    if problem:
        raise McpError(f"The MCP server '{name}' {problem}.")
    settings = load_settings()
    mcp = dict((settings.model_extra or {}).get("mcp") or {})
    servers = dict(mcp.get("servers") or {})
    servers[name] = cfg.as_json()
    mcp["servers"] = servers
    _set_mcp(settings, mcp)
    save_settings(settings)


def _set_mcp(settings: Any, mcp: dict[str, Any]) -> None:
    """The settings' ``mcp`` section (an extra field: the provider settings' model knows it not)."""
    if settings.model_extra is not None:
        settings.model_extra["mcp"] = mcp


def remove_server(name: str) -> bool:
    """Take a server out of the user's settings; whether it was there."""
    settings = load_settings()
    mcp = dict((settings.model_extra or {}).get("mcp") or {})
    servers = dict(mcp.get("servers") or {})
    if name not in servers:
        return False
    del servers[name]
    mcp["servers"] = servers
    _set_mcp(settings, mcp)
    save_settings(settings)
    return True


def resolved(server: McpServerConfig) -> tuple[McpServerConfig, frozenset[str]]:
    """The declaration with ``{{secrets.NAME}}``/``{{env.NAME}}`` in ``env``, ``headers``, ``args``
    and ``url`` resolved, and the secret values used. A secret that is not set stays as written
    (the server then says what is missing)."""
    scope = TemplateScope()
    data = server.model_dump(mode="json", exclude_none=True)
    fields = {k: data[k] for k in ("env", "headers", "args", "url", "command", "cwd") if k in data}
    res = resolve_templates_masked(fields, scope)
    value = dict(res.value)
    out = server.model_copy(update={k: value[k] for k in fields})
    return out, frozenset(res.secrets)
