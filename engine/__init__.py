"""Flowdesk's engine: the workflow model, validation, the runtime and its LLM seam.

Pure Python (pydantic, networkx, httpx, asyncio); it never imports Qt, so it runs
headless in the CLI, in tests and on servers.

The names in ``__all__`` are the engine's public API, and the only engine names the editor
uses (``tests/test_public_api.py`` pins the list and checks every ``editor/`` import). The
submodules (``engine.graph.model``, ``engine.store``, ``engine.llm.config``, ``engine.cli``, ...)
are private: their names may move between them without notice. Every error the engine
raises on purpose derives from :class:`FlowdeskError`.

The run store and the command line are loaded on first use (``sqlite3`` and ``argparse``
are not needed to edit or validate a workflow), so importing the engine stays cheap.
"""

from typing import TYPE_CHECKING, Any

from engine.errors import FlowdeskError
from engine.run.events import (FLOW_CALL_FIELDS, FLOW_CALL_TYPES, SUBAGENT_CALL_TYPES, SUBAGENT_FIELDS, SYSTEM_NODE, EventType,
                     RunEvent, RunStatus, format_duration)
from engine.llm.base import FlowToolSpec
from engine.llm import (AgentInvocation, EchoProvider, LLMError, LLMProvider, LLMResult, ProviderConfigError, ProviderContext,
                  SubagentSpec, available_providers, check_provider, make_resolver, web_search_available)
from engine.llm.config import (DEFAULT_EFFORTS, ModelInfo, ProviderInfo, Settings, config_dir, is_local_url, key_source,
                         load_settings, model_choices, reasoning_efforts, save_settings, settings_path, store_api_key)
from engine.llm.config import providers as provider_catalogue
from engine.llm.discovery import (FoundKey, FoundServer, ProviderSurvey, default_provider_problem, local_install_command,
                            needs_default_provider, remember_choice, survey)
from engine.llm.registry import NoProviderConfigured, default_provider, provider_models
from engine.graph.model import (NODE_TYPES, AgentData, AgentTools, ApprovalData, Condition, Connection, IfData, Node, NodeData,
                    StartData, Workflow, WorkflowLoadError, accepts_input, atomic_write_text, dumps_workflow,
                    load_workflow, loads_workflow, new_id, parse_workflow, save_workflow, source_handles,
                    workflow_to_dict)
from engine.nodes import (DEFAULT_MAX_RETRIES, DEFAULT_RETRY_DELAY_MS, ERROR_HANDLE, ERROR_MODES, NodeError, NodeOutcome,
                    NodeSpec, PaletteEntry, PauseRequest, PolicyData, RunContext, load_plugins, node_specs,
                    palette_entries, register_node_spec, spec_for, unregister_node_spec)
from engine.nodes.join import JoinData
from engine.nodes.loop import DEFAULT_MAX_ITERATIONS, LoopData
from engine.nodes.start import VARIABLE_TYPES, Variable
from engine.graph.variables import VariableError, coerce_variable, parse_var_argument, run_variables
from engine.resources import flowdesk_version, read_resource_text, resource_path, sample_paths
from engine.run.state import NODE_STATES, NodeDetails, RunState, SubagentCall
from engine.run.rerun import RecordedExecution, execution_key
from engine.run.timeline import Span, Timeline
from engine.run.costs import format_cost, model_prices, run_costs, stored_run_costs, usage_cost
from engine.flows.repair import RepairError, RepairProposal, apply_repair, failed_node, parse_repair, propose_repair
from engine.run.diff import diff_runs, diff_states, diff_workflows, run_usage, word_diff
from engine.run.scheduler import DEFAULT_MAX_VISITS, NodeRecord, Run, RunStateError, as_text, normalise_decision
from engine.graph.validate import ConnectionCheck, GraphIndex, Issue, Severity, check_connection, errors_only, handle_label, validate
from engine.graph.templates import (SECRET_MASK, TEMPLATE_BUILTINS, ResolvedTemplate, TemplateCompletion, TemplateReference,
                        TemplateScope, find_references, mask_secrets, reference_first_name, render_template_value,
                        resolve_templates, resolve_templates_masked, secret_lookup, template_completion,
                        unknown_references, walk_references)
