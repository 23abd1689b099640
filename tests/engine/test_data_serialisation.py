"""Node data is dumped as its typed class (AgentData, IfData, ...), not as the declared NodeData.

Regression: without SerializeAsAny, model_dump()/save_workflow wrote every node's data as {}.
"""

import json
from pathlib import Path

from engine import dumps_workflow, load_workflow, workflow_to_dict

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_samples_round_trip_with_their_data():
    for path in SAMPLES.glob("*.flow.json"):
        wf = load_workflow(path)
        assert workflow_to_dict(wf) == json.loads(path.read_text(encoding="utf-8")), path.name
        assert json.loads(dumps_workflow(wf)) == workflow_to_dict(wf)


def test_model_dump_keeps_agent_fields():
    wf = load_workflow(SAMPLES / "hello.flow.json")
    data = wf.model_dump()["nodes"][1]["data"]
    assert data["agentName"] == "Greeter" and data["tools"] == {"web_search": False, "subagents": False}
