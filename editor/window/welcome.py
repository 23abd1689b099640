"""The page shown when no workflow is open: new, open, samples and recent files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from engine import WorkflowLoadError, load_workflow

from ..resources import icon_path, samples

if TYPE_CHECKING:
    from ..main_window import MainWindow


class WelcomePage(QWidget):
    def __init__(self, window: MainWindow) -> None:
        super().__init__()
        self.setObjectName("welcome")
        self.window_ = window
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
        box.setMaximumWidth(560)
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
        new.clicked.connect(window.new_document)
        opn = QPushButton(QIcon(icon_path("open")), "Open…")
        opn.clicked.connect(window.open_dialog)
        row.addWidget(new)
        row.addWidget(opn)
        row.addStretch(1)
        lay.addLayout(row)
        lay.addSpacing(8)
        head = QLabel("Samples")
        head.setObjectName("sectionTitle")
        lay.addWidget(head)
        self.sample_buttons: dict[str, QPushButton] = {}
        for path in samples():
            name = path.name.removesuffix(".flow.json")
            try:
                wf = load_workflow(path)
                desc = wf.description or ""
                desc = desc if len(desc) <= 64 else desc[:63].rstrip() + "…"
                label = f"{wf.display_name()}  —  {desc}"
            except WorkflowLoadError:
                label = name
            b = QPushButton(QIcon(icon_path("sample")), label)
            b.setObjectName("sampleButton")
            b.setToolTip(f"{path}\n(opens a copy; Save As to keep it)")
            b.clicked.connect(lambda _=False, p=str(path): window.open_sample(p))
            self.sample_buttons[name] = b
            lay.addWidget(b)
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
        recent = self.window_.recent_files()
        self.recent_head.setVisible(bool(recent))
        for path in recent[:5]:
            b = QPushButton(QIcon(icon_path("open")), Path(path).name)
            b.setObjectName("sampleButton")
            b.setToolTip(path)
            b.clicked.connect(lambda _=False, p=path: self.window_.open_path(p))
            self.recent_box.addWidget(b)
