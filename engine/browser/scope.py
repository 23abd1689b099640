"""What a browser step may reach: its ``scope`` and, on top, the workflow's ``permissions.network``.

``scope: {type: "site" | "global", domains: [...]}`` (seed 000's ``WebFlowScope``): a ``site``
step reaches only hosts that end with one of its domains (``String.endsWith`` as in the seed,
taken at a dot: ``example.com`` matches ``www.example.com`` and ``example.com``, not
``notexample.com``, which is what the seed says it means); ``global`` any host. A domain may
carry a port (``127.0.0.1:8080``): then only that port. ``about:``, ``data:`` and ``blob:``
URLs reach no network and are always allowed; other schemes than http(s)/ws(s) never are.

A navigation of the page outside fails the step (``outside_scope`` naming the URL); a
sub-resource, a frame or a request made by the page's script outside is blocked, never sent,
and the step goes on (docs/nodes.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from engine.graph.permissions import Access, PermissionDenied, host_and_port
from engine.nodes.base import NodeError

__all__ = ["Scope", "Guard", "OutsideScope", "scope_problems", "NO_NETWORK_SCHEMES"]

NO_NETWORK_SCHEMES = ("about", "data", "blob")
_NETWORK_SCHEMES = ("http", "https", "ws", "wss")


class OutsideScope(NodeError):
    """A navigation outside the step's scope (or its workflow's permissions)."""

    code = "outside_scope"


class Scope:
    """A step's scope, read leniently from its data (absent: ``global``)."""

    __slots__ = ("type", "domains")

    def __init__(self, type_: str = "global", domains: list[str] | None = None) -> None:
        self.type = type_
        self.domains = [d for d in (domains or []) if d]

    @classmethod
    def of(cls, raw: Any) -> Scope:
        if not isinstance(raw, dict):
            return cls()
        kind = str(raw.get("type") or ("site" if raw.get("domains") else "global")).strip().lower()
        domains = raw.get("domains") or []
        if isinstance(domains, str):
            domains = [domains]
        clean = [str(d).strip().lower().lstrip(".").rstrip("/") for d in domains if isinstance(d, str) and d.strip()]
        return cls(kind, [d.split("://")[-1] for d in clean])

    def describe(self) -> str:
        return "global" if self.type == "global" else "site: " + (", ".join(self.domains) or "no domains")

    def allows_host(self, host: str, port: int | None) -> bool:
        if self.type != "site":
            return True
        for entry in self.domains:
            want_host, want_port = host_and_port(entry)
            if ":" in entry and want_port is not None and port != want_port:
                continue
            if host == want_host or host.endswith("." + want_host):
                return True
        return False


def scope_problems(raw: Any) -> list[str]:
    """What is wrong with a step's ``scope`` (empty: nothing), for validation."""
    if raw is None:
        return []
    if not isinstance(raw, dict) or "invalid" in raw:
        return ["scope must be an object {type, domains}"]
    kind = raw.get("type", "global")
    if kind not in ("site", "global"):
        return [f"scope type '{kind}' is neither 'site' nor 'global'"]
    domains = raw.get("domains")
    if domains is not None and not (isinstance(domains, list) and all(isinstance(d, str) for d in domains)):
        return ["scope domains must be a list of domain names"]
    if kind == "site" and not [d for d in domains or [] if d.strip()]:
        return ["a 'site' scope needs at least one domain"]
    return []


class Guard:
    """Answers "may this step's browser load URL?" and keeps what it refused.

    ``navigation_denied`` holds the first main-frame navigation refused (the step fails on it);
    ``blocked`` every refused request, in order (``(url, reason)``), each also told to
    ``on_block`` as it is refused (so the run's log shows it where it happened).
    """

    def __init__(self, scope: Scope, access: Access, on_block: Callable[[str, str], None] | None = None) -> None:
        self.scope = scope
        self.access = access
        self.on_block = on_block
        self.navigation_denied: NodeError | None = None
        self.blocked: list[tuple[str, str]] = []

    def _refused(self, url: str, err: NodeError) -> None:
        reason = str(err).split(":", 1)[0]
        self.blocked.append((url, reason))
        if self.on_block is not None:
            self.on_block(url, reason)

    def refusal(self, url: str) -> NodeError | None:
        """Why ``url`` may not be loaded (an error to raise for a navigation), None when it may."""
        scheme = urlsplit(url).scheme.lower()
        if scheme in NO_NETWORK_SCHEMES:
            return None
        if scheme not in _NETWORK_SCHEMES:
            return OutsideScope(f"outside_scope: {url} is not a web address the browser may open")
        host, port = host_and_port(url)
        if not self.scope.allows_host(host, port):
            return OutsideScope(f"outside_scope: {url} is outside the step's scope ({self.scope.describe()})")
        if not self.access.allows_network(url):
            shown = f"{host}:{port}" if port not in (None, 80, 443) else host
            return PermissionDenied(f"network access to {shown!r} ({url})", "network")
        return None

    def check_navigation(self, url: str) -> None:
        """Raise the refusal of a navigation to ``url`` (before it is sent)."""
        err = self.refusal(url)
        if err is not None:
            self._refused(url, err)
            if self.navigation_denied is None:  # a script that catches it still fails the step
                self.navigation_denied = err
            raise err

    def request(self, url: str, *, navigation: bool) -> bool:
        """A request the page is about to send: True to let it go; a refused main-frame
        navigation is kept to fail the step."""
        err = self.refusal(url)
        if err is None:
            return True
        self._refused(url, err)
        if navigation and self.navigation_denied is None:
            self.navigation_denied = err
        return False

    def raise_if_denied(self) -> None:
        if self.navigation_denied is not None:
            raise self.navigation_denied
