"""The node kinds: one :class:`NodeSpec` per kind, looked up by the node's ``type``.

Built-in kinds (``start``, ``agent``, ``if``, ``approval``, ``join``, ``loop``) are registered at import.
Other packages add kinds through the entry-point group ``flowdesk.nodes``: each entry
point names a spec (an instance or a ``NodeSpec`` subclass) or a list of them. Plug-ins
are loaded once, lazily: the first time a kind that is not built in is looked up, or the
whole list is asked for (the editor's palette). A plug-in that fails to load, or names
something that is not a spec, or a kind already taken, is skipped with a logged warning.

Registry API (what the model, validation, the runtime and the editor use):

* ``spec_for(kind) -> NodeSpec | None``: the spec of a kind (``None``: unknown kind);
* ``node_specs() -> dict[str, NodeSpec]``: every kind, built-ins first, plug-ins loaded;
* ``register_node_spec(spec, *, replace=False) -> NodeSpec``: add a kind in code;
* ``unregister_node_spec(kind)``: take a registered kind out again (tests, plug-in reload);
* ``palette_entries() -> list[PaletteEntry]``: what the editor's palette lists, in order;
* ``load_plugins(*, reload=False) -> list[str]``: load the entry points now; warnings as text.
"""

from __future__ import annotations

import logging
from typing import Any

from engine.nodes.base import (COMMON_HANDLE_LABELS, DEFAULT_MAX_RETRIES, DEFAULT_RETRY_DELAY_MS, ERROR_HANDLE, ERROR_MODES,
                   NodeData, NodeError, NodeOutcome, NodeSpec, PaletteEntry, PauseRequest, PolicyData, RunContext,
                   as_text, fill_prompt)

__all__ = ["NodeSpec", "NodeData", "NodeError", "NodeOutcome", "PauseRequest", "PaletteEntry", "RunContext",
           "spec_for", "node_specs", "register_node_spec", "unregister_node_spec", "palette_entries", "load_plugins",
           "ENTRY_POINT_GROUP", "BUILTIN_KINDS", "as_text", "fill_prompt", "COMMON_HANDLE_LABELS", "PolicyData",
           "ERROR_MODES", "DEFAULT_MAX_RETRIES", "DEFAULT_RETRY_DELAY_MS", "ERROR_HANDLE"]

ENTRY_POINT_GROUP = "flowdesk.nodes"
log = logging.getLogger("flowdesk.nodes")

# kind -> spec. Read directly (one dict lookup) on hot paths: Node data validation, the
# runtime's step, validation's pass over the nodes.
SPECS: dict[str, NodeSpec] = {}
_plugins_loaded = False
_plugin_warnings: list[str] = []


def _prepare(spec: Any) -> NodeSpec:
    if isinstance(spec, type) and issubclass(spec, NodeSpec):
        spec = spec()
    if not isinstance(spec, NodeSpec):
        raise TypeError(f"{spec!r} is not a NodeSpec")
    kind = spec.kind
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{spec!r} has no kind")
    if not (isinstance(spec.data_model, type) and issubclass(spec.data_model, NodeData)):
        raise TypeError(f"the data model of kind '{kind}' must be a subclass of engine.NodeData")
    spec.has_check = type(spec).check is not NodeSpec.check
    try:
        spec.plain_out = bool(spec.plain_output())
    except Exception:  # a data model without defaults: links from it get the full checks
        spec.plain_out = False
    spec.takes_input = "input" in spec.inputs
    return spec


def register_node_spec(spec: NodeSpec | type[NodeSpec], *, replace: bool = False) -> NodeSpec:
    """Add a kind. Raises ValueError when the kind is taken (unless ``replace``), TypeError for a non-spec."""
    spec = _prepare(spec)
    if spec.kind in SPECS and not replace:
        raise ValueError(f"the node kind '{spec.kind}' is already registered")
    SPECS[spec.kind] = spec
    return spec


def unregister_node_spec(kind: str) -> None:
    if kind in BUILTIN_KINDS:
        raise ValueError(f"'{kind}' is a built-in node kind")
    SPECS.pop(kind, None)


def spec_for(kind: str) -> NodeSpec | None:
    """The spec of ``kind``; loads the plug-ins the first time a kind is not built in."""
    spec = SPECS.get(kind)
    if spec is None and not _plugins_loaded:
        load_plugins()
        spec = SPECS.get(kind)
    return spec


def node_specs() -> dict[str, NodeSpec]:
    """Every registered kind (plug-ins loaded), built-ins first."""
    if not _plugins_loaded:
        load_plugins()
    return dict(SPECS)


def palette_entries() -> list[PaletteEntry]:
    entries: list[PaletteEntry] = []
    for spec in node_specs().values():
        try:
            entries.extend(spec.palette_entries())
        except Exception as err:  # a plug-in's bug must not take the palette down
            log.warning("Flowdesk: node kind '%s' could not list its palette entries: %r", spec.kind, err)
    return entries


def load_plugins(*, reload: bool = False) -> list[str]:
    """Load the ``flowdesk.nodes`` entry points (once). Returns the warnings of this and earlier loads."""
    global _plugins_loaded
    if _plugins_loaded and not reload:
        return list(_plugin_warnings)
    _plugins_loaded = True
    from importlib.metadata import entry_points

    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except Exception as err:  # unreadable metadata of some installed package
        _warn(f"Flowdesk: node plug-ins could not be listed: {err!r}")
        return list(_plugin_warnings)
    for ep in eps:
        where = f"'{ep.name}' ({ep.value}"
        dist = getattr(ep, "dist", None)
        if dist is not None:
            where += f", from {dist.metadata['Name'] if dist.metadata else '?'}"
        where += ")"
        try:
            obj = ep.load()
        except Exception as err:
            _warn(f"Flowdesk: the node plug-in {where} could not be loaded and is skipped: {err!r}")
            continue
        items = obj if isinstance(obj, (list, tuple)) else [obj]
        for item in items:
            try:
                spec = _prepare(item)
            except (TypeError, ValueError) as err:
                _warn(f"Flowdesk: the node plug-in {where} is skipped: {err}")
                continue
            current = SPECS.get(spec.kind)
            if current is not None and type(current) is not type(spec):
                _warn(f"Flowdesk: the node plug-in {where} is skipped: the kind '{spec.kind}' is already taken")
                continue
            SPECS[spec.kind] = spec
    return list(_plugin_warnings)


def _warn(text: str) -> None:
    _plugin_warnings.append(text)
    log.warning("%s", text)


def _register_builtins() -> None:
    from engine.nodes import agent, approval, flow, if_, join, loop, script, start, web

    for module in (start, agent, if_, approval, join, loop):
        register_node_spec(module.SPEC)
    for spec in (*web.SPECS, *flow.SPECS):
        register_node_spec(spec)
    register_node_spec(script.SPEC)


_register_builtins()
BUILTIN_KINDS = tuple(SPECS)
