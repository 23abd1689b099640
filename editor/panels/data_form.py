"""A form generated from a node kind's data model (pydantic), for kinds without a hand-made page.

One row per field the kind declares (the common display fields of every node are left out),
labelled with the field's ``title`` and explained by its ``description``:

* ``bool`` -> check box; ``Literal[...]`` or an ``Enum`` -> combo box;
* ``int`` / ``float`` -> spin box (bounds from ``ge``/``le``/``gt``/``lt``);
* ``str`` -> line edit, or a multi-line prompt editor when the field says
  ``json_schema_extra={"multiline": True}``, or a line edit with a "Browse…" file picker when it
  says ``json_schema_extra={"filePicker": True}`` (the file kind's ``path``);
* anything else (lists, objects) -> a line of JSON, applied when it parses and validates.

The form never writes to the model: it emits ``edited(field, value, merge)`` and the
inspector turns that into a document request (one undo step; typing merges).
"""

from __future__ import annotations

import enum
import json
import re
import types
import typing
from typing import Any, Literal

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QWidget,
)

from engine import NodeData

from .prompt_edit import PromptEdit
from .prompt_edit import title_label as _title

_NONE = type(None)


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not _NONE]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _bounds(field: Any, is_int: bool) -> tuple[float, float]:
    low, high = (-(2**31) + 1, 2**31 - 1) if is_int else (-1e12, 1e12)
    step = 1 if is_int else 0.0
    for m in field.metadata:
        if getattr(m, "ge", None) is not None:
            low = m.ge
        if getattr(m, "gt", None) is not None:
            low = m.gt + step
        if getattr(m, "le", None) is not None:
            high = m.le
        if getattr(m, "lt", None) is not None:
            high = m.lt - step
    return low, high


def _humanise(name: str) -> str:
    """A field name as a label: ``maxIterations`` -> "Max iterations", ``until`` -> "Until"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name.replace("_", " ")).split()
    if not words:
        return name
    text = " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)
    return text[0].upper() + text[1:]


def _multiline(field: Any) -> bool:
    extra = field.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("multiline"))


def _file_picker(field: Any) -> bool:
    extra = field.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("filePicker"))


class FilePathEdit(QWidget):
    """A path typed, or chosen with "Browse…" (a template such as ``{{folder}}/a.csv`` may be typed)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.line_edit = QLineEdit()
        self.browse = QToolButton()
        self.browse.setText("Browse…")
        self.browse.setObjectName("browseFile")
        self.browse.setToolTip("Choose the file (it must be inside the workflow's permitted folders)")
        row.addWidget(self.line_edit, 1)
        row.addWidget(self.browse)

    def choose(self) -> str:
        path, _filter = QFileDialog.getOpenFileName(self, "Choose a file", self.line_edit.text())
        return path


