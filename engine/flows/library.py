"""The flow library: reusable, parameterised flows kept as ``.flow.json`` files in folders.

Folders: the user data folder's ``library/`` (:func:`library_dir`, always first; new flows
are saved there) plus the folders listed in the settings (``library.folders``). Each flow is
a :class:`LibraryFlow`: its stable ``id`` (the workflow's top-level ``id``, made on first save
by :meth:`FlowLibrary.save`; a file without one is known by its file stem), ``name``,
``description``, ``parameters`` (the Start node's ``variables``), ``triggers`` (the top-level
list of patterns, kept as text; :mod:`engine.flows.grammar` compiles them), ``enabled`` (flows turned
off are listed in the settings' ``library.disabled``) and ``path``.

The samples shipped with Flowdesk are copied into ``library/`` once: the settings remember
each sample seeded (``library.seeded``), so a sample the user deleted does not come back.

A file that cannot be read is listed with ``error`` set (never raised); ``get`` and
``load`` skip such entries. Scans are cached per file (size and modification time), so
asking for the flows again (validation does, on every edit) costs one ``stat`` per file.

Usage: the library's index (``index.json`` in the first folder, not in the flow files) keeps,
per flow id, ``usage: {runs, lastRun, created}`` (:meth:`FlowLibrary.record_run`, counted by
``flowdesk run``/``do`` and the desktop when they run a library flow); ``LibraryFlow.usage``
holds it and :meth:`FlowLibrary.by_use` sorts by it. A flow first seen that was imported from
an AnythingLLM flow with ``active: false`` is turned off then (it lands disabled).

Flow references (the ``flow`` node's ``flow``, an agent's ``tools.flows``, the ``action``
node's name) are resolved by :meth:`FlowLibrary.resolve`: a library id, else a path
(relative to the referring file), else a flow's name (``action`` binds by name).

What a library entry holds and how it is read from a workflow (parameters, triggers, whether
it can pause) is :mod:`engine.flows.library_entries`; its names are importable from here.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engine.errors import FlowdeskError
from engine.flows.library_entries import (
    FLOW_SUFFIX,
    FlowParameter,
    LibraryError,
    LibraryFlow,
    flow_parameters,
    flow_triggers,
    learned_triggers,
    workflow_can_pause,
)
from engine.flows.usage import UsageIndex, lands_disabled
from engine.graph.model import Workflow, WorkflowLoadError, load_workflow, new_id, save_workflow
from engine.graph.model import load_workflow as _load
from engine.llm.config import Settings, load_settings, save_settings
from engine.paths import data_dir
from engine.resources import sample_paths

__all__ = [
    "FlowLibrary",
    "LibraryFlow",
    "FlowParameter",
    "LibraryError",
    "library_dir",
    "default_library",
    "flow_parameters",
    "workflow_can_pause",
    "FLOW_SUFFIX",
]


def library_dir() -> Path:
    """The user data folder's ``library/`` (``$FLOWDESK_DATA_DIR/library`` in tests)."""
    return data_dir() / "library"


_SLUG = re.compile(r"[^a-z0-9]+")


def _slug(name: str) -> str:
    return _SLUG.sub("-", name.lower()).strip("-")[:60] or "flow"


