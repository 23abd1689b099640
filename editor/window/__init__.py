"""The main window's widgets, dialogs and menus; the controllers that drive them are in
:mod:`editor.controllers`, and :mod:`editor.main_window` wires both.

* :mod:`.menus` - actions, menus, toolbar, status bar, the canvas's context menu
* :mod:`.settings` - the GUI's QSettings file, the window's geometry and dock layout
* :mod:`.opening` - a big file opened in steps on a worker thread, with progress and Cancel
* :mod:`.welcome`, :mod:`.find_bar` - the welcome page and the find bar
* :mod:`.command_bar` - the Ctrl+K bar and its run windows
* :mod:`.help`, :mod:`.repair`, :mod:`.run_on` - the Help dialogs, the Repair dialog, the Temporal server dialog
"""
