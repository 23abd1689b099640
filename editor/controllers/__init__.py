"""The main window's controllers: each owns one concern's state and talks to the others
through Qt signals and the references it is given when built; :mod:`editor.main_window`
builds them and wires their signals (it is the composition root).

* :mod:`.session` - whether a document is shown, and which one (its serial)
* :mod:`.files` - new, open, save, revert, export, recent files, start-up file, recovery
* :mod:`.autosave` - periodic autosave of unsaved work
* :mod:`.validation` - debounced validation and its display
* :mod:`.runs` - the Run action, the console's run on the canvas and the inspector's Run tab
* :mod:`.run_views` - stored runs: their windows, resuming, reopening a version
* :mod:`.providers` - the LLM provider and model, provider settings, Run On (Temporal)
* :mod:`.library` - the Library dock, Save to Library, subflows, the quick fix
* :mod:`.command_bar` - Ctrl+K and the run windows it opens
* :mod:`.editing` - add node, clipboard, delete, collapse, auto-layout, quick add
* :mod:`.repair` - Repair… on a failed node
* :mod:`.help` - Keyboard Shortcuts and About
"""
