"""One table maps a node kind to its inspector page.

:data:`INSPECTOR_PAGES` holds a :data:`PageFactory` per kind that has a page of its own; the
inspector shows that page for a node of the kind, and a form generated from the kind's data
model (:class:`~editor.panels.data_form.DataForm`) for any other kind the engine knows (a
plug-in kind gets one with no editor code). A page is made once, on first use, for the
inspector (see :class:`~editor.panels.inspector_host.PageHost`), and shows a node's data as
plain data (:class:`~editor.panels.inspector_host.InspectorPage`).

:func:`register_inspector_page` adds (or replaces) a kind's page; the built-in ones are
registered here: the core kinds (:mod:`.core_pages`), ``http`` (:mod:`.web_pages`), ``flow``
and ``action`` (:mod:`.kind_pages`), ``router`` (:mod:`.routes`), ``code`` and ``script``
(:mod:`.code_pages`). Whatever the page, the inspector adds the data-flow
sections of the kind (output variable, step policy, the names available) below it.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from .approval_page import ApprovalPage
from .browser_page import BrowserPage
from .code_pages import CodePage, ScriptPage
from .core_pages import AgentPage, ConditionPage, StartPage
from .inspector_host import InspectorPage, PageFactory, PageHost
from .kind_pages import ActionPage, FlowPage
from .mcp_pages import McpPage
from .routes import RouterPage
from .web_pages import HttpPage, start_variables

__all__ = [
    "INSPECTOR_PAGES",
    "PageFactory",
    "PageHost",
    "InspectorPage",
    "register_inspector_page",
    "unregister_inspector_page",
    "page_factory",
]

INSPECTOR_PAGES: dict[str, PageFactory] = {}


def register_inspector_page(kind: str, factory: PageFactory) -> None:
    """Show ``factory(inspector)``'s page for nodes of ``kind`` (in inspectors made from now on)."""
    INSPECTOR_PAGES[kind] = factory


def unregister_inspector_page(kind: str) -> None:
    """Nodes of ``kind`` get the generated form again."""
    INSPECTOR_PAGES.pop(kind, None)


def page_factory(kind: str) -> PageFactory | None:
    return INSPECTOR_PAGES.get(kind)


def _http_page(host: PageHost) -> QWidget:
    return HttpPage(host.edit_field, host.watch, lambda: start_variables(host.doc.workflow))


def _flow_page(host: PageHost) -> QWidget:
    return FlowPage(host.edit_field, host.watch, lambda: list(host.library_flows()), host.open_flow)


def _action_page(host: PageHost) -> QWidget:
    return ActionPage(host.edit_field, host.watch, lambda: list(host.library_flows()), host.open_flow)


for _kind, _factory in (
    ("agent", AgentPage),
    ("start", StartPage),
    ("if", ConditionPage),
    ("approval", ApprovalPage),
    ("router", RouterPage),
    ("http", _http_page),
    ("flow", _flow_page),
    ("action", _action_page),
    ("code", CodePage),
    ("script", ScriptPage),
    ("browser", BrowserPage),
    ("mcp", McpPage),
):
    register_inspector_page(_kind, _factory)
