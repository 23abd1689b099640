"""Flowdesk's engine: the workflow model, validation, the runtime and its LLM seam.

Pure Python (pydantic, networkx, httpx, asyncio); it never imports Qt, so it runs
headless in the CLI, in tests and on servers.

The names in ``__all__`` are the engine's public API, and the only engine names the editor
uses (``tests/test_public_api.py`` pins the list and checks every ``editor/`` import). The
submodules (``engine.graph.model``, ``engine.store``, ``engine.llm.config``, ``engine.cli``, ...)
are private: their names may move between them without notice. Every error the engine
raises on purpose derives from :class:`FlowdeskError`.

Every public name is loaded on first use (:data:`_LAZY` maps it to its private module, read
by the module's ``__getattr__``), so ``import engine`` costs almost nothing and a command
loads only what it uses: ``flowdesk --version`` no model, ``validate`` no store or runtime.
The imports under ``TYPE_CHECKING`` give type checkers and readers the same names.
"""

from typing import TYPE_CHECKING, Any

from engine.errors import FlowdeskError

if TYPE_CHECKING:
    from engine.cli import COMMANDS as CLI_COMMANDS
    from engine.cli import main as cli_main
    from engine.flows.dispatch import (
        FlowChoice,
        NoFlowMatches,
        apply_arguments,
        ask_model_for_flow,
        match_sentence,
        parse_routing_answer,
        routable_flows,
        routing_schema,
    )
    from engine.flows.grammar import (
        TriggerCaptureKind,
        TriggerMatch,
        TriggerPattern,
        TriggerPatternError,
        all_trigger_matches,
        best_trigger_match,
        compile_trigger,
        generate_trigger_example,
        trigger_words,
    )
    from engine.flows.importers import (
        FLOW_FORMATS,
        ExportRefused,
        ImportRefused,
        ImportResult,
        detect_flow_format,
        export_anythingllm,
        import_flow,
        load_any_workflow,
    )
    from engine.flows.library import (
        FlowLibrary,
        FlowParameter,
        LibraryError,
        LibraryFlow,
        default_library,
        flow_parameters,
        library_dir,
        set_default_library,
        workflow_can_pause,
    )
    from engine.flows.repair import RepairError, RepairProposal, apply_repair, failed_node, parse_repair, propose_repair
    from engine.graph.model import (
        NODE_TYPES,
        NOTE_COLORS,
        CanvasGroup,
        CanvasNote,
        Connection,
        Node,
        NodeData,
        Workflow,
        WorkflowLoadError,
        accepts_input,
        atomic_write_text,
        dumps_workflow,
        load_workflow,
        loads_workflow,
        new_id,
        parse_workflow,
        save_workflow,
        source_handles,
        workflow_to_dict,
    )
    from engine.graph.templates import (
        SECRET_MASK,
        TEMPLATE_BUILTINS,
        ResolvedTemplate,
        TemplateCompletion,
        TemplateReference,
        TemplateScope,
        find_references,
        mask_secrets,
        reference_first_name,
        render_template_value,
        resolve_templates,
        resolve_templates_masked,
        secret_lookup,
        template_completion,
        unknown_references,
        walk_references,
    )
    from engine.graph.validate import (
        ConnectionCheck,
        GraphIndex,
        Issue,
        Severity,
        check_connection,
        errors_only,
        handle_label,
        trigger_issues,
        validate,
    )
    from engine.graph.variables import VariableError, coerce_variable, parse_var_argument, run_variables
    from engine.llm import (
        AgentInvocation,
        EchoProvider,
        LLMError,
        LLMProvider,
        LLMResult,
        ProviderConfigError,
        ProviderContext,
        SubagentSpec,
        web_search_available,
    )
    from engine.llm.base import FlowToolSpec
    from engine.llm.config import (
        DEFAULT_EFFORTS,
        ModelInfo,
        ProviderInfo,
        Settings,
        config_dir,
        is_local_url,
        key_source,
        load_settings,
        model_choices,
        reasoning_efforts,
        save_settings,
        settings_path,
        store_api_key,
    )
    from engine.llm.config import providers as provider_catalogue
    from engine.llm.discovery import (
        FoundKey,
        FoundServer,
        ProviderSurvey,
        default_provider_problem,
        local_install_command,
        needs_default_provider,
        remember_choice,
        survey,
    )
    from engine.llm.local import close_local_models
    from engine.llm.registry import (
        NoProviderConfigured,
        available_providers,
        check_provider,
        default_provider,
        make_resolver,
        provider_models,
    )
    from engine.llm.structured import SchemaError, parse_json_answer, schema_errors
    from engine.nodes import (
        DEFAULT_MAX_RETRIES,
        DEFAULT_RETRY_DELAY_MS,
        ERROR_HANDLE,
        ERROR_MODES,
        NodeError,
        NodeOutcome,
        NodeSpec,
        PaletteEntry,
        PauseRequest,
        PolicyData,
        RunContext,
        load_plugins,
        node_specs,
        palette_entries,
        register_node_spec,
        spec_for,
        unregister_node_spec,
    )
    from engine.nodes.agent import AgentData, AgentTools
    from engine.nodes.approval import ApprovalData
    from engine.nodes.flow import ActionData, FlowData, new_flow_for_action
    from engine.nodes.http_request import (
        HttpRequestSpec,
        HttpResult,
        HttpStatusError,
        InvalidRequestError,
        RedirectError,
        RequestFailedError,
        ResponseTooLargeError,
        UrlNotAllowedError,
        WebRequestError,
        looks_like_literal_credential,
        mask_url,
        send_request,
    )
    from engine.nodes.if_ import CONDITION_OPERATORS, Condition, IfData, condition_problem
    from engine.nodes.join import JoinData
    from engine.nodes.loop import DEFAULT_MAX_ITERATIONS, LoopData
    from engine.nodes.router import Route, RouterData
    from engine.nodes.start import VARIABLE_TYPES, StartData, Variable
    from engine.nodes.web import FetchData, HttpData, KeyValueRow, send_test_request
    from engine.nodes.web_fetch import (
        FetchResult,
        FetchSpec,
        SelectorNotFoundError,
        UnsupportedContentError,
        fetch_page,
    )
    from engine.resources import flowdesk_version, read_resource_text, resource_path, sample_paths
    from engine.run.costs import format_cost, model_prices, run_costs, stored_run_costs, usage_cost
    from engine.run.diff import diff_runs, diff_states, diff_workflows, run_usage, word_diff
    from engine.run.events import (
        FLOW_CALL_FIELDS,
        FLOW_CALL_TYPES,
        SUBAGENT_CALL_TYPES,
        SUBAGENT_FIELDS,
        SYSTEM_NODE,
        EventType,
        RunEvent,
        RunStatus,
        format_duration,
    )
    from engine.run.rerun import RecordedExecution, execution_key
    from engine.run.scheduler import DEFAULT_MAX_VISITS, NodeRecord, Run, RunStateError, as_text, normalise_decision
    from engine.run.state import NODE_STATES, NodeDetails, RunState, SubagentCall
    from engine.run.timeline import Span, Timeline
    from engine.store import (
        AlreadyImported,
        RunInfo,
        RunRecorder,
        RunStore,
        StoreError,
        agentflow_record,
        data_dir,
        run_from_agentflow_record,
    )
    from engine.temporal import TemporalUnavailable
    from engine.temporal.remote import RemoteRun

