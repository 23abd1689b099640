"""Flowdesk's engine: the workflow model, validation, the runtime and its LLM seam.

Pure Python (pydantic, networkx, httpx, asyncio); it never imports Qt, so it runs
headless in the CLI, in tests and on servers.

The names in ``__all__`` are the engine's public API, and the only engine names the editor
uses (``tests/test_public_api.py`` pins the list and checks every ``editor/`` import). The
submodules (``engine.graph.model``, ``engine.store``, ``engine.llm.config``, ``engine.cli``, ...)
are private: their names may move between them without notice. Every error the engine
raises on purpose derives from :class:`FlowdeskError`.

Every public name is loaded on first use (:data:`_PUBLIC` lists them by private module;
:data:`_LAZY`, made from it, is read by the module's ``__getattr__``), so ``import engine``
costs almost nothing and a command loads only what it uses: ``flowdesk --version`` no model,
``validate`` no store or runtime. ``__all__`` is every name of the table and
:class:`FlowdeskError`. The imports under ``TYPE_CHECKING`` give type checkers and readers
the same names (``tests/test_public_api.py`` checks that they agree with the table).
"""

from typing import TYPE_CHECKING, Any

from engine.errors import FlowdeskError

if TYPE_CHECKING:
    from engine.browser import set_show_browser, show_browser
    from engine.cli import COMMANDS as CLI_COMMANDS
    from engine.cli import main as cli_main

    # evaluations (issue 37)
    from engine.evals.cases import EXPECT_TYPES, EvalCase
    from engine.evals.cases import CaseError as EvalCaseError
    from engine.evals.cases import Expectation as EvalExpectation
    from engine.evals.cases import cases_file_for as eval_cases_file
    from engine.evals.cases import parse_case as parse_eval_case
    from engine.evals.cases import read_cases_file as read_test_cases
    from engine.evals.cases import workflow_cases as workflow_test_cases
    from engine.evals.cases import write_cases_file as write_test_cases
    from engine.evals.expect import Failure as EvalFailure
    from engine.evals.history import EvalHistory, EvalRecord
    from engine.evals.report import failure_line as eval_failure_line
    from engine.evals.runner import CaseResult as EvalCaseResult
    from engine.evals.runner import EvalResult, run_eval
    from engine.evals.runner import case_from_run as eval_case_from_run
    from engine.flows.dispatch import (
        FlowChoice,
        NoFlowMatches,
        apply_arguments,
        ask_model_for_flow,
        match_sentence,
        parse_routing_answer,
        permission_summary,
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
    from engine.flows.inbox import InboxItem, answer_stored, expire_overdue, inbox_items
    from engine.flows.inbox import local_items as local_inbox_items
    from engine.flows.learn import LearnError, learn_from_run
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
    from engine.flows.memory import generalise as generalise_trigger
    from engine.flows.memory import remember as remember_trigger
    from engine.flows.memory import split_requests
    from engine.flows.memory import suggestions as flow_suggestions
    from engine.flows.repair import RepairError, RepairProposal, apply_repair, failed_node, parse_repair, propose_repair
    from engine.flows.schedules import Schedule, ScheduleError, ScheduleRunner, flow_schedules, next_fire
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
    from engine.graph.permissions import Permissions
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
    from engine.graph.variables import VariableError, coerce_variable, parse_var_argument, rule_problem, run_variables
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
    from engine.mcp.calls import check_arguments as check_tool_arguments
    from engine.mcp.config import McpError, McpServerConfig
    from engine.mcp.config import remove_server as remove_mcp_server
    from engine.mcp.config import save_server as save_mcp_server
    from engine.mcp.config import settings_servers as mcp_servers
    from engine.mcp.pool import list_server_tools as list_mcp_tools
    from engine.mcp.results import ToolInfo as McpToolInfo
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
        load_plugins,
        node_specs,
        palette_entries,
        register_node_spec,
        spec_for,
        unregister_node_spec,
    )
    from engine.nodes.agent import AgentData, AgentTools
    from engine.nodes.approval import ApprovalData, option_labels
    from engine.nodes.file import FileData
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
    from engine.paths import data_dir
    from engine.resources import flowdesk_version, read_resource_text, resource_path, sample_paths
    from engine.run.context import RunContext
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
        run_from_agentflow_record,
    )
    from engine.temporal import TemporalUnavailable
    from engine.temporal.remote import RemoteRun

