"""The run store: every run and every event, durable in SQLite (WAL).

Concepts and invariants
* One database file (``runs.db``) in the user data folder (``FLOWDESK_DATA_DIR``
  overrides it). Schema versioned with ``PRAGMA user_version``; :data:`MIGRATIONS`
  bring any older file up to :data:`SCHEMA_VERSION` on open.
* A :class:`RunRecorder` attaches to a :class:`engine.Run` as an event listener. The
  listener only appends to an in-memory list; the store's one writer thread commits
  batches at least every 100 ms and at every pause or end, so the run never waits on the
  disk and a crash loses at most the last batch. Event sequence numbers are per run and
  gapless.
* A workflow's JSON is stored once (``workflows``, by a hash of the JSON), however many
  runs it had; it is deleted with its last run.
* A run row knows the process that owns it (pid and host). On start-up
  :meth:`RunStore.recover` marks ``running`` runs whose process is gone ``interrupted``;
  their events stay.
* Resuming a paused run first *claims* it with one conditional UPDATE
  (``status='paused'`` → ``running``), so two resumes at once cannot both win.
* Every failure to open or use the database raises :class:`StoreError` whose message
  names the file and what is wrong (corrupt, locked, not writable).

Where things are
* :mod:`~engine.store.schema`: the tables and their migrations.
* :mod:`~engine.store.connection`: one connection a thread, transactions, errors named.
* :mod:`~engine.store.queries`: reading runs and events (:class:`RunInfo`), who holds a run
  (:class:`RunHolder`).
* :mod:`~engine.store.outputs`: recorded node executions and their size limit.
* :mod:`~engine.store.runs`: :class:`RunStore`, the runs' rows and their writes.
* :mod:`~engine.store.writer`: the batched INSERTs and the one writer thread (the hot path).
* :mod:`~engine.store.recorder`: :class:`RunRecorder`, a run's events on their way to the store.
* :mod:`~engine.store.agentflow`: AgentFlow-style run records, written and read.
* :func:`data_dir` (from :mod:`engine.paths`): where the database lives.
"""

from engine.paths import data_dir
from engine.store.agentflow import agentflow_record, run_from_agentflow_record
from engine.store.errors import AlreadyImported, StoreError
from engine.store.queries import RunHolder, RunInfo
from engine.store.recorder import RunRecorder
from engine.store.runs import RunStore
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "RunStore",
    "RunRecorder",
    "RunInfo",
    "RunHolder",
    "StoreError",
    "AlreadyImported",
    "data_dir",
    "SCHEMA_VERSION",
    "MIGRATIONS",
    "agentflow_record",
    "run_from_agentflow_record",
]
