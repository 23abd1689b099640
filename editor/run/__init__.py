"""Running from the editor: the run console, its bridge to the engine, approvals, the
subagent trace and per-node run details.

Importing this package imports no Qt; import the submodules (``editor.run.console``,
``editor.run.bridge``, ...) for the widgets. ``editor.run.state`` is Qt-free.
"""