from engine.flows.grammar import (TriggerCaptureKind, TriggerMatch, TriggerPattern, TriggerPatternError, all_trigger_matches,
                      best_trigger_match, compile_trigger, generate_trigger_example, trigger_words)
from engine.nodes.http_request import (HttpRequestSpec, HttpResult, HttpStatusError, InvalidRequestError, RedirectError,
                           RequestFailedError, ResponseTooLargeError, UrlNotAllowedError, WebRequestError,
                           looks_like_literal_credential, mask_url, send_request)
from engine.nodes.web_fetch import FetchResult, FetchSpec, SelectorNotFoundError, UnsupportedContentError, fetch_page
from engine.nodes.web import FetchData, HttpData, KeyValueRow, send_test_request
from engine.nodes.flow import ActionData, FlowData, new_flow_for_action
from engine.flows.importers import (FLOW_FORMATS, ExportRefused, ImportRefused, ImportResult, detect_flow_format,
                        export_anythingllm, import_flow, load_any_workflow)
from engine.graph.validate import trigger_issues
from engine.flows.dispatch import (FlowChoice, NoFlowMatches, apply_arguments, ask_model_for_flow, match_sentence, parse_routing_answer,
                       routable_flows, routing_schema)
from engine.flows.library import (FlowLibrary, FlowParameter, LibraryError, LibraryFlow, default_library, flow_parameters,
                      library_dir, set_default_library, workflow_can_pause)

if TYPE_CHECKING:
    from engine.cli import COMMANDS as CLI_COMMANDS
    from engine.cli import main as cli_main
    from engine.temporal import TemporalUnavailable
    from engine.temporal.remote import RemoteRun
    from engine.store import (AlreadyImported, RunInfo, RunRecorder, RunStore, StoreError, agentflow_record, data_dir,
                        run_from_agentflow_record)

