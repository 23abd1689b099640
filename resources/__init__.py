"""Flowdesk's data files (icons, style sheet, providers catalogue), installed as the package
``flowdesk_resources`` (see pyproject.toml); read them through ``engine.resources``."""
