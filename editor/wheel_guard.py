"""The mouse wheel scrolls forms; it does not change a field the pointer passes over.

Qt hands a wheel event to the combo box or spin box under the pointer, which then takes the
next value: scrolling down the inspector changed an agent's model (gpt-4o-mini became
gpt-5-mini) without a click. A field takes the wheel only once it has focus (clicked or
tabbed to; not focus given by the wheel itself, Qt's default for these widgets); otherwise the
wheel scrolls the scroll area around it, as the user meant.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QApplication, QComboBox, QWidget

__all__ = ["WheelGuard", "install_wheel_guard"]

_WHEEL = QEvent.Type.Wheel
_POLISH = QEvent.Type.Polish


class WheelGuard(QObject):
    """An application event filter: see the module's docstring."""

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        kind = event.type()
        if kind == _POLISH and isinstance(obj, (QComboBox, QAbstractSpinBox)):
            # Their default, WheelFocus, gives them focus on the wheel before any filter sees it.
            if obj.focusPolicy() == Qt.FocusPolicy.WheelFocus:
                obj.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            return False
        if kind != _WHEEL or not isinstance(obj, (QComboBox, QAbstractSpinBox)) or obj.hasFocus():
            return False
        area = _scroll_area_of(obj)
        if area is not None:
            bar = area.verticalScrollBar()
            if bar is not None and bar.isVisible():
                QApplication.sendEvent(bar, event)
        return True  # the field's value stays as it was


def _scroll_area_of(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


def install_wheel_guard(app: QApplication) -> WheelGuard:
    """Install the guard on ``app`` once (it is kept as the application's child)."""
    guard = app.findChild(WheelGuard)
    if guard is None:
        guard = WheelGuard(app)
        app.installEventFilter(guard)
    return guard
