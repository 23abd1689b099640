"""The wheel scrolls a form; a combo box or spin box it passes over keeps its value (it took
the next model name while the inspector was scrolled)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QComboBox, QScrollArea, QSpinBox, QVBoxLayout, QWidget

from editor.wheel_guard import install_wheel_guard


def _wheel(widget: QWidget, steps: int = -1) -> None:
    pos = QPointF(widget.rect().center())
    event = QWheelEvent(
        pos,
        QPointF(widget.mapToGlobal(pos.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_the_wheel_scrolls_the_form_not_the_field_under_the_pointer(qtbot, qapp):
    install_wheel_guard(qapp)
    area = QScrollArea()
    page = QWidget()
    lay = QVBoxLayout(page)
    combo = QComboBox()
    combo.addItems(["gpt-4o-mini", "gpt-5-mini", "o3"])
    spin = QSpinBox()
    spin.setRange(0, 100)
    spin.setValue(5)
    lay.addWidget(combo)
    lay.addWidget(spin)
    lay.addSpacing(3000)
    area.setWidget(page)
    area.resize(300, 300)
    qtbot.addWidget(area)
    area.show()
    qtbot.waitExposed(area)
    bar = area.verticalScrollBar()
    assert bar.value() == 0
    # not Qt's WheelFocus: the wheel itself would give the field focus, and then its value
    assert combo.focusPolicy() == spin.focusPolicy() == Qt.FocusPolicy.StrongFocus
    _wheel(combo)
    _wheel(spin)
    assert combo.currentText() == "gpt-4o-mini" and spin.value() == 5
    assert bar.value() > 0  # the page scrolled instead
    # once the field has focus (clicked, tabbed to) the wheel is the field's
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus, timeout=2000)
    _wheel(spin, 1)
    assert spin.value() == 6
