"""Serving library flows headless: ``flowdesk serve`` (HTTP API, webhooks) and ``flowdesk mcp
serve`` (MCP tools), over one shared run service.

* :mod:`~engine.serving.service`: :class:`RunService`, starting a library flow's run in the run
  store the desktop and ``flowdesk run`` use, following its events, answering its pause (claimed
  in the store, restored from its snapshot, wherever it paused) and cancelling it.
* :mod:`~engine.serving.auth`: bearer tokens, loopback rules, webhook signatures and secrets.
* :mod:`~engine.serving.catalog`: library flows as tools; noticing library changes.
* :mod:`~engine.serving.http_api` (the ``serve`` extra: FastAPI) and
  :mod:`~engine.serving.mcp_server` (the ``mcp`` extra): imported only by the commands that
  serve them, so this package imports neither extra.
"""

from engine.serving.service import RunService, RunView, ServiceError

__all__ = ["RunService", "RunView", "ServiceError"]
