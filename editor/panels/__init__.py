"""Dock and side panels: node palette, inspector, problems list, library, provider settings.

The inspector's page for a kind comes from one table, ``inspector_pages.INSPECTOR_PAGES``
(a generated form, ``data_form``, for a kind with no page registered)."""
