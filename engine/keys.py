"""Keys in the OS keyring: the one reader (service ``flowdesk``, one user per provider or secret name).

A leaf module (the standard library; ``keyring`` itself is imported only when a key is read:
it loads its backends, D-Bus included, and a lookup is rare), so a template's secret lookup
does not load the provider settings.
"""

from __future__ import annotations

import logging
import os

__all__ = ["KEYRING_SERVICE", "keyring_lookup"]

log = logging.getLogger("flowdesk.llm")

KEYRING_SERVICE = "flowdesk"


def keyring_lookup(user: str) -> str | None:
    """The key stored for ``user``, or None (no key, no backend, locked...)."""
    # Tests run with FLOWDESK_TESTING set: never read the developer's real keyring then,
    # unless a test opts in (FLOWDESK_KEYRING=1) with a fake backend.
    if os.environ.get("FLOWDESK_TESTING") and os.environ.get("FLOWDESK_KEYRING") != "1":
        return None
    try:
        import keyring

        value = keyring.get_password(KEYRING_SERVICE, user)
    except Exception as err:  # no backend, locked, D-Bus missing...: no key
        log.debug("no key from the OS keyring for %s (%s)", user, type(err).__name__)
        return None
    return value or None