# Public name -> (private module, name there), imported on first access.
_LAZY: dict[str, tuple[str, str]] = {
    "FLOW_CALL_FIELDS": ("run.events", "FLOW_CALL_FIELDS"), "FLOW_CALL_TYPES": ("run.events", "FLOW_CALL_TYPES"),
    "SUBAGENT_CALL_TYPES": ("run.events", "SUBAGENT_CALL_TYPES"), "SUBAGENT_FIELDS": ("run.events", "SUBAGENT_FIELDS"),
    "SYSTEM_NODE": ("run.events", "SYSTEM_NODE"), "EventType": ("run.events", "EventType"),
    "RunEvent": ("run.events", "RunEvent"), "RunStatus": ("run.events", "RunStatus"),
    "format_duration": ("run.events", "format_duration"),
    "FlowToolSpec": ("llm.base", "FlowToolSpec"),
    "AgentInvocation": ("llm", "AgentInvocation"), "EchoProvider": ("llm", "EchoProvider"),
    "LLMError": ("llm", "LLMError"), "LLMProvider": ("llm", "LLMProvider"), "LLMResult": ("llm", "LLMResult"),
    "ProviderConfigError": ("llm", "ProviderConfigError"), "ProviderContext": ("llm", "ProviderContext"),
    "SubagentSpec": ("llm", "SubagentSpec"), "available_providers": ("llm.registry", "available_providers"),
    "check_provider": ("llm.registry", "check_provider"), "make_resolver": ("llm.registry", "make_resolver"),
    "web_search_available": ("llm", "web_search_available"),
    "DEFAULT_EFFORTS": ("llm.config", "DEFAULT_EFFORTS"), "ModelInfo": ("llm.config", "ModelInfo"),
    "ProviderInfo": ("llm.config", "ProviderInfo"), "Settings": ("llm.config", "Settings"),
    "config_dir": ("llm.config", "config_dir"), "is_local_url": ("llm.config", "is_local_url"),
    "key_source": ("llm.config", "key_source"), "load_settings": ("llm.config", "load_settings"),
    "model_choices": ("llm.config", "model_choices"), "reasoning_efforts": ("llm.config", "reasoning_efforts"),
    "save_settings": ("llm.config", "save_settings"), "settings_path": ("llm.config", "settings_path"),
    "store_api_key": ("llm.config", "store_api_key"), "provider_catalogue": ("llm.config", "providers"),
    "FoundKey": ("llm.discovery", "FoundKey"), "FoundServer": ("llm.discovery", "FoundServer"),
    "ProviderSurvey": ("llm.discovery", "ProviderSurvey"),
    "default_provider_problem": ("llm.discovery", "default_provider_problem"),
    "local_install_command": ("llm.discovery", "local_install_command"),
    "needs_default_provider": ("llm.discovery", "needs_default_provider"),
    "remember_choice": ("llm.discovery", "remember_choice"), "survey": ("llm.discovery", "survey"),
    "NoProviderConfigured": ("llm.registry", "NoProviderConfigured"),
    "default_provider": ("llm.registry", "default_provider"), "provider_models": ("llm.registry", "provider_models"),
    "NODE_TYPES": ("graph.model", "NODE_TYPES"), "Connection": ("graph.model", "Connection"),
    "CanvasNote": ("graph.model", "CanvasNote"), "CanvasGroup": ("graph.model", "CanvasGroup"),
    "NOTE_COLORS": ("graph.model", "NOTE_COLORS"),
    "Node": ("graph.model", "Node"), "NodeData": ("graph.model", "NodeData"), "Workflow": ("graph.model", "Workflow"),
    "WorkflowLoadError": ("graph.model", "WorkflowLoadError"), "accepts_input": ("graph.model", "accepts_input"),
    "atomic_write_text": ("graph.model", "atomic_write_text"), "dumps_workflow": ("graph.model", "dumps_workflow"),
    "load_workflow": ("graph.model", "load_workflow"), "loads_workflow": ("graph.model", "loads_workflow"),
    "new_id": ("graph.model", "new_id"), "parse_workflow": ("graph.model", "parse_workflow"),
    "save_workflow": ("graph.model", "save_workflow"), "source_handles": ("graph.model", "source_handles"),
    "workflow_to_dict": ("graph.model", "workflow_to_dict"),
    "DEFAULT_MAX_RETRIES": ("nodes", "DEFAULT_MAX_RETRIES"),
    "DEFAULT_RETRY_DELAY_MS": ("nodes", "DEFAULT_RETRY_DELAY_MS"), "ERROR_HANDLE": ("nodes", "ERROR_HANDLE"),
    "ERROR_MODES": ("nodes", "ERROR_MODES"), "NodeError": ("nodes", "NodeError"),
    "NodeOutcome": ("nodes", "NodeOutcome"), "NodeSpec": ("nodes", "NodeSpec"),
    "PaletteEntry": ("nodes", "PaletteEntry"), "PauseRequest": ("nodes", "PauseRequest"),
    "PolicyData": ("nodes", "PolicyData"), "RunContext": ("nodes", "RunContext"),
    "load_plugins": ("nodes", "load_plugins"), "node_specs": ("nodes", "node_specs"),
    "palette_entries": ("nodes", "palette_entries"), "register_node_spec": ("nodes", "register_node_spec"),
    "spec_for": ("nodes", "spec_for"), "unregister_node_spec": ("nodes", "unregister_node_spec"),
    "AgentData": ("nodes.agent", "AgentData"), "AgentTools": ("nodes.agent", "AgentTools"),
    "ApprovalData": ("nodes.approval", "ApprovalData"),
    "Condition": ("nodes.if_", "Condition"), "IfData": ("nodes.if_", "IfData"),
    "CONDITION_OPERATORS": ("nodes.if_", "CONDITION_OPERATORS"), "condition_problem": ("nodes.if_", "condition_problem"),
    "Route": ("nodes.router", "Route"), "RouterData": ("nodes.router", "RouterData"),
    "SchemaError": ("llm.structured", "SchemaError"), "schema_errors": ("llm.structured", "schema_errors"),
    "parse_json_answer": ("llm.structured", "parse_json_answer"),
    "JoinData": ("nodes.join", "JoinData"),
    "DEFAULT_MAX_ITERATIONS": ("nodes.loop", "DEFAULT_MAX_ITERATIONS"), "LoopData": ("nodes.loop", "LoopData"),
    "VARIABLE_TYPES": ("nodes.start", "VARIABLE_TYPES"), "StartData": ("nodes.start", "StartData"),
    "Variable": ("nodes.start", "Variable"),
    "VariableError": ("graph.variables", "VariableError"), "coerce_variable": ("graph.variables", "coerce_variable"),
    "parse_var_argument": ("graph.variables", "parse_var_argument"),
    "run_variables": ("graph.variables", "run_variables"),
    "flowdesk_version": ("resources", "flowdesk_version"), "read_resource_text": ("resources", "read_resource_text"),
    "resource_path": ("resources", "resource_path"), "sample_paths": ("resources", "sample_paths"),
    "close_local_models": ("llm.local", "close_local_models"),
    "NODE_STATES": ("run.state", "NODE_STATES"), "NodeDetails": ("run.state", "NodeDetails"),
    "RunState": ("run.state", "RunState"), "SubagentCall": ("run.state", "SubagentCall"),
    "RecordedExecution": ("run.rerun", "RecordedExecution"), "execution_key": ("run.rerun", "execution_key"),
    "Span": ("run.timeline", "Span"), "Timeline": ("run.timeline", "Timeline"),
    "format_cost": ("run.costs", "format_cost"), "model_prices": ("run.costs", "model_prices"),
    "run_costs": ("run.costs", "run_costs"), "stored_run_costs": ("run.costs", "stored_run_costs"),
    "usage_cost": ("run.costs", "usage_cost"),
    "RepairError": ("flows.repair", "RepairError"), "RepairProposal": ("flows.repair", "RepairProposal"),
    "apply_repair": ("flows.repair", "apply_repair"), "failed_node": ("flows.repair", "failed_node"),
    "parse_repair": ("flows.repair", "parse_repair"), "propose_repair": ("flows.repair", "propose_repair"),
    "diff_runs": ("run.diff", "diff_runs"), "diff_states": ("run.diff", "diff_states"),
    "diff_workflows": ("run.diff", "diff_workflows"), "run_usage": ("run.diff", "run_usage"),
    "word_diff": ("run.diff", "word_diff"),
    "DEFAULT_MAX_VISITS": ("run.scheduler", "DEFAULT_MAX_VISITS"), "NodeRecord": ("run.scheduler", "NodeRecord"),
    "Run": ("run.scheduler", "Run"), "RunStateError": ("run.scheduler", "RunStateError"),
    "as_text": ("run.scheduler", "as_text"), "normalise_decision": ("run.scheduler", "normalise_decision"),
    "ConnectionCheck": ("graph.validate", "ConnectionCheck"), "GraphIndex": ("graph.validate", "GraphIndex"),
    "Issue": ("graph.validate", "Issue"), "Severity": ("graph.validate", "Severity"),
    "check_connection": ("graph.validate", "check_connection"), "errors_only": ("graph.validate", "errors_only"),
    "handle_label": ("graph.validate", "handle_label"), "validate": ("graph.validate", "validate"),
    "trigger_issues": ("graph.validate", "trigger_issues"),
    "SECRET_MASK": ("graph.templates", "SECRET_MASK"), "TEMPLATE_BUILTINS": ("graph.templates", "TEMPLATE_BUILTINS"),
    "ResolvedTemplate": ("graph.templates", "ResolvedTemplate"),
    "TemplateCompletion": ("graph.templates", "TemplateCompletion"),
    "TemplateReference": ("graph.templates", "TemplateReference"),
    "TemplateScope": ("graph.templates", "TemplateScope"), "find_references": ("graph.templates", "find_references"),
    "mask_secrets": ("graph.templates", "mask_secrets"),
    "reference_first_name": ("graph.templates", "reference_first_name"),
    "render_template_value": ("graph.templates", "render_template_value"),
    "resolve_templates": ("graph.templates", "resolve_templates"),
    "resolve_templates_masked": ("graph.templates", "resolve_templates_masked"),
    "secret_lookup": ("graph.templates", "secret_lookup"),
    "template_completion": ("graph.templates", "template_completion"),
    "unknown_references": ("graph.templates", "unknown_references"),
    "walk_references": ("graph.templates", "walk_references"),
    "TriggerCaptureKind": ("flows.grammar", "TriggerCaptureKind"), "TriggerMatch": ("flows.grammar", "TriggerMatch"),
    "TriggerPattern": ("flows.grammar", "TriggerPattern"),
    "TriggerPatternError": ("flows.grammar", "TriggerPatternError"),
    "all_trigger_matches": ("flows.grammar", "all_trigger_matches"),
    "best_trigger_match": ("flows.grammar", "best_trigger_match"),
    "compile_trigger": ("flows.grammar", "compile_trigger"),
    "generate_trigger_example": ("flows.grammar", "generate_trigger_example"),
    "trigger_words": ("flows.grammar", "trigger_words"),
    "HttpRequestSpec": ("nodes.http_request", "HttpRequestSpec"), "HttpResult": ("nodes.http_request", "HttpResult"),
    "HttpStatusError": ("nodes.http_request", "HttpStatusError"),
    "InvalidRequestError": ("nodes.http_request", "InvalidRequestError"),
    "RedirectError": ("nodes.http_request", "RedirectError"),
    "RequestFailedError": ("nodes.http_request", "RequestFailedError"),
    "ResponseTooLargeError": ("nodes.http_request", "ResponseTooLargeError"),
    "UrlNotAllowedError": ("nodes.http_request", "UrlNotAllowedError"),
    "WebRequestError": ("nodes.http_request", "WebRequestError"),
    "looks_like_literal_credential": ("nodes.http_request", "looks_like_literal_credential"),
    "mask_url": ("nodes.http_request", "mask_url"), "send_request": ("nodes.http_request", "send_request"),
    "FetchResult": ("nodes.web_fetch", "FetchResult"), "FetchSpec": ("nodes.web_fetch", "FetchSpec"),
    "SelectorNotFoundError": ("nodes.web_fetch", "SelectorNotFoundError"),
    "UnsupportedContentError": ("nodes.web_fetch", "UnsupportedContentError"),
    "fetch_page": ("nodes.web_fetch", "fetch_page"),
    "FetchData": ("nodes.web", "FetchData"), "HttpData": ("nodes.web", "HttpData"),
    "KeyValueRow": ("nodes.web", "KeyValueRow"), "send_test_request": ("nodes.web", "send_test_request"),
    "ActionData": ("nodes.flow", "ActionData"), "FlowData": ("nodes.flow", "FlowData"),
    "new_flow_for_action": ("nodes.flow", "new_flow_for_action"),
    "FLOW_FORMATS": ("flows.importers", "FLOW_FORMATS"), "ExportRefused": ("flows.importers", "ExportRefused"),
    "ImportRefused": ("flows.importers", "ImportRefused"), "ImportResult": ("flows.importers", "ImportResult"),
    "detect_flow_format": ("flows.importers", "detect_flow_format"),
    "export_anythingllm": ("flows.importers", "export_anythingllm"), "import_flow": ("flows.importers", "import_flow"),
    "load_any_workflow": ("flows.importers", "load_any_workflow"),
    "FlowChoice": ("flows.dispatch", "FlowChoice"), "NoFlowMatches": ("flows.dispatch", "NoFlowMatches"),
    "apply_arguments": ("flows.dispatch", "apply_arguments"),
    "ask_model_for_flow": ("flows.dispatch", "ask_model_for_flow"),
    "match_sentence": ("flows.dispatch", "match_sentence"),
    "parse_routing_answer": ("flows.dispatch", "parse_routing_answer"),
    "routable_flows": ("flows.dispatch", "routable_flows"), "routing_schema": ("flows.dispatch", "routing_schema"),
    "FlowLibrary": ("flows.library", "FlowLibrary"), "FlowParameter": ("flows.library", "FlowParameter"),
    "LibraryError": ("flows.library", "LibraryError"), "LibraryFlow": ("flows.library", "LibraryFlow"),
    "default_library": ("flows.library", "default_library"), "flow_parameters": ("flows.library", "flow_parameters"),
    "library_dir": ("flows.library", "library_dir"), "set_default_library": ("flows.library", "set_default_library"),
    "workflow_can_pause": ("flows.library", "workflow_can_pause"),
    "RunStore": ("store", "RunStore"), "RunInfo": ("store", "RunInfo"), "RunRecorder": ("store", "RunRecorder"),
    "StoreError": ("store", "StoreError"), "AlreadyImported": ("store", "AlreadyImported"),
    "agentflow_record": ("store", "agentflow_record"),
    "data_dir": ("paths", "data_dir"), "run_from_agentflow_record": ("store", "run_from_agentflow_record"),
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
    "NODE_TYPES", "Workflow", "Node", "Connection", "CanvasNote", "CanvasGroup", "NOTE_COLORS", "NodeData", "StartData", "AgentData", "AgentTools", "IfData",
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
    # data flow: variables, step policies, join and loop (docs/design.md "Data flow", "Step policies")
    "Variable", "VARIABLE_TYPES", "VariableError", "coerce_variable", "run_variables", "parse_var_argument",
    "PolicyData", "ERROR_MODES", "DEFAULT_MAX_RETRIES", "DEFAULT_RETRY_DELAY_MS", "ERROR_HANDLE", "JoinData",
    "LoopData", "DEFAULT_MAX_ITERATIONS",
    # conditions, routing and structured answers (docs/design.md, same section)
    "CONDITION_OPERATORS", "condition_problem", "RouterData", "Route", "SchemaError", "schema_errors",
    "parse_json_answer",
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
    "resource_path", "read_resource_text", "sample_paths", "close_local_models", "flowdesk_version",
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