class FlowLibrary:
    """The library over ``folders`` (default: :func:`library_dir` plus the settings' folders).

    ``seed=True`` (the default for the default folders) copies the samples in once.
    """

    def __init__(self, folders: Iterable[str | os.PathLike[str]] | None = None, *, seed: bool | None = None) -> None:
        self._explicit = folders is not None
        self._folders = [Path(f) for f in folders] if folders is not None else None
        self._cache: dict[Path, tuple[tuple[int, int], LibraryFlow, Workflow | None]] = {}
        self._lock = threading.Lock()
        self._usage = UsageIndex(lambda: self.primary)
        if seed if seed is not None else not self._explicit:
            try:
                self.seed_samples()
            except (OSError, FlowdeskError):
                pass  # a read-only data folder: the library works without the samples

    # ------------------------------------------------------------------ folders and settings
    @property
    def folders(self) -> list[Path]:
        """The folders read, the first one being where new flows are saved."""
        if self._folders is not None:
            return list(self._folders)
        out = [library_dir()]
        for f in self._settings().library.folders:
            p = Path(f).expanduser()
            if p not in out:
                out.append(p)
        return out

    @property
    def primary(self) -> Path:
        return self.folders[0]

    def _settings(self) -> Any:
        try:
            return load_settings()
        except FlowdeskError:
            return Settings()

    def _save_settings(self, settings: Any) -> None:
        save_settings(settings)

    def add_folder(self, folder: str | os.PathLike[str]) -> None:
        """Add a folder to the settings' list (the default library only)."""
        settings = self._settings()
        text = str(Path(folder).expanduser())
        if text not in settings.library.folders:
            settings.library.folders.append(text)
            self._save_settings(settings)
        if self._folders is not None and Path(text) not in self._folders:
            self._folders.append(Path(text))

    def remove_folder(self, folder: str | os.PathLike[str]) -> None:
        settings = self._settings()
        text = str(Path(folder).expanduser())
        if text in settings.library.folders:
            settings.library.folders.remove(text)
            self._save_settings(settings)
        if self._folders is not None and Path(text) in self._folders[1:]:
            self._folders.remove(Path(text))

    # ------------------------------------------------------------------ listing
    def flows(self) -> list[LibraryFlow]:
        """Every flow, in library order (folder order, then file name); unreadable files included with ``error``."""
        out = self._scan()
        for entry in out:
            self._fill_can_pause(entry)
        return out

    def _fill_can_pause(self, entry: LibraryFlow) -> LibraryFlow:
        if not entry.error:
            wf = self._cache.get(entry.path, (None, None, None))[2]
            entry.can_pause = wf is not None and workflow_can_pause(wf, self, base=entry.path, _seen={str(entry.path)})
        return entry

    def _scan(self) -> list[LibraryFlow]:
        out = self._scan_folders()
        _NAMES.update((f.id, f.name) for f in out if not f.error and f.name and f.name != f.id)
        return out

    def _scan_folders(self) -> list[LibraryFlow]:
        out = self._scan_files()
        usage, fresh = self._usage.usage((f.id, f.path) for f in out if not f.error)
        off = [f.id for f in out if f.id in fresh and self._imported_off(f)]
        if off:  # imported with active: false: it lands disabled
            settings = self._settings()
            settings.library.disabled.extend(i for i in off if i not in settings.library.disabled)
            self._save_settings(settings)
        for f in out:
            f.usage = dict(usage.get(f.id) or {})
            if f.id in off:
                f.enabled = False
        return out

    def _imported_off(self, entry: LibraryFlow) -> bool:
        wf = self._cache.get(entry.path, (None, None, None))[2]
        return wf is not None and lands_disabled(wf)

    # ------------------------------------------------------------------ usage (engine/flows/usage.py)
    @property
    def index_path(self) -> Path:
        return self._usage.path

    def record_run(self, flow_id: str, when: float | None = None) -> None:
        """Count one run of library flow ``flow_id`` in the library's index."""
        self._usage.record_run(flow_id, when)

    def entry_for_path(self, path: str | os.PathLike[str]) -> LibraryFlow | None:
        """The library flow whose file is ``path`` (None when the file is not in the library)."""
        try:
            target = Path(path).resolve()
        except OSError:
            return None
        for f in self._scan():
            try:
                if not f.error and f.path.resolve() == target:
                    return f
            except OSError:
                continue
        return None

    def by_use(self) -> list[LibraryFlow]:
        """The flows, most run first (then most recently run, then library order)."""
        flows = self.flows()
        return sorted(flows, key=lambda f: (-int(f.usage.get("runs") or 0), -(f.usage.get("lastRun") or 0)))

    def _scan_files(self) -> list[LibraryFlow]:
        disabled = set(self._settings().library.disabled)
        out: list[LibraryFlow] = []
        seen_ids: set[str] = set()
        with self._lock:
            for folder in self.folders:
                try:
                    files = sorted(p for p in folder.glob(f"*{FLOW_SUFFIX}") if p.is_file())
                except OSError:
                    continue
                for path in files:
                    entry = self._read(path)
                    if entry is None:
                        continue
                    if entry.id in seen_ids and not entry.error:
                        entry = LibraryFlow(
                            **{**_fields(entry), "error": f"another flow already has the id '{entry.id}'"}
                        )
                    seen_ids.add(entry.id)
                    entry.enabled = entry.id not in disabled
                    out.append(entry)
        return out

    def _read(self, path: Path) -> LibraryFlow | None:
        try:
            st = path.stat()
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return LibraryFlow(**_fields(cached[1]))
        stem = path.name[: -len(FLOW_SUFFIX)]
        try:
            wf = load_workflow(path)
        except WorkflowLoadError as err:
            entry = LibraryFlow(id=stem, name=stem, path=path, error=str(err))
            self._cache[path] = (key, entry, None)
            return LibraryFlow(**_fields(entry))
        flow_id = getattr(wf, "id", None) or stem
        entry = LibraryFlow(
            id=str(flow_id),
            name=wf.name or stem,
            path=path,
            description=wf.description or "",
            parameters=flow_parameters(wf),
            triggers=flow_triggers(wf),
            learned=learned_triggers(wf),
        )
        self._cache[path] = (key, entry, wf)
        return LibraryFlow(**_fields(entry))

    def get(self, id_or_name: str) -> LibraryFlow | None:
        """A readable flow by id, else by name (case-insensitive), else by file stem."""
        if not id_or_name:
            return None
        flows = [f for f in self._scan() if not f.error]
        low = id_or_name.strip().lower()
        found = (
            next((f for f in flows if f.id == id_or_name), None)
            or next((f for f in flows if f.name.strip().lower() == low), None)
            or next((f for f in flows if f.path.name[: -len(FLOW_SUFFIX)].lower() == low), None)
        )
        return self._fill_can_pause(found) if found is not None else None

    def resolve(
        self, ref: str, *, base: str | os.PathLike[str] | None = None, by_name: bool = True
    ) -> LibraryFlow | None:
        """What a flow reference names: a library id, a path (relative to the file ``base``), or a name."""
        ref = (ref or "").strip()
        if not ref:
            return None
        flows = [f for f in self._scan() if not f.error]
        for f in flows:
            if f.id == ref:
                return f
        if ref.endswith(".json") or "/" in ref or os.sep in ref:
            p = Path(ref).expanduser()
            if not p.is_absolute() and base is not None:
                p = Path(base).parent / p
            try:
                p = p.resolve()
            except OSError:
                return None
            for f in flows:
                try:
                    if f.path.resolve() == p:
                        return f
                except OSError:
                    continue
            if p.is_file():
                entry = self._read(p)
                return entry if entry is not None and not entry.error else None
            return None
        if by_name:
            low = ref.lower()
            for f in flows:
                if f.name.strip().lower() == low:
                    return f
        return None

    def load(self, id_or_name: str) -> Workflow:
        """The workflow of a flow (a fresh copy); :class:`LibraryError` when there is none."""
        entry = self.get(id_or_name)
        if entry is None:
            raise LibraryError(f"There is no flow '{id_or_name}' in the library.")
        return self.load_path(entry.path)

    def load_path(self, path: str | os.PathLike[str]) -> Workflow:
        p = Path(path)
        try:
            return load_workflow(p)
        except WorkflowLoadError as err:
            raise LibraryError(f"The library flow {p} cannot be read: {err.reason}") from None

    # ------------------------------------------------------------------ changing
    def save(self, workflow: Workflow, path: str | os.PathLike[str] | None = None) -> LibraryFlow:
        """Save ``workflow`` into the library (its ``id`` made if it has none) and return its entry.

        Without ``path``: where the flow with that id already is, else a new file in the first
        folder named after the flow. The workflow object gets its ``id``.
        """
        if not getattr(workflow, "id", None):
            workflow.id = new_id("flow")
        target: Path | None = Path(path) if path is not None else None
        if target is None:
            current = next((f for f in self._scan() if f.id == workflow.id and not f.error), None)
            target = current.path if current is not None else self._free_path(_slug(workflow.display_name()))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            save_workflow(workflow, target)
        except OSError as err:
            raise LibraryError(f"The flow could not be saved to {target}: {err.strerror or err}") from None
        entry = self._read(target)
        assert entry is not None
        entry.enabled = entry.id not in set(self._settings().library.disabled)
        entry.can_pause = workflow_can_pause(workflow, self, base=target, _seen={str(target)})
        return entry

    def _free_path(self, stem: str) -> Path:
        folder = self.primary
        candidate = folder / f"{stem}{FLOW_SUFFIX}"
        n = 2
        while candidate.exists():
            candidate = folder / f"{stem}-{n}{FLOW_SUFFIX}"
            n += 1
        return candidate

    def delete(self, flow_id: str) -> None:
        """Remove a flow's file."""
        entry = self.get(flow_id)
        if entry is None:
            raise LibraryError(f"There is no flow '{flow_id}' in the library.")
        try:
            entry.path.unlink()
        except OSError as err:
            raise LibraryError(f"{entry.path} could not be removed: {err.strerror or err}") from None
        self._cache.pop(entry.path, None)
        self._usage.forget(entry.id)

    def set_enabled(self, flow_id: str, enabled: bool) -> None:
        """Turn a flow on or off (kept in the settings' ``library.disabled``)."""
        settings = self._settings()
        disabled = settings.library.disabled
        if enabled and flow_id in disabled:
            disabled.remove(flow_id)
        elif not enabled and flow_id not in disabled:
            disabled.append(flow_id)
        else:
            return
        self._save_settings(settings)

    def seed_samples(self) -> list[Path]:
        """Copy the samples not seeded before into the first folder (each once, ever). Returns the new files."""
        settings = self._settings()
        seeded = settings.library.seeded
        todo = [p for p in sample_paths() if p.name not in seeded]
        if not todo:
            return []
        made: list[Path] = []
        folder = self.primary
        folder.mkdir(parents=True, exist_ok=True)
        for sample in todo:
            seeded.append(sample.name)
            target = folder / sample.name
            if target.exists():
                continue
            try:
                wf = _load(sample)
            except WorkflowLoadError:
                continue
            if not getattr(wf, "id", None):
                wf.id = "sample-" + sample.name[: -len(FLOW_SUFFIX)]
            save_workflow(wf, target)
            made.append(target)
            cases = sample.with_name(sample.name[: -len(FLOW_SUFFIX)] + ".tests.jsonl")
            if cases.is_file():  # its test cases (Tests panel, `flowdesk eval`) go along
                shutil.copyfile(cases, folder / cases.name)
        self._save_settings(settings)
        return made


def _fields(entry: LibraryFlow) -> dict[str, Any]:
    return {k: getattr(entry, k) for k in LibraryFlow.__slots__ if not k.startswith("__")}


# The names of the library flows seen so far, by id (filled by every scan of a library): what a
# canvas card shows for a flow node without reading the library folder on each paint.
_NAMES: dict[str, str] = {}


def known_flow_name(flow_id: str) -> str | None:
    """The name of library flow ``flow_id`` if a library scan of this process has seen it (no I/O)."""
    return _NAMES.get(flow_id)


_default: FlowLibrary | None = None


def default_library() -> FlowLibrary:
    """The user's library (made, and the samples seeded, on first use); shared per process."""
    global _default
    if _default is None:
        _default = FlowLibrary()
    return _default


def set_default_library(library: FlowLibrary | None) -> None:
    """Replace the process's default library (tests; an app that points it elsewhere)."""
    global _default
    _default = library
