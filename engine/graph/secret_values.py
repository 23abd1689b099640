"""Secret values in templates: where ``{{secrets.NAME}}`` is read from, and how secrets are hidden.

* :func:`secret_lookup`: a secret by name, from the environment, else the OS keyring;
* :data:`SECRET_MASK` (``••••``): what every event, record and log shows in a secret's place;
* :func:`mask_secrets`: known secret values hidden in any later text (a response that echoes one);
* :func:`mask_url_passwords`: the password of every URL in a value hidden (``https://me:••••@host``).

:mod:`engine.graph.templates` resolves references with these and re-exports them (its names
are the ones the engine's modules import).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from engine.keys import keyring_lookup

__all__ = ["SECRET_MASK", "secret_lookup", "mask_secrets", "mask_url_passwords"]

SECRET_MASK = "••••"


def secret_lookup(name: str) -> str | None:
    """A secret by name: the environment variable ``name``, else the OS keyring (service
    ``flowdesk``, user ``name``, the convention of the providers' API keys), else None.

    The value is never logged; a keyring failure means "no secret".
    """
    value = os.environ.get(name, "")
    if value.strip():
        return value

    return keyring_lookup(name)


def mask_secrets(value: Any, secrets: Iterable[str]) -> Any:
    """``value`` (deep over str/dict/list/tuple) with each occurrence of the given secret
    values replaced by ``••••``: for text produced after resolution (a response, an error
    message) that might echo a secret. Longer secrets are replaced first."""
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not ordered:
        return value
    return _mask(value, ordered)


def _mask(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for s in secrets:
            if s in value:
                value = value.replace(s, SECRET_MASK)
        return value
    if isinstance(value, Mapping):
        return {k: _mask(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets) for v in value]
    if isinstance(value, tuple):
        return tuple(_mask(v, secrets) for v in value)
    return value


_URL_AUTHORITY = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#\s]*)")


def _mask_authority(m: re.Match[str]) -> str:
    authority = m.group(2)
    userinfo, at, hostport = authority.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if not at or not colon or not password or password == SECRET_MASK:
        return m.group(0)
    return f"{m.group(1)}{user}:{SECRET_MASK}@{hostport}"


def mask_url_passwords(value: Any) -> Any:
    """``value`` (text, or lists and objects of it) with the password of every URL in it masked:
    ``https://me:pw@host/`` → ``https://me:••••@host/``, as the run's events show it. A run's
    arguments are stored and shown so (a ``--var URL=…`` password is not the store's to keep)."""
    if isinstance(value, str):
        return _URL_AUTHORITY.sub(_mask_authority, value) if "://" in value else value
    if isinstance(value, dict):
        return {k: mask_url_passwords(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_url_passwords(v) for v in value]
    return value
