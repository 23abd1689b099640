"""Whether a value looks like a credential typed in literally (a header, a query parameter, an
imported block's field), so validation can warn and import can keep it out of the file.

Pure text rules (no I/O): cheap to import for ``validate`` and the importers.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["looks_like_literal_credential"]

_TEMPLATE = re.compile(r"\{\{.*?\}\}", re.S)
_CREDENTIAL_HEADERS = {"authorization", "proxy-authorization", "x-api-key", "api-key", "apikey", "x-auth-token",
                       "x-access-token", "x-goog-api-key", "private-token", "cookie"}
_KNOWN_PREFIXES = re.compile(
    r"(?:\bsk-[A-Za-z0-9_-]{16,}|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bglpat-[A-Za-z0-9_-]{20,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35}"
    r"|\bhf_[A-Za-z0-9]{30,}|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)")
_SCHEME_TOKEN = re.compile(r"^(?:Bearer|Token|Basic|Digest|ApiKey|Api-Key)\s+(\S+)", re.I)
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_HEX = re.compile(r"^[0-9a-fA-F]{32,}$")
_B64 = re.compile(r"^[A-Za-z0-9+/_.=-]{32,}$")


def looks_like_literal_credential(value: Any, name: str | None = None) -> bool:
    """Whether a header value looks like a credential typed in literally (so the validator can
    warn and offer to move it to the keyring): ``Bearer``/``Token``/``Basic`` followed by a long
    token, a known key shape (``sk-…``, ``ghp_…``, ``AKIA…``, a JWT…), or a long hex/base64
    token. ``{{…}}`` references are ignored (``Bearer {{secrets.API_KEY}}`` is fine). With the
    header ``name`` given, any literal value of ``Authorization``, ``X-API-Key`` and the like
    of 8+ characters counts too; a bare UUID counts only there (elsewhere it is a request id)."""
    if not isinstance(value, str):
        return False
    text = _TEMPLATE.sub("", value).strip()
    if not text:
        return False
    if _KNOWN_PREFIXES.search(text):
        return True
    m = _SCHEME_TOKEN.match(text)
    if m:
        return len(m.group(1)) >= 16 or (m.group(0).lower().startswith("basic") and len(m.group(1)) >= 8)
    credential_header = bool(name) and name.strip().lower() in _CREDENTIAL_HEADERS
    if credential_header and len(text) >= 8 and " " not in text:
        return True
    if _UUID.match(text):  # request ids and idempotency keys; a UUID key in X-API-Key is caught above
        return False
    if _HEX.match(text):
        return True
    if _B64.match(text) and re.search(r"\d", text) and re.search(r"[A-Za-z]", text) and "://" not in text:
        return True
    return False
