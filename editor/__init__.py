"""Flowdesk's PySide6 editor. Importing this package imports no Qt; ``editor.app`` does."""
