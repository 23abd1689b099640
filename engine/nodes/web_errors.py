"""The errors of the ``http`` and ``fetch`` nodes: one :class:`WebRequestError` family.

Every refusal or failure of a web request is one of these, so a step's error branch, the code
host and the editor can catch the root and show ``str(err)`` (already masked: secrets never
reach these messages). :mod:`engine.nodes.http_request` and :mod:`engine.nodes.web_fetch`
re-export them.
"""

from __future__ import annotations

from typing import Any

from engine.errors import FlowdeskError

__all__ = [
    "WebRequestError",
    "InvalidRequestError",
    "UrlNotAllowedError",
    "RedirectError",
    "ResponseTooLargeError",
    "HttpStatusError",
    "RequestFailedError",
    "UnsupportedContentError",
    "SelectorNotFoundError",
]


class WebRequestError(FlowdeskError, RuntimeError):
    """Root of every refusal or failure of an ``http`` or ``fetch`` step; ``str()`` is for people
    (secrets already masked). ``url`` is the masked URL concerned, when there is one."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class InvalidRequestError(WebRequestError, ValueError):
    """The request itself is wrong (method, header, body that is not JSON, bad selector…)."""


class UrlNotAllowedError(InvalidRequestError):
    """The URL is not an http(s) URL with a host (``file://``, ``ftp://``, ``data:``, relative…)."""


class RedirectError(WebRequestError):
    """A redirect loop, or more than :data:`MAX_REDIRECTS` hops. ``chain`` lists the masked URLs."""

    def __init__(
        self, message: str, *, url: str | None = None, chain: list[str] | None = None, loop: bool = False
    ) -> None:
        super().__init__(message, url=url)
        self.chain = chain or []
        self.loop = loop


class ResponseTooLargeError(WebRequestError):
    """The body passed the size limit (``limit`` bytes); reading stopped there."""

    def __init__(self, message: str, *, url: str | None = None, limit: int = 0) -> None:
        super().__init__(message, url=url)
        self.limit = limit


class HttpStatusError(WebRequestError):
    """A 4xx/5xx answer with ``failOnStatus``: ``status``, ``excerpt`` (start of the body, masked)
    and the whole ``result`` (for an ``error`` branch that wants the body)."""

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int = 0,
        excerpt: str = "",
        result: Any = None,  # the engine.nodes.http_request.HttpResult (not imported: that imports this)
    ) -> None:
        super().__init__(message, url=url)
        self.status = status
        self.excerpt = excerpt
        self.result = result


class RequestFailedError(WebRequestError):
    """No usable answer: connection refused, DNS, TLS, timeout, connection cut mid-body."""


class UnsupportedContentError(WebRequestError):
    """The URL answered with binary content (``content_type`` names it); nothing was read."""

    def __init__(self, message: str, *, url: str | None = None, content_type: str = "") -> None:
        super().__init__(message, url=url)
        self.content_type = content_type


class SelectorNotFoundError(WebRequestError):
    """The CSS selector matched nothing on the page."""
