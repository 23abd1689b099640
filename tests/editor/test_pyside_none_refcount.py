"""PySide6 6.12.0 leaks references to None on void calls (and later crashes); pyproject pins <6.12.

If this fails, the installed PySide6 has that bug: pin a version without it.
"""

import sys

from PySide6.QtWidgets import QGraphicsRectItem


def test_setpos_does_not_drain_none_refcount(qapp):
    item = QGraphicsRectItem(0, 0, 10, 10)
    for i in range(200):  # warm up caches
        item.setPos(i, i)
    before = sys.getrefcount(None)
    for i in range(5000):
        item.setPos(i, -i)
    after = sys.getrefcount(None)
    assert after >= before - 50, f"None refcount fell from {before} to {after}: PySide6 void-call refcount bug"
