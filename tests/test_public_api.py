"""The engine's public API is exactly ``engine.__all__``, and the editor uses nothing else.

Like httpx's ``test_exported_members``: adding or removing a public name is a deliberate
change to :data:`PUBLIC` below. The editor may import ``engine`` (the package) only; its
submodules (``engine.store``, ``engine.llm.config``, ``engine.cli``, ...) are private.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engine
from tests.ast_parse import parse as parse_source

REPO = Path(__file__).resolve().parents[1]

PUBLIC = [
    "ActionData",
    "AgentData",
    "AgentInvocation",
    "AgentTools",
    "AlreadyImported",
    "ApprovalData",
    "CLI_COMMANDS",
    "CONDITION_OPERATORS",
    "CanvasGroup",
    "CanvasNote",
    "Condition",
    "Connection",
    "ConnectionCheck",
    "DEFAULT_EFFORTS",
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_VISITS",
    "DEFAULT_RETRY_DELAY_MS",
    "ERROR_HANDLE",
    "ERROR_MODES",
    "EXPECT_TYPES",
    "EchoProvider",
    "EvalCase",
    "EvalCaseError",
    "EvalCaseResult",
    "EvalExpectation",
    "EvalFailure",
    "EvalHistory",
    "EvalRecord",
    "EvalResult",
    "EventType",
    "ExportRefused",
    "FLOW_CALL_FIELDS",
    "FLOW_CALL_TYPES",
    "FLOW_FORMATS",
    "FetchData",
    "FetchResult",
    "FetchSpec",
    "FileData",
    "FlowChoice",
    "FlowData",
    "FlowLibrary",
    "FlowParameter",
    "FlowToolSpec",
    "FlowdeskError",
    "FoundKey",
    "FoundServer",
    "GraphIndex",
    "HttpData",
    "HttpRequestSpec",
    "HttpResult",
    "HttpStatusError",
    "IfData",
    "ImportRefused",
    "ImportResult",
    "InboxItem",
    "InvalidRequestError",
    "Issue",
    "JoinData",
    "KeyValueRow",
    "LLMError",
    "LLMProvider",
    "LLMResult",
    "LearnError",
    "LibraryError",
    "LibraryFlow",
    "LoopData",
    "McpError",
    "McpServerConfig",
    "McpToolInfo",
    "ModelInfo",
    "NODE_STATES",
    "NODE_TYPES",
    "NOTE_COLORS",
    "NoFlowMatches",
    "NoProviderConfigured",
    "Node",
    "NodeData",
    "NodeDetails",
    "NodeError",
    "NodeOutcome",
    "NodeRecord",
    "NodeSpec",
    "PaletteEntry",
    "PauseRequest",
    "Permissions",
    "PolicyData",
    "ProviderConfigError",
    "ProviderContext",
    "ProviderInfo",
    "ProviderSurvey",
    "RecordedExecution",
    "RedirectError",
    "RemoteRun",
    "RepairError",
    "RepairProposal",
    "RequestFailedError",
    "ResolvedTemplate",
    "ResponseTooLargeError",
    "Route",
    "RouterData",
    "Run",
    "RunContext",
    "RunEvent",
    "RunInfo",
    "RunRecorder",
    "RunState",
    "RunStateError",
    "RunStatus",
    "RunStore",
    "SECRET_MASK",
    "SUBAGENT_CALL_TYPES",
    "SUBAGENT_FIELDS",
    "SYSTEM_NODE",
    "Schedule",
    "ScheduleError",
    "ScheduleRunner",
    "SchemaError",
    "SelectorNotFoundError",
    "Settings",
    "Severity",
    "Span",
    "StartData",
    "StoreError",
    "SubagentCall",
    "SubagentSpec",
    "TEMPLATE_BUILTINS",
    "TemplateCompletion",
    "TemplateReference",
    "TemplateScope",
    "TemporalUnavailable",
    "Timeline",
    "TriggerCaptureKind",
    "TriggerMatch",
    "TriggerPattern",
    "TriggerPatternError",
    "UnsupportedContentError",
    "UrlNotAllowedError",
    "VARIABLE_TYPES",
    "Variable",
    "VariableError",
    "WebRequestError",
    "Workflow",
    "WorkflowLoadError",
    "accepts_input",
    "agentflow_record",
    "all_trigger_matches",
    "answer_stored",
    "apply_arguments",
    "apply_repair",
    "as_text",
    "ask_model_for_flow",
    "atomic_write_text",
    "available_providers",
    "best_trigger_match",
    "check_connection",
    "check_provider",
    "check_tool_arguments",
    "cli_main",
    "close_local_models",
    "coerce_variable",
    "compile_trigger",
    "condition_problem",
    "config_dir",
    "data_dir",
    "default_library",
    "default_provider",
    "default_provider_problem",
    "detect_flow_format",
    "diff_runs",
    "diff_states",
    "diff_workflows",
    "dumps_workflow",
    "errors_only",
    "eval_case_from_run",
    "eval_cases_file",
    "eval_failure_line",
    "execution_key",
    "expire_overdue",
    "export_anythingllm",
    "failed_node",
    "fetch_page",
    "find_references",
    "flow_parameters",
    "flow_schedules",
    "flow_suggestions",
    "flowdesk_version",
    "format_cost",
    "format_duration",
    "generalise_trigger",
    "generate_trigger_example",
    "handle_label",
    "import_flow",
    "inbox_items",
    "is_local_url",
    "key_source",
    "learn_from_run",
    "library_dir",
    "list_mcp_tools",
    "load_any_workflow",
    "load_plugins",
    "load_settings",
    "load_workflow",
    "loads_workflow",
    "local_inbox_items",
    "local_install_command",
    "looks_like_literal_credential",
    "make_resolver",
    "mask_secrets",
    "mask_url",
    "match_sentence",
    "mcp_servers",
    "model_choices",
    "model_prices",
    "needs_default_provider",
    "new_flow_for_action",
    "new_id",
    "next_fire",
    "node_specs",
    "normalise_decision",
    "option_labels",
    "palette_entries",
    "parse_eval_case",
    "parse_json_answer",
    "parse_repair",
    "parse_routing_answer",
    "parse_var_argument",
    "parse_workflow",
    "permission_summary",
    "propose_repair",
    "provider_catalogue",
    "provider_models",
    "read_resource_text",
    "read_test_cases",
    "reasoning_efforts",
    "reference_first_name",
    "register_node_spec",
    "remember_choice",
    "remember_trigger",
    "remove_mcp_server",
    "render_template_value",
    "resolve_templates",
    "resolve_templates_masked",
    "resource_path",
    "routable_flows",
    "routing_schema",
    "rule_problem",
    "run_costs",
    "run_eval",
    "run_from_agentflow_record",
    "run_usage",
    "run_variables",
    "sample_paths",
    "save_mcp_server",
    "save_settings",
    "save_workflow",
    "schema_errors",
    "secret_lookup",
    "send_request",
    "send_test_request",
    "set_default_library",
    "set_show_browser",
    "settings_path",
    "show_browser",
    "source_handles",
    "spec_for",
    "split_requests",
    "store_api_key",
    "stored_run_costs",
    "survey",
    "template_completion",
    "trigger_issues",
    "trigger_words",
    "unknown_references",
    "unregister_node_spec",
    "usage_cost",
    "validate",
    "walk_references",
    "web_search_available",
    "word_diff",
    "workflow_can_pause",
    "workflow_test_cases",
    "workflow_to_dict",
    "write_test_cases",
]


def test_public_surface_is_exactly_this() -> None:
    assert PUBLIC == sorted(PUBLIC)
    assert engine.__all__ == PUBLIC


def test_every_public_name_resolves() -> None:
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
    assert set(engine.__all__) <= set(dir(engine))
    with pytest.raises(AttributeError):
        engine.no_such_name  # noqa: B018


def test_lazy_names_are_the_private_modules_objects() -> None:
    from engine import cli, store

    assert engine.RunStore is store.RunStore and engine.StoreError is store.StoreError
    assert engine.cli_main is cli.main and engine.CLI_COMMANDS == cli.COMMANDS


def test_the_typed_imports_agree_with_the_lazy_table() -> None:
    """engine/__init__.py names every public name twice: in the imports under ``TYPE_CHECKING``
    (for type checkers and readers) and in the table ``__getattr__`` reads; they must agree."""
    path = REPO / "engine" / "__init__.py"
    tree = parse_source(path.read_text(encoding="utf-8"), str(path))
    typed: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.dump(stmt)
                for alias in stmt.names:
                    typed[alias.asname or alias.name] = (stmt.module.removeprefix("engine."), alias.name)
    assert typed == engine._LAZY


def test_one_error_root_keeping_the_builtin_bases() -> None:
    root = engine.FlowdeskError
    for err, builtin in [
        (engine.WorkflowLoadError, ValueError),
        (engine.RunStateError, RuntimeError),
        (engine.StoreError, RuntimeError),
        (engine.LLMError, Exception),
        (engine.ProviderConfigError, ValueError),
    ]:
        assert issubclass(err, root) and issubclass(err, builtin), err
    assert issubclass(engine.ProviderConfigError, engine.LLMError)
    with pytest.raises(engine.FlowdeskError, match="not valid JSON"):
        engine.loads_workflow("{")


# The optional extras (pyproject's [project.optional-dependencies]) and the module each brings:
# a module that needs one is skipped, with the reason, where the extra is not installed.
OPTIONAL_EXTRAS = {"temporalio": "temporal", "xllamacpp": "local"}
OPTIONAL_EXTRAS.update({"fastapi": "serve", "uvicorn": "serve", "mcp": "mcp", "mcp_types": "mcp", "jsonschema": "mcp"})
OPTIONAL_EXTRAS["httpx2"] = "mcp"  # the MCP SDK's HTTP client


def _engine_modules() -> list[str]:
    import pkgutil

    return [info.name for info in pkgutil.walk_packages(engine.__path__, "engine.")]


@pytest.mark.parametrize("module_name", _engine_modules())
def test_every_error_class_derives_from_the_root(module_name: str) -> None:
    import importlib
    import inspect

    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name in OPTIONAL_EXTRAS:
            pytest.skip(
                f"{module_name} needs the optional '{OPTIONAL_EXTRAS[err.name]}' extra ({err.name} is not installed)"
            )
        raise
    for name, obj in vars(module).items():
        if inspect.isclass(obj) and issubclass(obj, Exception) and obj.__module__ == module_name:
            assert issubclass(obj, engine.FlowdeskError), f"{module_name}.{name} does not derive from FlowdeskError"


def _engine_imports(path: Path) -> list[str]:
    """Every ``engine.<sub>`` import in ``path`` (top level or inside functions), as 'line: text'."""
    tree = parse_source(path.read_text(encoding="utf-8"), str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("engine."):
                bad.append(f"{node.lineno}: from {node.module} import ...")
            elif node.module == "engine":
                for alias in node.names:
                    if alias.name not in engine.__all__:
                        bad.append(f"{node.lineno}: from engine import {alias.name} (not public)")
        elif isinstance(node, ast.Import):
            bad += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("engine.")]
    return bad


def test_editor_imports_only_the_public_api() -> None:
    files = sorted((REPO / "editor").rglob("*.py"))
    assert len(files) > 20
    found = {str(f.relative_to(REPO)): bad for f in files if (bad := _engine_imports(f))}
    assert found == {}


def test_import_check_would_catch_a_private_import(tmp_path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import engine\nfrom engine import Workflow\n\ndef f():\n    from engine.store import RunStore\n"
        "    import engine.cli\n    from engine import _LAZY\n",
        encoding="utf-8",
    )
    assert _engine_imports(sample) == [
        "5: from engine.store import ...",
        "6: import engine.cli",
        "7: from engine import _LAZY (not public)",
    ]


def test_the_provider_catalogue_is_read_by_the_engine_only() -> None:
    """No editor module opens providers.json or settings.json itself: it asks the engine."""
    readers = []
    for path in sorted((REPO / "editor").rglob("*.py")):
        tree = parse_source(path.read_text(encoding="utf-8"))
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and ("providers.json" in node.value or "settings.json" in node.value)
            ):
                readers.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert readers == []
