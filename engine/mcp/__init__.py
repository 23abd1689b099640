"""MCP servers as tool sources (docs/design.md, "Acting": MCP), through the official SDK.

* :mod:`engine.mcp.config`: where servers are declared (settings, a workflow's ``mcpServers``),
  their secrets resolved; no SDK needed.
* :mod:`engine.mcp.session`: one open connection (imports the SDK: the ``mcp`` extra).
* :mod:`engine.mcp.pool`: a run's connections, opened on first use, closed when it rests.
* :mod:`engine.mcp.results`: listings and call results as plain data.
* :mod:`engine.mcp.calls`: an agent's ``tools.mcp``, and a call logged as ``tool_call_*``.

Nothing is imported here, so that naming the package loads no module.
"""
