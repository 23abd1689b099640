"""Running a workflow: the scheduler, its events, the state reducer, re-running."""
