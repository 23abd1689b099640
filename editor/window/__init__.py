"""The main window's parts, one concern per module; :mod:`editor.main_window` wires them.

* :mod:`.menus` - actions, menus, toolbar, status bar, pop-up menus
* :mod:`.files` - open, save, revert, recent files, start-up file
* :mod:`.autosave` - periodic autosave and crash recovery
* :mod:`.validation` - debounced validation and its display
* :mod:`.run_wiring` - the Run action, run console, run history and canvas run states
* :mod:`.edit_actions` - add node, clipboard, delete, collapse, auto-layout
* :mod:`.settings` - the window's QSettings (geometry, docks, toggles)
* :mod:`.find_bar`, :mod:`.welcome` - the find bar and the welcome page

Each part is a mixin of :class:`editor.main_window.MainWindow`, so the window's methods and
attributes keep their names; a part uses the widgets the window builds in ``__init__``.
"""
