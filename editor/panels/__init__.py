"""Dock and side panels: node palette, inspector, problems list."""
