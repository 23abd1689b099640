"""The ``http`` and ``fetch`` node kinds: an API call and a web page as readable text.

Both run through the cores on main (:mod:`engine.nodes.http_request`, :mod:`engine.nodes.web_fetch`):
the node's data is resolved (templates, secrets) just before the step, the request is
sent, and ``http_request`` (``{method, url}``, secrets masked) and ``http_response``
(``{status, bytes, durationMs}``) are logged on the node. The output (parsed JSON or text)
is stored with every secret that went into the request masked, so no event, record or
export holds one.

Data (DESIGN.md "More node kinds"):
* ``http``: ``method``, ``url``, ``query`` and ``headers`` (``[{key, value}]``), ``bodyType``
  (``none``, ``json``, ``form``, ``text``), ``body``, ``formData``, ``failOnStatus`` (default
  true: a 4xx/5xx fails the step; off: the output is ``{status, reason, body}`` for such an
  answer), ``outputVar``;
* ``fetch``: ``url``, ``format`` (``markdown``, ``text``, ``html``), ``selector``, ``maxChars``
  (default 20,000), ``outputVar``.
Step policies (``timeoutMs``, ``errorMode``, retries) are common to working nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator

from engine.graph.permissions import PermissionDenied, access_for
from engine.graph.templates import TemplateScope, mask_secrets, resolve_templates_masked
from engine.llm.base import ProviderConfigError
from engine.llm.config import WebRequestSettings, load_settings
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, _Loose, json_text_body, resolve_for_step
from engine.nodes.credentials import literal_credentials
from engine.nodes.http_request import (
    HttpRequestSpec,
    HttpStatusError,
    RequestFailedError,
    WebRequestError,
    mask_text,
    send_request,
)
from engine.nodes.web_fetch import fetch_page

__all__ = ["KeyValueRow", "HttpData", "FetchData", "HttpSpec", "FetchSpec", "send_test_request", "HTTP_METHODS"]

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


class KeyValueRow(_Loose):
    """One row of a key/value table (``headers``, ``query``, ``formData``)."""

    key: str = ""
    value: Any = ""


def _rows(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, Mapping):  # {key: value} written by hand
        return [{"key": str(k), "value": v} for k, v in value.items()]
    return value


class HttpData(PolicyData):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = "GET"
    url: str = ""
    query: list[KeyValueRow] = Field(default_factory=list)
    headers: list[KeyValueRow] = Field(default_factory=list)
    bodyType: Literal["none", "json", "form", "text"] = "none"
    body: Any = Field(default="", json_schema_extra={"multiline": True})
    formData: list[KeyValueRow] = Field(default_factory=list)
    failOnStatus: bool = True

    @field_validator("query", "headers", "formData", mode="before")
    @classmethod
    def _tables(cls, v: Any) -> Any:
        return _rows(v)

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, v: Any) -> Any:
        return str(v or "GET").strip().upper()

    @field_validator("bodyType", mode="before")
    @classmethod
    def _body_type(cls, v: Any) -> Any:
        return str(v or "none").strip().lower()

    @field_validator("url", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


class FetchData(PolicyData):
    # (titles: the inspector's labels, which would otherwise read "Url" and "Max chars")
    url: str = Field(default="", title="URL")
    format: Literal["markdown", "text", "html"] = "markdown"
    selector: str = Field(
        default="", title="CSS selector", description="Only the part of the page it matches (empty: the main content)."
    )
    maxChars: int = Field(default=20_000, title="Max characters")

    @field_validator("url", "selector", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, v: Any) -> Any:
        return str(v or "markdown").strip().lower()

    @field_validator("maxChars", mode="before")
    @classmethod
    def _max_chars(cls, v: Any) -> Any:
        return 20_000 if v in (None, "") else v


def _check_url(node: Any, checks: Any, kind: str, what: str) -> None:
    """``<kind>_no_url`` (a warning) or ``<kind>_bad_scheme``: a URL that can never be requested
    (one made by a template is checked when the step runs)."""
    url = node.data.url
    if not url.strip():
        checks.warning(f"{kind}_no_url", f"{checks.label(node)} has no URL.")
    elif "{{" not in url and "${" not in url and not url.strip().lower().startswith(("http://", "https://")):
        checks.error(
            f"{kind}_bad_scheme", f"{checks.label(node)}: only http:// and https:// {what} (not '{url.strip()[:60]}')."
        )


def _check_permission(node: Any, checks: Any) -> None:
    """``permission_network`` (a warning): a literal URL whose host the workflow's declared
    ``permissions.network`` does not list, so the step would fail ``permission_denied``."""
    url = node.data.url.strip()
    access = access_for(getattr(checks, "workflow", None), open_by_default=True)
    if access.open or not url or "{{" in url or "${" in url or access.allows_network(url):
        return
    checks.warning(
        "permission_network",
        f"{checks.label(node)} requests {url[:80]}, whose host the workflow's permissions.network does not list.",
    )


# --------------------------------------------------------------------------- running


def request_deadline(node: Any) -> float | None:
    """Seconds a whole ``http``/``fetch`` request may take: None when the node sets
    ``timeoutMs`` (the step policy's limit applies), else the ``webRequests.deadline`` setting
    (default 120 s; an unreadable settings file means the default)."""
    if getattr(node.data, "timeoutMs", None):
        return None
    try:
        return load_settings().webRequests.deadline
    except ProviderConfigError:
        return WebRequestSettings().deadline


def _failure(what: str, err: WebRequestError, deadline: float | None) -> NodeError:
    message = f"{what} failed: {err}"
    if deadline and isinstance(err, RequestFailedError) and str(err).startswith("Timed out after"):
        message += (
            " This is the default deadline for a whole request (webRequests.deadline in the settings); "
            "set the node's timeoutMs to allow longer."
        )
    return NodeError(message)


def _emitter(ctx: Any, node_id: str, secrets: list[str]):
    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "http_request":
            ctx.emit(node_id, kind, mask_text(f"{data.get('method', '')} {data.get('url', '')}", secrets), data)
        else:
            ctx.emit(
                node_id,
                kind,
                f"HTTP {data.get('status')} · {data.get('bytes')} bytes · {data.get('durationMs')} ms",
                data,
            )

    return on_event


def network_check(ctx: Any, node: Any) -> Any:
    """The check each request of a step makes (redirects included) when the workflow declares
    ``permissions``: a host outside ``permissions.network`` fails the step ``permission_denied``
    (logged as such on the node). None when the workflow declares none (anything goes)."""
    access = access_for(getattr(ctx, "workflow", None), open_by_default=True)
    if access.open:
        return None

    def check(url: str) -> None:
        try:
            access.check_network(url)
        except PermissionDenied as err:
            ctx.emit(node.id, "permission_denied", str(err), {"what": err.what, "field": err.field})
            raise

    return check


def _masked_output(value: Any, secrets: list[str]) -> Any:
    if not secrets:
        return value

    return mask_secrets(value, secrets)


async def send_test_request(
    node: Any, variables: Mapping[str, Any] | None = None, *, timeout: float | None = 30.0, on_event: Any = None
) -> Any:
    """Run one ``http`` node alone ("Send test request"): its data resolved with ``variables``
    (and ``env.``/``secrets.``), the request sent, the :class:`~engine.HttpResult` returned
    with secrets masked in its output and text. ``failOnStatus`` is ignored here (a 404 is a
    result to show, not a failure). Raises :class:`~engine.WebRequestError` on a refusal."""
    data = node.data.model_dump(mode="json", exclude_none=True) if hasattr(node, "data") else dict(node)
    scope = TemplateScope(variables=dict(variables or {}))
    res = resolve_templates_masked(data, scope)
    resolved = dict(res.value)
    secrets = list(res.secrets) + json_text_body(data, resolved, scope)
    spec = HttpRequestSpec.from_data({**resolved, "failOnStatus": False})
    result = await send_request(spec, secrets=secrets, timeout=timeout, on_event=on_event)
    if secrets:
        result.output = _masked_output(result.output, secrets)
        result.text = mask_text(result.text, secrets)
    return result


class HttpSpec(NodeSpec):
    kind = "http"
    data_model = HttpData
    label = "HTTP request"
    description = "Calls an API over HTTP(S); the JSON or text answer is the output."
    icon = "http"
    color = "#d97706"
    width = 240.0
    category = "Web"
    reports_output = False
    works = True

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        url = getattr(data, "url", "") or "(no URL)"
        return [(f"{getattr(data, 'method', 'GET')} {url}", False)]

    def new_data(self) -> dict[str, Any]:
        return {
            "method": "GET",
            "url": "",
            "query": [],
            "headers": [],
            "bodyType": "none",
            "body": "",
            "formData": [],
            "failOnStatus": True,
        }

    def check(self, node: Any, checks: Any) -> None:
        d = node.data
        _check_url(node, checks, "http", "URLs can be requested")
        _check_permission(node, checks)
        for where in literal_credentials(d.model_dump(mode="json")):
            checks.warning(
                "literal_credential",
                f"{checks.label(node)}: {where} looks like a credential typed in; "
                "keep it in the keyring and write {{secrets.NAME}} instead.",
            )

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        data, secrets = resolve_for_step(ctx, node, value)
        deadline = request_deadline(node)
        try:
            result = await send_request(
                data,
                secrets=secrets,
                timeout=deadline,
                on_event=_emitter(ctx, node.id, secrets),
                check_target=network_check(ctx, node),
            )
        except (HttpStatusError, WebRequestError) as err:
            raise _failure(self.describe(node), err, deadline) from None
        output = result.output
        if result.status >= 400:
            # failOnStatus off: the step succeeds, and the output says how the server answered.
            output = {"status": result.status, "reason": result.reason, "body": output}
        return _masked_output(output, secrets), "output"

    def describe(self, node: Any) -> str:
        return f"HTTP request '{node.id}'"


class FetchSpec(NodeSpec):
    kind = "fetch"
    data_model = FetchData
    label = "Web page"
    description = "Reads a web page as Markdown or text (scripts, styles and navigation dropped)."
    icon = "fetch"
    color = "#0e8a7e"
    width = 232.0
    category = "Web"
    reports_output = False
    works = True

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        url = getattr(data, "url", "") or "(no URL)"
        sel = getattr(data, "selector", "")
        return [(url, False)] + ([(f"selector {sel}", True)] if sel else [])

    def new_data(self) -> dict[str, Any]:
        return {"url": "", "format": "markdown", "selector": "", "maxChars": 20000}

    def check(self, node: Any, checks: Any) -> None:
        d = node.data
        _check_url(node, checks, "fetch", "pages can be fetched")
        _check_permission(node, checks)
        if d.maxChars < 1:
            checks.error("fetch_bad_max_chars", f"{checks.label(node)}: maxChars must be at least 1.")

    def describe(self, node: Any) -> str:
        return f"Web page '{node.id}'"

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        data, secrets = resolve_for_step(ctx, node, value)
        deadline = request_deadline(node)
        try:
            result = await fetch_page(
                data,
                secrets=secrets,
                timeout=deadline,
                on_event=_emitter(ctx, node.id, secrets),
                check_target=network_check(ctx, node),
            )
        except WebRequestError as err:
            raise _failure(self.describe(node), err, deadline) from None
        return _masked_output(result.output, secrets), "output"


HTTP_SPEC = HttpSpec()
FETCH_SPEC = FetchSpec()
SPECS = [HTTP_SPEC, FETCH_SPEC]
