"""Masking for what a web request shows: URLs, messages and body excerpts without secrets.

A secret (raw or percent-encoded) becomes :data:`SECRET_MASK`; a URL's userinfo password and the
values of credential-named query parameters (``api_key``, ``refresh_token``, ``sig``…: the names
validation warns of, :func:`engine.nodes.credentials.is_credential_name`) are masked even when
they are not in the secret set. Used for the ``http_request`` event, error messages and
the excerpt of a failing response's body; the response itself is never masked here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus, urlsplit, urlunsplit

from engine.graph.templates import SECRET_MASK
from engine.nodes.credentials import is_credential_name

__all__ = ["mask_text", "mask_url", "request_event_data", "body_excerpt", "EXCERPT_CHARS", "SECRET_MASK"]

EXCERPT_CHARS = 200


def _secret_forms(secrets: Iterable[str]) -> list[str]:
    forms: set[str] = set()
    for s in secrets:
        if s:
            forms.update({s, quote(s, safe=""), quote_plus(s, safe=""), quote(s)})
    return sorted(forms, key=len, reverse=True)


def mask_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (raw or percent-encoded) replaced by :data:`SECRET_MASK`."""
    for form in _secret_forms(secrets):
        if form in text:
            text = text.replace(form, SECRET_MASK)
    return text


def mask_url(url: str, secrets: Iterable[str] = ()) -> str:
    """A URL fit for a log: secrets masked anywhere in it (query and userinfo included, raw or
    percent-encoded), the userinfo password always masked, and the values of credential-named
    query parameters (``api_key``, ``token``, ``sig``…) masked."""
    text = mask_text(str(url), secrets)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}{':' + SECRET_MASK if sep else ''}@{hostport}"
    query = "&".join(_mask_param(p) for p in parts.query.split("&")) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return text
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _mask_param(pair: str) -> str:
    key, sep, value = pair.partition("=")
    if sep and value and is_credential_name(unquote_plus(key)):
        return f"{key}={SECRET_MASK}"
    return pair


def request_event_data(method: str, url: str, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """The ``http_request`` event's data: ``{method, url}`` with secrets masked."""
    return {"method": method.upper(), "url": mask_url(url, secrets)}


def body_excerpt(text: str, secrets: Iterable[str]) -> str:
    """The start of a response body for an error message: one line, masked, ~200 characters."""
    flat = " ".join(mask_text(text, secrets).split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"
