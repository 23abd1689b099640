"""Whether a value looks like a credential typed in literally (a header, a query parameter, an
imported block's field), so validation can warn and import can keep it out of the file.

Pure text rules (no I/O): cheap to import for ``validate`` and the importers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["is_credential_name", "looks_like_literal_credential", "literal_credentials", "url_credential_params"]

_TEMPLATE = re.compile(r"\{\{.*?\}\}|\$\{[^}]*\}", re.S)
_CREDENTIAL_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "x-access-token",
    "x-goog-api-key",
    "private-token",
    "cookie",
}
_KNOWN_PREFIXES = re.compile(
    r"(?:\bsk-[A-Za-z0-9_-]{16,}|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bglpat-[A-Za-z0-9_-]{20,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35}"
    r"|\bhf_[A-Za-z0-9]{30,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
)
_SCHEME_TOKEN = re.compile(r"^(?:Bearer|Token|Basic|Digest|ApiKey|Api-Key)\s+(\S+)", re.I)
_SCHEME_ONLY = re.compile(r"^(?:Bearer|Token|Basic|Digest|ApiKey|Api-Key)\W*$", re.I)
# Query parameters (and form fields) whose name says they carry a credential.
_CREDENTIAL_PARAMS = {
    "key",
    "apikey",
    "api_key",
    "api-key",
    "token",
    "access_token",
    "auth",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "private_token",
    "sig",
    "signature",
    "auth_token",
    "refresh_token",
}
_CREDENTIAL_NAME = re.compile(r"api[_-]?key|token|secret|passw|credential", re.I)


def is_credential_name(name: str) -> bool:
    """Whether a header, query parameter or form field's ``name`` says it carries a credential
    (``Authorization``, ``api_key``, ``refresh_token``, ``client_secret``, ``sig``…): the one
    rule for warning of a literal one and for masking its value in what a request shows."""
    key = name.strip().lower()
    return key in _CREDENTIAL_HEADERS or key in _CREDENTIAL_PARAMS or bool(_CREDENTIAL_NAME.search(key))


_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]{32,}$")
_B64 = re.compile(r"^[A-Za-z0-9+/_.=-]{32,}$")


def looks_like_literal_credential(value: Any, name: str | None = None) -> bool:
    """Whether a header value looks like a credential typed in literally (so the validator can
    warn and offer to move it to the keyring): ``Bearer``/``Token``/``Basic`` followed by a long
    token, a known key shape (``sk-…``, ``ghp_…``, ``AKIA…``, a JWT…), or a long hex/base64
    token. ``{{…}}`` references are ignored (``Bearer {{secrets.API_KEY}}`` is fine). A scheme
    followed by a token of 4+ characters counts whatever the header (``Bearer 1234567890``).
    With the header or query parameter ``name`` given, any literal value of 4+ characters of
    ``Authorization``, ``X-API-Key``, ``api_key``, ``token`` and the like counts too (spaces
    included); a bare UUID counts only there (elsewhere it is a request id)."""
    if not isinstance(value, str):
        return False
    text = _TEMPLATE.sub("", value).strip()
    if not text:
        return False
    if _SCHEME_ONLY.match(text):  # "Bearer {{secrets.API_KEY}}" once the reference is taken out
        return False
    if _KNOWN_PREFIXES.search(text):
        return True
    m = _SCHEME_TOKEN.match(text)
    if m:  # "Bearer 1234567890", "Basic dXNlcjpw": a short token counts when it is not a plain word
        token = m.group(1)
        basic = m.group(0).lower().startswith(("basic", "digest"))
        return len(token) >= 16 or (len(token) >= 4 and (basic or bool(re.search(r"[\d_+/=-]", token))))
    if is_credential_name(name or "") and len(text) >= 4:
        return True
    if _UUID.match(text):  # request ids and idempotency keys; a UUID key in X-API-Key is caught above
        return False
    if _HEX.match(text):
        return True
    if _B64.match(text) and re.search(r"\d", text) and re.search(r"[A-Za-z]", text) and "://" not in text:
        return True
    return False


URL_PASSWORD = "(URL password)"


def url_credential_params(url: Any) -> list[str]:
    """The query parameters of ``url`` that hold a literal credential (``?api_key=abc123``),
    and :data:`URL_PASSWORD` when its userinfo holds one; ``{{…}}``/``${…}`` values are fine."""
    if not isinstance(url, str) or ("?" not in url and "@" not in url):
        return []
    try:
        parts = urlsplit(url.strip())
        pairs = parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return []
    found = [k for k, v in pairs if looks_like_literal_credential(v, k)]
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if ":" in userinfo and _TEMPLATE.sub("", userinfo.partition(":")[2]).strip():
        found.append(URL_PASSWORD)
    return found


def _rows(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, Mapping):
        return [(str(k), v) for k, v in value.items()]
    if isinstance(value, list):
        return [(str(r.get("key") or ""), r.get("value")) for r in value if isinstance(r, Mapping)]
    return []


def literal_credentials(data: Mapping[str, Any]) -> list[str]:
    """Where an ``http`` node's data (or an AnythingLLM ``apiCall`` config) holds a credential
    typed in literally, in words: ``the header 'Authorization'``, ``the query parameter 'key'``,
    ``the URL's query parameter 'api_key'``, ``the URL's password``."""
    found = [f"the header '{k}'" for k, v in _rows(data.get("headers")) if looks_like_literal_credential(v, k)]
    found += [f"the query parameter '{k}'" for k, v in _rows(data.get("query")) if looks_like_literal_credential(v, k)]
    found += [
        "the URL's password" if k == URL_PASSWORD else f"the URL's query parameter '{k}'"
        for k in url_credential_params(data.get("url"))
    ]
    return found
