"""Sandboxes for code a workflow carries: Python in pydantic-monty (engine/code/monty.py),
JavaScript/TypeScript in Deno (engine/code/deno.py), and what the ``code`` and ``script``
kinds share (engine/code/errors.py). The runtimes come with the ``code`` extra and are
imported only when a step runs.
"""
