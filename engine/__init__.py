"""Flowdesk's engine: the workflow model, validation, the runtime and its LLM seam.

Pure Python (pydantic, networkx, httpx, asyncio); it never imports Qt, so it runs
headless in the CLI, in tests and on servers. The editor uses only the names below.
"""

from .events import SYSTEM_NODE, EventType, RunEvent, RunStatus
from .llm import (AgentInvocation, EchoProvider, LLMError, LLMProvider, LLMResult, ProviderConfigError, ProviderContext,
                  SubagentSpec, available_providers, make_resolver, web_search_available)
from .model import (NODE_TYPES, AgentData, AgentTools, ApprovalData, Condition, Connection, IfData, Node, NodeData,
                    StartData, Workflow, WorkflowLoadError, accepts_input, atomic_write_text, dumps_workflow,
                    load_workflow, loads_workflow, new_id, parse_workflow, save_workflow, source_handles,
                    workflow_to_dict)
from .nodes import (NodeError, NodeOutcome, NodeSpec, PaletteEntry, PauseRequest, RunContext, load_plugins,
                    node_specs, palette_entries, register_node_spec, spec_for, unregister_node_spec)
from .runtime import DEFAULT_MAX_VISITS, NodeRecord, Run, RunStateError, as_text, normalise_decision
from .validate import ConnectionCheck, GraphIndex, Issue, Severity, check_connection, errors_only, handle_label, validate

__all__ = [
    # model and files
    "NODE_TYPES", "Workflow", "Node", "Connection", "NodeData", "StartData", "AgentData", "AgentTools", "IfData",
    "ApprovalData", "Condition", "WorkflowLoadError", "load_workflow", "loads_workflow", "parse_workflow",
    "save_workflow", "dumps_workflow", "workflow_to_dict", "atomic_write_text", "new_id", "source_handles",
    "accepts_input",
    # validation
    "validate", "check_connection", "Issue", "Severity", "ConnectionCheck", "GraphIndex", "errors_only",
    "handle_label",
    # runtime
    "Run", "RunStateError", "RunStatus", "RunEvent", "EventType", "SYSTEM_NODE", "NodeRecord", "DEFAULT_MAX_VISITS",
    "normalise_decision", "as_text",
    # node kinds (specs, plug-ins)
    "NodeSpec", "NodeError", "NodeOutcome", "PauseRequest", "RunContext", "PaletteEntry", "spec_for", "node_specs",
    "register_node_spec", "unregister_node_spec", "palette_entries", "load_plugins",
    # LLM seam
    "LLMProvider", "ProviderContext", "AgentInvocation", "SubagentSpec", "LLMResult", "LLMError", "EchoProvider",
    "ProviderConfigError", "make_resolver", "available_providers", "web_search_available",
]
