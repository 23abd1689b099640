"""The run database's schema: versioned with ``PRAGMA user_version``; :data:`MIGRATIONS` bring
any older file up to :data:`SCHEMA_VERSION` (applied by :meth:`Database._migrate
<engine.store.connection.Database._migrate>` when a store opens).

Tables: ``runs`` (one row a run, numbered in order by ``num``), ``events`` (keyed by the run's
number and a gapless sequence), ``workflows`` (a workflow's JSON once, by hash), ``outputs`` and
``run_outputs`` (recorded node executions, an output once by content), ``attachments``
(files a run's events name, such as screenshots).
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "MIGRATIONS"]

SCHEMA_VERSION = 9

# Each entry upgrades the schema from version i to i + 1.
MIGRATIONS: list[str] = [
    # 0 -> 1: the first schema
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        workflow_name TEXT NOT NULL DEFAULT '',
        workflow_path TEXT,
        workflow_json TEXT NOT NULL,
        initial_input TEXT,
        status TEXT NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        current_node TEXT,
        waiting INTEGER NOT NULL DEFAULT 0,
        snapshot TEXT,
        error TEXT
    );
    CREATE TABLE events (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        timestamp REAL NOT NULL,
        node_id TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        extra TEXT,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    CREATE INDEX runs_started ON runs(started_at DESC);
    """,
    # 1 -> 2: the owning process, for crash recovery and safe resume
    """
    ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
    ALTER TABLE runs ADD COLUMN owner_host TEXT;
    CREATE INDEX runs_workflow_status ON runs(workflow_name, status);
    """,
    # 2 -> 3: a workflow's JSON stored once however many runs it had (runs of older versions
    # keep theirs in runs.workflow_json; new runs leave it '' and name a workflows row)
    """
    CREATE TABLE workflows (hash TEXT PRIMARY KEY, json TEXT NOT NULL);
    ALTER TABLE runs ADD COLUMN workflow_hash TEXT;
    CREATE INDEX runs_workflow_hash ON runs(workflow_hash);
    """,
    # 3 -> 4: recorded node executions (engine/run/rerun.py), stored once by key however many runs
    # made them; run_executions says which run's node had which (its last step).
    """
    CREATE TABLE executions (key TEXT PRIMARY KEY, output TEXT NOT NULL, handle TEXT, size INTEGER NOT NULL,
                             used_at REAL NOT NULL) WITHOUT ROWID;
    CREATE INDEX executions_used ON executions(used_at);
    CREATE TABLE run_executions (run_id TEXT NOT NULL, node_id TEXT NOT NULL, key TEXT NOT NULL,
                                 PRIMARY KEY (run_id, node_id)) WITHOUT ROWID;
    CREATE INDEX run_executions_key ON run_executions(key);
    """,
    # 4 -> 5: outputs stored once by their content (not by execution key: two runs of one
    # unchanged node may answer differently, and reusing a run must give that run's output);
    # each run's node points at its output. Least recently used is counted per run (its start,
    # or when a later run last reused it), so recording a step writes one row, not three.
    """
    CREATE TABLE outputs (cid TEXT PRIMARY KEY, output TEXT NOT NULL, handle TEXT, size INTEGER NOT NULL)
        WITHOUT ROWID;
    CREATE TABLE run_outputs (run_id TEXT NOT NULL, node_id TEXT NOT NULL, key TEXT NOT NULL, cid TEXT NOT NULL,
                              n INTEGER NOT NULL, PRIMARY KEY (run_id, node_id)) WITHOUT ROWID;
    ALTER TABLE runs ADD COLUMN reused_at REAL;
    ALTER TABLE workflows ADD COLUMN node_digests TEXT;
    INSERT INTO outputs SELECT key, output, handle, size FROM executions;
    INSERT INTO run_outputs SELECT re.run_id, re.node_id, re.key, re.key,
        ROW_NUMBER() OVER (PARTITION BY re.run_id ORDER BY e.used_at, re.node_id)
        FROM run_executions re JOIN executions e ON e.key = re.key;
    DROP TABLE run_executions;
    DROP TABLE executions
    """,
    # 5 -> 6: events keyed by a run's number (``runs.num``, given in order) instead of its id:
    # a run's events are appended at the end of the table rather than at a random place in it
    # (fewer, fuller pages: a third smaller, and cheaper to write).
    """
    ALTER TABLE runs ADD COLUMN num INTEGER;
    UPDATE runs SET num = rowid;
    CREATE UNIQUE INDEX runs_num ON runs(num);
    CREATE TABLE events_by_num (
        run_num INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        timestamp REAL NOT NULL,
        node_id TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        extra TEXT,
        PRIMARY KEY (run_num, seq)
    ) WITHOUT ROWID;
    INSERT INTO events_by_num SELECT r.num, e.seq, e.timestamp, e.node_id, e.type, e.content, e.extra
        FROM events e JOIN runs r ON r.id = e.run_id;
    DROP TABLE events;
    ALTER TABLE events_by_num RENAME TO events
    """,
    # 6 -> 7: a run's recorded steps keyed by their order in the run (``n``) and appended,
    # rather than placed by node id; a node recorded several times (a loop) keeps each, the
    # last one counting. (Columns named: a table of either earlier shape converts.)
    """
    CREATE TABLE run_outputs_in_order (run_id TEXT NOT NULL, n INTEGER NOT NULL, node_id TEXT NOT NULL,
                                       key TEXT NOT NULL, cid TEXT NOT NULL, PRIMARY KEY (run_id, n)) WITHOUT ROWID;
    INSERT INTO run_outputs_in_order (run_id, n, node_id, key, cid)
        SELECT run_id, ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY n, node_id), node_id, key, cid FROM run_outputs;
    DROP TABLE run_outputs;
    ALTER TABLE run_outputs_in_order RENAME TO run_outputs
    """,
    # 7 -> 8: the variables a run started with (the Start node's, overridden by its arguments),
    # as a JSON object: the history shows what a run was called with
    """
    ALTER TABLE runs ADD COLUMN arguments TEXT
    """,
    # 8 -> 9: files a run produced that its events name but do not carry (a browser step's
    # screenshots): the bytes once, by run and attachment id; the event keeps the id and size
    """
    CREATE TABLE attachments (run_id TEXT NOT NULL, id TEXT NOT NULL, mime TEXT NOT NULL, data BLOB NOT NULL,
                              PRIMARY KEY (run_id, id))
    """,
]
assert len(MIGRATIONS) == SCHEMA_VERSION