class DataForm(QWidget):
    """Edits one node kind's data fields; built once per kind, loaded with a node's data."""

    edited = Signal(str, object, bool)  # field, new value, merge with the previous edit of it

    def __init__(
        self,
        model: type[NodeData],
        title: str,
        watch: Any = None,
        parent: QWidget | None = None,
        exclude: tuple[str, ...] = (),
        description: str = "",
    ) -> None:
        super().__init__(parent)
        self.model = model
        self._loading = False
        self.widgets: dict[str, QWidget] = {}
        self._setters: dict[str, Any] = {}
        self._data: dict[str, Any] = {}
        form = QFormLayout(self)
        form.setContentsMargins(12, 8, 12, 12)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow(_title(title))
        if description:  # what the kind does, from its spec
            about = QLabel(description)
            about.setWordWrap(True)
            about.setObjectName("hint")
            form.addRow(about)
        watch = watch or (lambda w: w)
        common = set(NodeData.model_fields) | set(exclude)  # excluded: fields another section edits
        for name, field in model.model_fields.items():
            if name in common:
                continue
            label = field.title or _humanise(name)
            annotation, _optional = _unwrap_optional(field.annotation)
            widget = self._make(name, field, annotation, label, PromptEdit)
            watch(widget)
            widget.setObjectName(f"field-{name}")
            if field.description:
                widget.setToolTip(field.description)
            if isinstance(widget, QCheckBox):
                form.addRow(widget)
            else:
                form.addRow(label, widget)
            if field.description:
                hint = QLabel(field.description)
                hint.setWordWrap(True)
                hint.setObjectName("hint")
                form.addRow(hint)
            self.widgets[name] = widget
        if not self.widgets:
            form.addRow(QLabel("This kind of node has no settings."))

    # ------------------------------------------------------------------ building
    def _make(self, name: str, field: Any, annotation: Any, label: str, prompt_edit: type) -> QWidget:
        origin = typing.get_origin(annotation)
        if annotation is bool:
            w = QCheckBox(label)
            w.toggled.connect(lambda on: self._emit(name, on, False))
            self._setters[name] = lambda v, w=w: w.setChecked(bool(v))
            return w
        choices: list[Any] | None = None
        if origin is Literal:
            choices = list(typing.get_args(annotation))
        elif isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            choices = [m.value for m in annotation]
        if choices is not None:
            w = QComboBox()
            for c in choices:
                w.addItem(str(c), c)
            w.currentIndexChanged.connect(lambda i, w=w: self._emit(name, w.itemData(i), False))
            self._setters[name] = lambda v, w=w: w.setCurrentIndex(max(0, w.findData(v)))
            return w
        if annotation is int or annotation is float:
            is_int = annotation is int
            w = QSpinBox() if is_int else QDoubleSpinBox()
            low, high = _bounds(field, is_int)
            w.setRange(int(low) if is_int else float(low), int(high) if is_int else float(high))
            if not is_int:
                w.setDecimals(3)
            w.valueChanged.connect(lambda v: self._emit(name, v, True))
            self._setters[name] = lambda v, w=w, is_int=is_int: w.setValue(int(v or 0) if is_int else float(v or 0))
            return w
        if annotation is str:
            if _file_picker(field):
                picker = FilePathEdit()
                picker.line_edit.textEdited.connect(lambda t: self._emit(name, t, True))

                def browse(picker: FilePathEdit = picker) -> None:
                    chosen = picker.choose()
                    if chosen:
                        picker.line_edit.setText(chosen)
                        self._emit(name, chosen, False)

                picker.browse.clicked.connect(lambda _checked=False, p=picker: browse(p))
                self._setters[name] = lambda v, w=picker.line_edit: (
                    w.setText("" if v is None else str(v)) if w.text() != (v or "") else None
                )
                return picker
            if _multiline(field):
                w = prompt_edit(field.description or "")
                w.textChanged.connect(lambda w=w: self._emit(name, w.toPlainText(), True))
                self._setters[name] = lambda v, w=w: w.set_text_keep_cursor("" if v is None else str(v))
                return w
            w = QLineEdit()
            w.textEdited.connect(lambda t: self._emit(name, t, True))
            self._setters[name] = lambda v, w=w: (
                w.setText("" if v is None else str(v)) if w.text() != (v or "") else None
            )
            return w
        # Anything else: its JSON text.
        w = QLineEdit()
        w.setPlaceholderText("JSON")
        w.textEdited.connect(lambda t, w=w: self._json_edited(name, w, t))
        self._setters[name] = lambda v, w=w: w.setText(json.dumps(v, ensure_ascii=False)) if not w.hasFocus() else None
        return w

    def _json_edited(self, name: str, widget: QLineEdit, text: str) -> None:
        try:
            value = json.loads(text)
        except ValueError:
            widget.setProperty("invalid", True)
            widget.setToolTip("Not valid JSON yet")
            return
        widget.setProperty("invalid", False)
        self._emit(name, value, True)

    # ------------------------------------------------------------------ values
    def _emit(self, name: str, value: Any, merge: bool) -> None:
        if self._loading:
            return
        candidate = {**self._data, name: value}
        try:  # only values the kind's model accepts reach the document
            self.model.model_validate(candidate)
        except Exception:
            widget = self.widgets.get(name)
            if widget is not None:
                widget.setProperty("invalid", True)
            return
        self._data = candidate
        self.edited.emit(name, value, merge)

    def load(self, data: NodeData) -> None:
        self._loading = True
        try:
            self._data = data.model_dump(mode="json")
            for name, setter in self._setters.items():
                setter(self._data.get(name))
        finally:
            self._loading = False


__all__ = ["DataForm"]
