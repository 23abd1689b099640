"""LazyItems: the scene's ``dict[id, item]`` that makes an item on first look-up.

A big document is projected lazily (see :mod:`editor.canvas.scene`): an item exists only for
the cards in view. ``items[id]``, ``items.get(id)`` and ``id in items`` make the item of any
node or link of the model on demand (through the scene's maker, which answers None for an id
it does not know); iteration, ``len`` and ``values()`` cover the items made so far;
``peek(id)`` and ``has(id)`` never make one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["LazyItems"]


class LazyItems(dict):
    """A dict of items that makes an item for a model id on first look-up."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key):
        item = self._make(key)
        if item is None:
            raise KeyError(key)
        return item

    def get(self, key, default=None):
        item = dict.get(self, key)
        if item is None:
            item = self._make(key)
        return default if item is None else item

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or self._make(key) is not None

    def peek(self, key):
        return dict.get(self, key)

    def has(self, key) -> bool:
        return dict.__contains__(self, key)
