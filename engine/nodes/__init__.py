"""The node kinds: one :class:`NodeSpec` per kind, looked up by the node's ``type``.

Built-in kinds are named, not imported: :data:`BUILTINS` maps each ``type`` to the spec that
implements it by qualified name (``"engine.nodes.agent:SPEC"``), as Orange's widget descriptions
name their classes. A kind's module is imported on the first lookup of that kind (a workflow
of start and agent nodes never loads the http kind's client), all of them when the whole list
is asked for. So this registry, and the model that finds a node's data class through it,
import no kind module: a kind may import the model, templates or the library freely.
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
* ``load_plugins(*, reload=False) -> list[str]``: load the entry points now; warnings as text;
* ``load_builtins() -> dict[str, NodeSpec]``: import every built-in kind now.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

from engine.nodes.base import (
    COMMON_HANDLE_LABELS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_DELAY_MS,
    ERROR_HANDLE,
    ERROR_MODES,
    NodeData,
    NodeError,
    NodeOutcome,
    NodeSpec,
    PaletteEntry,
    PauseRequest,
    PolicyData,
    as_text,
    fill_prompt,
)

__all__ = [
    "NodeSpec",
    "NodeData",
    "NodeError",
    "NodeOutcome",
    "PauseRequest",
    "PaletteEntry",
    "spec_for",
    "node_specs",
    "register_node_spec",
    "unregister_node_spec",
    "palette_entries",
    "load_plugins",
    "ENTRY_POINT_GROUP",
    "BUILTIN_KINDS",
    "BUILTINS",
    "load_builtins",
    "as_text",
    "fill_prompt",
    "COMMON_HANDLE_LABELS",
    "PolicyData",
    "ERROR_MODES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RETRY_DELAY_MS",
    "ERROR_HANDLE",
]

ENTRY_POINT_GROUP = "flowdesk.nodes"
log = logging.getLogger("flowdesk.nodes")

#: The built-in kinds, in palette order: ``type`` -> ``"module:attribute"`` of its spec (or list
#: of specs, for a module that holds several kinds).
BUILTINS: dict[str, str] = {
    "start": "engine.nodes.start:SPEC",
    "agent": "engine.nodes.agent:SPEC",
    "if": "engine.nodes.if_:SPEC",
    "approval": "engine.nodes.approval:SPEC",
    "join": "engine.nodes.join:SPEC",
    "loop": "engine.nodes.loop:SPEC",
    "router": "engine.nodes.router:SPEC",
    "http": "engine.nodes.web:HTTP_SPEC",
    "fetch": "engine.nodes.web:FETCH_SPEC",
    "flow": "engine.nodes.flow:FLOW_SPEC",
    "action": "engine.nodes.flow:ACTION_SPEC",
    "code": "engine.nodes.code:SPEC",
    "script": "engine.nodes.script:SPEC",
    "browser": "engine.nodes.browser:SPEC",
    "file": "engine.nodes.file:SPEC",
    "mcp": "engine.nodes.mcp:SPEC",
}
BUILTIN_KINDS = tuple(BUILTINS)

# kind -> spec. Read directly (one dict lookup) on hot paths: Node data validation, the
# runtime's step, validation's pass over the nodes; a miss goes to spec_for, which loads the
# kind. Holds every built-in once :func:`load_builtins` ran (node_specs and the plug-in loader
# run it).
SPECS: dict[str, NodeSpec] = {}
_builtins_loaded = False
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
    if (spec.kind in SPECS or spec.kind in BUILTINS) and not replace:
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
    if spec is None and kind in BUILTINS:
        spec = _load_builtin(kind)
    if spec is None and not _plugins_loaded:
        load_plugins()
        spec = SPECS.get(kind)
    return spec


def node_specs() -> dict[str, NodeSpec]:
    """Every registered kind (plug-ins loaded), built-ins first."""
    if not _plugins_loaded:
        load_plugins()
    return dict(SPECS)


def _load_builtin(kind: str) -> NodeSpec:
    """Import the module of the built-in ``kind`` (named in :data:`BUILTINS`) and register its spec;
    a spec registered for that kind in code before (``replace=True``) is kept."""
    module, _, attr = BUILTINS[kind].partition(":")
    spec = _prepare(getattr(import_module(module), attr))
    if spec.kind != kind:
        raise ValueError(f"{BUILTINS[kind]} is the spec of '{spec.kind}', not of '{kind}'")
    return SPECS.setdefault(kind, spec)


def load_builtins() -> dict[str, NodeSpec]:
    """Every built-in kind loaded (a lookup loads only its own), built-ins first in
    :data:`BUILTINS` order; returns the registry."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        for kind in BUILTINS:
            if kind not in SPECS:
                _load_builtin(kind)
        ordered = {kind: SPECS[kind] for kind in BUILTINS}
        ordered.update(SPECS)
        SPECS.clear()
        SPECS.update(ordered)
    return SPECS


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
    if not _builtins_loaded:
        load_builtins()
    _plugins_loaded = True
    # importlib.metadata (~25 ms) is loaded only when plug-ins are: not to edit or validate a
    # workflow of built-in kinds. A standard-library module: no cycle can run through it.
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
