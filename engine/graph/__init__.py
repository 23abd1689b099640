"""The workflow: its model, index, templates, variables and validation."""
