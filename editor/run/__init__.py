"""Running from the editor: the run console, its bridge to the engine, approvals, the
subagent trace and per-node run details.

Importing this package imports no Qt; import the submodules (``editor.run.console``,
``editor.run.bridge``, ...) for the widgets. What a run did (node states, followed links,
details, approvals, subagent calls) is derived by the engine's :class:`engine.RunState`.
"""
