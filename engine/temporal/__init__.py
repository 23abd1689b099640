"""Scale-out: Flowdesk runs as Temporal workflows (the optional ``temporal`` extra).

* :mod:`.workflow` — ``FlowdeskRun``: Flowdesk's own deterministic scheduler (:class:`engine.Run`)
  driven inside a Temporal workflow, its clock and ids from the workflow (``workflow.now()``,
  ``workflow.uuid4()``); each agent step's model call is an activity, every other working
  step (``http``, ``fetch``, plug-in kinds) runs as an activity, and ``flow``/``action`` steps
  run their flow as a child workflow. Approvals are the
  ``approve`` update ``{nodeId, decision, note, output}``; the ``events`` query returns the
  run's events after a sequence number, so any process can follow a run live.
* :mod:`.activities` — the activities: one working step; finding a subflow in the worker's
  library; and one model call on a worker, with the worker's
  provider keys (environment or keyring: never in the workflow's input or history), heartbeating
  while the call lasts and closing the request when the step is cancelled.
* :mod:`.worker` — ``flowdesk worker``; :mod:`.client` — submit, follow, answer, cancel, list.
* :mod:`.cli` — the ``worker``/``follow``/``cancel`` commands and ``--temporal`` on run/resume/runs.

Nothing here is imported by ``engine`` itself; ``temporalio`` is imported only by the modules
that need it, so the rest of Flowdesk works without the extra.
"""

from __future__ import annotations

from engine.errors import FlowdeskError

__all__ = [
    "WORKFLOW_TYPE",
    "DEFAULT_TASK_QUEUE",
    "DEFAULT_NAMESPACE",
    "TemporalUnavailable",
    "require_temporal",
    "split_address",
]

WORKFLOW_TYPE = "FlowdeskRun"
AGENT_ACTIVITY = "flowdesk.agent_call"
STEP_ACTIVITY = "flowdesk.step"
FLOW_ACTIVITY = "flowdesk.find_flow"
DEFAULT_TASK_QUEUE = "flowdesk"
DEFAULT_NAMESPACE = "default"


class TemporalUnavailable(FlowdeskError):
    """The ``temporal`` extra is not installed, or the server cannot be reached."""


def require_temporal() -> None:
    """Raise :class:`TemporalUnavailable` with the install command when ``temporalio`` is missing."""
    try:
        import temporalio  # noqa: F401
    except ImportError as err:
        raise TemporalUnavailable(
            "running on Temporal needs the 'temporal' extra: pip install 'flowdesk[temporal]' "
            f"(or, in a checkout, pip install -e '.[temporal]') ({err})"
        ) from None


def split_address(text: str) -> str:
    """``HOST:PORT`` checked (the port defaults to Temporal's 7233)."""
    text = (text or "").strip()
    if not text:
        raise TemporalUnavailable("--temporal needs HOST:PORT (for example 127.0.0.1:7233)")
    host, sep, port = text.rpartition(":")
    if not sep:
        return f"{text}:7233"
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise TemporalUnavailable(f"'{text}' is not HOST:PORT (for example 127.0.0.1:7233)")
    return text