# Public name -> (private module, name there), imported on first access.
_LAZY = {
    "RunStore": ("store", "RunStore"), "RunInfo": ("store", "RunInfo"), "RunRecorder": ("store", "RunRecorder"),
    "StoreError": ("store", "StoreError"), "AlreadyImported": ("store", "AlreadyImported"),
    "agentflow_record": ("store", "agentflow_record"),
    "data_dir": ("store", "data_dir"), "run_from_agentflow_record": ("store", "run_from_agentflow_record"),
    "cli_main": ("cli", "main"), "CLI_COMMANDS": ("cli", "COMMANDS"),
    # scale-out on Temporal (the 'temporal' extra; importable without it)
    "RemoteRun": ("temporal.remote", "RemoteRun"), "TemporalUnavailable": ("temporal", "TemporalUnavailable"),
}


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'engine' has no attribute {name!r}") from None
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), attr)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted([
    # errors
    "FlowdeskError",
    # model and files
    "NODE_TYPES", "Workflow", "Node", "Connection", "NodeData", "StartData", "AgentData", "AgentTools", "IfData",
    "ApprovalData", "Condition", "WorkflowLoadError", "load_workflow", "loads_workflow", "parse_workflow",
    "save_workflow", "dumps_workflow", "workflow_to_dict", "atomic_write_text", "new_id", "source_handles",
    "accepts_input",
    # validation and the workflow's adjacency
    "validate", "check_connection", "Issue", "Severity", "ConnectionCheck", "GraphIndex", "errors_only",
    "handle_label",
    # runtime
    "Run", "RunStateError", "RunStatus", "RunEvent", "EventType", "SYSTEM_NODE", "NodeRecord", "DEFAULT_MAX_VISITS",
    "normalise_decision", "as_text",
    # re-running, comparing: recorded executions, run diff
    "RecordedExecution", "execution_key", "diff_runs", "diff_states", "diff_workflows", "word_diff", "run_usage",
    "Timeline", "Span", "model_prices", "run_costs", "stored_run_costs", "usage_cost", "format_cost", "format_duration",
    "RepairError", "RepairProposal", "propose_repair", "parse_repair", "apply_repair", "failed_node",
    # node kinds (specs, plug-ins)
    "NodeSpec", "NodeError", "NodeOutcome", "PauseRequest", "RunContext", "PaletteEntry", "spec_for", "node_specs",
    "register_node_spec", "unregister_node_spec", "palette_entries", "load_plugins",
    # data flow: variables, step policies, join and loop (DESIGN.md "Data flow", "Step policies")
    "Variable", "VARIABLE_TYPES", "VariableError", "coerce_variable", "run_variables", "parse_var_argument",
    "PolicyData", "ERROR_MODES", "DEFAULT_MAX_RETRIES", "DEFAULT_RETRY_DELAY_MS", "ERROR_HANDLE", "JoinData",
    "LoopData", "DEFAULT_MAX_ITERATIONS",
    # what a run did (one reducer for every view)
    "RunState", "NodeDetails", "SubagentCall", "NODE_STATES", "SUBAGENT_CALL_TYPES", "SUBAGENT_FIELDS",
    # LLM seam
    "LLMProvider", "ProviderContext", "AgentInvocation", "SubagentSpec", "LLMResult", "LLMError", "EchoProvider",
    "ProviderConfigError", "make_resolver", "available_providers", "default_provider", "web_search_available",
    "check_provider", "provider_models",
    # provider settings and the provider/model catalogue (resources/providers.json + settings.json)
    "Settings", "ProviderInfo", "ModelInfo", "load_settings", "save_settings", "settings_path", "store_api_key",
    "key_source", "is_local_url", "provider_catalogue", "model_choices", "reasoning_efforts", "DEFAULT_EFFORTS",
    # first run: what can serve a run, and the user's choice (settings.json); the config folder
    "NoProviderConfigured", "ProviderSurvey", "FoundKey", "FoundServer", "survey", "default_provider_problem",
    "needs_default_provider", "remember_choice", "local_install_command", "config_dir",
    # data files shipped in the package (icons, style sheet, catalogue, samples)
    "resource_path", "read_resource_text", "sample_paths", "flowdesk_version",
    # templates
    "TemplateScope", "TemplateReference", "ResolvedTemplate", "TemplateCompletion", "TEMPLATE_BUILTINS", "SECRET_MASK",
    "find_references", "walk_references", "reference_first_name", "unknown_references", "resolve_templates",
    "resolve_templates_masked", "render_template_value", "mask_secrets", "secret_lookup", "template_completion",
    # trigger grammar
    "TriggerPattern", "TriggerMatch", "TriggerPatternError", "TriggerCaptureKind", "compile_trigger",
    "best_trigger_match", "all_trigger_matches", "generate_trigger_example", "trigger_words",
    # web: the http and fetch nodes' I/O
    "HttpRequestSpec", "HttpResult", "send_request", "FetchSpec", "FetchResult", "fetch_page",
    "looks_like_literal_credential", "mask_url", "WebRequestError", "InvalidRequestError", "UrlNotAllowedError",
    "RedirectError", "ResponseTooLargeError", "HttpStatusError", "RequestFailedError", "UnsupportedContentError",
    "SelectorNotFoundError",
    # node kinds of issue 16: http, fetch, flow, action (data models); "Send test request"
    "HttpData", "FetchData", "KeyValueRow", "FlowData", "ActionData", "send_test_request", "new_flow_for_action",
    # files of other systems: import (AnythingLLM agent flows, TypeAgent recipes) and export
    "FLOW_FORMATS", "ImportResult", "ImportRefused", "ExportRefused", "detect_flow_format", "import_flow",
    "load_any_workflow", "export_anythingllm", "trigger_issues",
    # say it, run it: a sentence → a library flow (triggers first, else one routed model request)
    "FlowChoice", "NoFlowMatches", "apply_arguments", "match_sentence", "ask_model_for_flow", "parse_routing_answer", "routable_flows",
    "routing_schema",
    # the flow library
    "FlowLibrary", "LibraryFlow", "FlowParameter", "LibraryError", "library_dir", "default_library",
    "set_default_library", "flow_parameters", "workflow_can_pause", "FlowToolSpec", "FLOW_CALL_TYPES",
    "FLOW_CALL_FIELDS",
    # run store (loaded on first use)
    "RunStore", "RunInfo", "RunRecorder", "StoreError", "AlreadyImported", "agentflow_record",
    "run_from_agentflow_record", "data_dir",
    # command line (loaded on first use)
    "cli_main", "CLI_COMMANDS",
    # runs on a Temporal server (loaded on first use)
    "RemoteRun", "TemporalUnavailable",
])