# Private module (under engine.) -> the public names it defines, "public=private" where the
# two differ. Each is imported on first access (__getattr__); the imports above name the same.
_PUBLIC: dict[str, str] = {
    "browser": "set_show_browser show_browser",
    "cli": "CLI_COMMANDS=COMMANDS cli_main=main",
    "evals.cases": (
        "EXPECT_TYPES EvalCase EvalCaseError=CaseError EvalExpectation=Expectation eval_cases_file=cases_file_for "
        "parse_eval_case=parse_case read_test_cases=read_cases_file workflow_test_cases=workflow_cases "
        "write_test_cases=write_cases_file"
    ),
    "evals.expect": "EvalFailure=Failure",
    "evals.history": "EvalHistory EvalRecord",
    "evals.report": "eval_failure_line=failure_line",
    "evals.runner": "EvalCaseResult=CaseResult EvalResult eval_case_from_run=case_from_run run_eval",
    "flows.dispatch": (
        "FlowChoice NoFlowMatches apply_arguments ask_model_for_flow match_sentence parse_routing_answer "
        "permission_summary routable_flows routing_schema"
    ),
    "flows.grammar": (
        "TriggerCaptureKind TriggerMatch TriggerPattern TriggerPatternError all_trigger_matches best_trigger_match "
        "compile_trigger generate_trigger_example trigger_words"
    ),
    "flows.importers": (
        "ExportRefused FLOW_FORMATS ImportRefused ImportResult detect_flow_format export_anythingllm import_flow "
        "load_any_workflow"
    ),
    "flows.inbox": "InboxItem answer_stored expire_overdue inbox_items local_inbox_items=local_items",
    "flows.learn": "LearnError learn_from_run",
    "flows.library": (
        "FlowLibrary FlowParameter LibraryError LibraryFlow default_library flow_parameters library_dir "
        "set_default_library workflow_can_pause"
    ),
    "flows.memory": (
        "flow_suggestions=suggestions generalise_trigger=generalise remember_trigger=remember split_requests"
    ),
    "flows.repair": "RepairError RepairProposal apply_repair failed_node parse_repair propose_repair",
    "flows.schedules": "Schedule ScheduleError ScheduleRunner flow_schedules next_fire",
    "graph.model": (
        "CanvasGroup CanvasNote Connection NODE_TYPES NOTE_COLORS Node NodeData Workflow WorkflowLoadError "
        "accepts_input atomic_write_text dumps_workflow load_workflow loads_workflow new_id parse_workflow "
        "save_workflow source_handles workflow_to_dict"
    ),
    "graph.permissions": "Permissions",
    "graph.templates": (
        "ResolvedTemplate SECRET_MASK TEMPLATE_BUILTINS TemplateCompletion TemplateReference TemplateScope "
        "find_references mask_secrets reference_first_name render_template_value resolve_templates "
        "resolve_templates_masked secret_lookup template_completion unknown_references walk_references"
    ),
    "graph.validate": (
        "ConnectionCheck GraphIndex Issue Severity check_connection errors_only handle_label trigger_issues validate"
    ),
    "graph.variables": "VariableError coerce_variable parse_var_argument rule_problem run_variables",
    "llm": (
        "AgentInvocation EchoProvider LLMError LLMProvider LLMResult ProviderConfigError ProviderContext SubagentSpec "
        "web_search_available"
    ),
    "llm.base": "FlowToolSpec",
    "llm.config": (
        "DEFAULT_EFFORTS ModelInfo ProviderInfo Settings config_dir is_local_url key_source load_settings "
        "model_choices provider_catalogue=providers reasoning_efforts save_settings settings_path store_api_key"
    ),
    "llm.discovery": (
        "FoundKey FoundServer ProviderSurvey default_provider_problem local_install_command needs_default_provider "
        "remember_choice survey"
    ),
    "llm.local": "close_local_models",
    "llm.registry": (
        "NoProviderConfigured available_providers check_provider default_provider make_resolver provider_models"
    ),
    "llm.structured": "SchemaError parse_json_answer schema_errors",
    "mcp.calls": "check_tool_arguments=check_arguments",
    "mcp.config": (
        "McpError McpServerConfig mcp_servers=settings_servers remove_mcp_server=remove_server "
        "save_mcp_server=save_server"
    ),
    "mcp.pool": "list_mcp_tools=list_server_tools",
    "mcp.results": "McpToolInfo=ToolInfo",
    "nodes": (
        "DEFAULT_MAX_RETRIES DEFAULT_RETRY_DELAY_MS ERROR_HANDLE ERROR_MODES NodeError NodeOutcome NodeSpec "
        "PaletteEntry PauseRequest PolicyData load_plugins node_specs palette_entries register_node_spec spec_for "
        "unregister_node_spec"
    ),
    "nodes.agent": "AgentData AgentTools",
    "nodes.approval": "ApprovalData option_labels",
    "nodes.file": "FileData",
    "nodes.flow": "ActionData FlowData new_flow_for_action",
    "nodes.http_request": (
        "HttpRequestSpec HttpResult HttpStatusError InvalidRequestError RedirectError RequestFailedError "
        "ResponseTooLargeError UrlNotAllowedError WebRequestError looks_like_literal_credential mask_url send_request"
    ),
    "nodes.if_": "CONDITION_OPERATORS Condition IfData condition_problem",
    "nodes.join": "JoinData",
    "nodes.loop": "DEFAULT_MAX_ITERATIONS LoopData",
    "nodes.router": "Route RouterData",
    "nodes.start": "StartData VARIABLE_TYPES Variable",
    "nodes.web": "FetchData HttpData KeyValueRow send_test_request",
    "nodes.web_fetch": "FetchResult FetchSpec SelectorNotFoundError UnsupportedContentError fetch_page",
    "paths": "data_dir",
    "resources": "flowdesk_version read_resource_text resource_path sample_paths",
    "run.context": "RunContext",
    "run.costs": "format_cost model_prices run_costs stored_run_costs usage_cost",
    "run.diff": "diff_runs diff_states diff_workflows run_usage word_diff",
    "run.events": (
        "EventType FLOW_CALL_FIELDS FLOW_CALL_TYPES RunEvent RunStatus SUBAGENT_CALL_TYPES SUBAGENT_FIELDS SYSTEM_NODE "
        "format_duration"
    ),
    "run.rerun": "RecordedExecution execution_key",
    "run.scheduler": "DEFAULT_MAX_VISITS NodeRecord Run RunStateError as_text normalise_decision",
    "run.state": "NODE_STATES NodeDetails RunState SubagentCall",
    "run.timeline": "Span Timeline",
    "store": "AlreadyImported RunInfo RunRecorder RunStore StoreError agentflow_record run_from_agentflow_record",
    "temporal": "TemporalUnavailable",
    "temporal.remote": "RemoteRun",
}

# Public name -> (private module, name there).
_LAZY: dict[str, tuple[str, str]] = {
    public: (module, private or public)
    for module, names in _PUBLIC.items()
    for public, _, private in (name.partition("=") for name in names.split())
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


__all__ = sorted(["FlowdeskError", *_LAZY])
