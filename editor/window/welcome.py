"""The page shown when no workflow is open: new, open, samples and recent files."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from engine import WorkflowLoadError, load_workflow

from ..resources import icon_path, samples

if TYPE_CHECKING:
    from ..controllers.files import FilesController

SAMPLE_TEXT_WIDTH = 330  # px of a sample button's description line (two cards a row)


@lru_cache(maxsize=1)
def sample_list() -> tuple[tuple[Path, str, str], ...]:
    """The shipped samples as (path, name, description): one list for the welcome page and
    File ▸ Open Sample, so both call a sample by the same name (its workflow's name)."""
    out = []
    for path in samples():
        try:
            wf = load_workflow(path)
            name, desc = wf.display_name(), wf.description or ""
        except WorkflowLoadError:
            name, desc = path.name.removesuffix(".flow.json"), ""
        out.append((path, name, desc))
    return tuple(out)


def elide_words(text: str, metrics, width: int) -> str:
    """``text`` cut at a word boundary to fit ``width`` px, with "…" when cut."""
    text = " ".join(text.split())
    if metrics.horizontalAdvance(text) <= width:
        return text
    words = text.split(" ")
    while len(words) > 1 and metrics.horizontalAdvance(" ".join(words) + "…") > width:
        words.pop()
    cut = " ".join(words).rstrip(",;:.—-")
    if metrics.horizontalAdvance(cut + "…") > width:  # one long word
        return metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)
    return cut + "…"


class WelcomePage(QWidget):
    def __init__(self, files: FilesController) -> None:
        super().__init__()
        self.setObjectName("welcome")
        self.files = files
        # Scrolls when short, and asks for no minimum height: hidden behind the canvas, its
        # minimum (growing with the recent list) kept the run console from being made taller.
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        page = QVBoxLayout(self)
        page.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setObjectName("welcomeScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        page.addWidget(scroll)
        content = QWidget()
        content.setObjectName("welcomeContent")
        scroll.setWidget(content)
        outer = QVBoxLayout(content)
        outer.addStretch(1)
        box = QWidget()
        box.setObjectName("welcomeBox")
        box.setMaximumWidth(760)
        lay = QVBoxLayout(box)
        lay.setSpacing(10)
        title = QLabel("Flowdesk")
        title.setObjectName("welcomeTitle")
        sub = QLabel("Draw agentic LLM workflows as graphs, then run them locally.")
        sub.setObjectName("hint")
        lay.addWidget(title)
        lay.addWidget(sub)
        row = QHBoxLayout()
        new = QPushButton(QIcon(icon_path("new")), "New workflow")
        new.setObjectName("primary")
        new.clicked.connect(files.new_document)
        opn = QPushButton(QIcon(icon_path("open")), "Open…")
        opn.clicked.connect(files.open_dialog)
        row.addWidget(new)
        row.addWidget(opn)
        row.addStretch(1)
        lay.addLayout(row)
        lay.addSpacing(8)
        head = QLabel("Samples")
        head.setObjectName("sectionTitle")
        lay.addWidget(head)
        self.sample_buttons: dict[str, QPushButton] = {}
        # The samples two a row, closer together than the page's sections: all of them fit the
        # default window beside the bottom panels (in one column the sixth was cut off).
        cards = QGridLayout()
        cards.setSpacing(5)
        lay.addLayout(cards)
        for i, (path, title, desc) in enumerate(sample_list()):
            name = path.name.removesuffix(".flow.json")
            # name, then the description on a line of its own, cut at a word with "…"
            b = QPushButton(QIcon(icon_path("sample")), title)
            b.setObjectName("sampleButton")
            b.ensurePolished()  # the style sheet's font, to measure with
            short = elide_words(desc, b.fontMetrics(), SAMPLE_TEXT_WIDTH)
            if short:
                b.setText(f"{title}\n{short}")
            b.setToolTip(
                f"{title}: {desc}\n{path}\n(opens a copy; Save As to keep it)"
                if desc
                else f"{path}\n(opens a copy; Save As to keep it)"
            )
            b.clicked.connect(lambda _=False, p=str(path): files.open_sample(p))
            self.sample_buttons[name] = b
            cards.addWidget(b, i // 2, i % 2)
        self.recent_head = QLabel("Recent")
        self.recent_head.setObjectName("sectionTitle")
        lay.addSpacing(8)
        lay.addWidget(self.recent_head)
        self.recent_box = QVBoxLayout()
        lay.addLayout(self.recent_box)
        h = QHBoxLayout()
        h.addStretch(1)
        h.addWidget(box, 3)
        h.addStretch(1)
        outer.addLayout(h)
        outer.addStretch(2)

    def refresh(self) -> None:
        while self.recent_box.count():
            w = self.recent_box.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        recent = self.files.recent_files()
        self.recent_head.setVisible(bool(recent))
        for path in recent[:5]:
            b = QPushButton(QIcon(icon_path("open")), Path(path).name)
            b.setObjectName("sampleButton")
            b.setToolTip(path)
            b.clicked.connect(lambda _=False, p=path: self.files.open_path(p))
            self.recent_box.addWidget(b)
