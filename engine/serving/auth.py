"""Who may call the servers: bearer tokens, loopback binding and webhook signatures.

Rules (docs/serving.md): a token is required unless the server listens on a loopback address
and no token is set, so binding elsewhere without one is refused before anything listens. A
webhook may instead be signed: ``X-Flowdesk-Signature: sha256=<hex>``, the HMAC-SHA256 of the
raw request body with the flow's secret. The secret is never in the flow file: the flow's
``webhook.secret`` names it, and it is read like ``{{secrets.NAME}}`` (the environment variable
NAME, else the OS keyring).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from typing import Any

from engine.graph.templates import secret_lookup

__all__ = [
    "SIGNATURE_HEADER",
    "is_loopback",
    "token_ok",
    "signature_of",
    "signature_ok",
    "webhook_secret_name",
    "webhook_secret",
    "split_host_port",
]

SIGNATURE_HEADER = "X-Flowdesk-Signature"
_SECRET_REF = re.compile(r"^\s*\{\{\s*secrets\.([A-Za-z0-9_.-]+)\s*\}\}\s*$")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is only reachable from this machine."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_ok(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>`` (compared in constant time)."""
    if not authorization:
        return False
    scheme, _, given = authorization.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def signature_of(secret: str, body: bytes) -> str:
    """The signature header's value for ``body``: ``sha256=<hex HMAC-SHA256>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_ok(secret: str, body: bytes, header: str | None) -> bool:
    if not header:
        return False
    return hmac.compare_digest(header.strip().lower().encode(), signature_of(secret, body).encode())


def webhook_secret_name(workflow: Any) -> str | None:
    """The name of the secret that signs this flow's webhook (its ``webhook.secret``), or None."""
    extra = getattr(workflow, "model_extra", None) or {}
    hook = extra.get("webhook")
    if not isinstance(hook, dict):
        return None
    name = hook.get("secret")
    if not isinstance(name, str) or not name.strip():
        return None
    ref = _SECRET_REF.match(name)
    return ref.group(1) if ref else name.strip()


def webhook_secret(workflow: Any) -> tuple[str | None, str | None]:
    """``(name, value)`` of the flow's webhook secret; ``value`` None when it is not set."""
    name = webhook_secret_name(workflow)
    if name is None:
        return None, None
    try:
        return name, secret_lookup(name) or None
    except Exception:  # a broken keyring is "not set", never a crash
        return name, None


def split_host_port(text: str, default_port: int) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; a bare host takes ``default_port``); ValueError when malformed."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"'{text}' names no host (expected HOST:PORT, for example 127.0.0.1:8378)")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"'{port_text}' is not a port number (0-65535)")
    return host, int(port_text)
