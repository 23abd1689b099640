"""Problems list: every validation issue; clicking one selects its node(s).

Problems name nodes as the user sees them, by title (an agent's name, a node's label),
never by ids the canvas does not show: :func:`describe_issue` rewrites the validator's
message (which may quote ids) with :func:`node_labels`, which numbers duplicate titles
("Writer (1)", "Writer (2)", left to right on the canvas)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from engine import Issue, Workflow

from ..resources import icon_path


def node_title(node) -> str:
    """What the canvas calls a node: its label if it has one, else its title (agent name)."""
    label = getattr(node.data, "label", None)
    return label.strip() if isinstance(label, str) and label.strip() else node.title


def node_labels(workflow: Workflow | None) -> dict[str, str]:
    """Node id -> the name to show the user: the node's title, numbered where titles repeat
    ("Writer (1)", "Writer (2)", in canvas order: left to right, then top to bottom)."""
    if workflow is None:
        return {}
    by_title: dict[str, list] = {}
    for node in workflow.nodes:
        by_title.setdefault(node_title(node), []).append(node)
    out: dict[str, str] = {}
    for title, nodes in by_title.items():
        if len(nodes) == 1:
            out[nodes[0].id] = title
            continue
        for i, node in enumerate(sorted(nodes, key=lambda n: (n.x, n.y)), 1):
            out[node.id] = f"{title} ({i})"
    return out


def describe_issue(issue: Issue, workflow: Workflow | None, labels: dict[str, str] | None = None) -> str:
    """The issue's message naming its nodes by their (disambiguated) titles, not their ids."""
    message = issue.message
    if workflow is None:
        return message
    labels = node_labels(workflow) if labels is None else labels
    mentioned = ambiguous = False
    for nid in dict.fromkeys(issue.node_ids):
        name = labels.get(nid)
        node = workflow.node(nid)
        if name is None or node is None:
            continue
        title = node_title(node)
        for quoted in (f"Agent '{nid}'", f"'{nid}'", f"'{node.title}'", f"'{title}'"):
            if quoted in message:
                message = message.replace(quoted, f"“{name}”", 1)
                mentioned = True
                break
        else:
            if name in message:
                mentioned = True
            elif name != title:  # a repeated title quoted bare ("Writer → Writer"): say which
                ambiguous = True
    if (ambiguous or not mentioned) and issue.node_ids:
        names = [labels[n] for n in dict.fromkeys(issue.node_ids) if n in labels]
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            body = message.rstrip()
            end = "." if body.endswith(".") else ""
            message = f"{body.removesuffix('.')} ({shown}){end}"
    return message


class ProblemsPanel(QWidget):
    nodes_requested = Signal(list)  # node ids to select and show

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget(self)
        self.list.setObjectName("problems")
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        layout.addWidget(self.list)
        self._error_icon = QIcon(icon_path("error"))
        self._warning_icon = QIcon(icon_path("warning"))
        self._ok_icon = QIcon(icon_path("ok"))

    def set_issues(self, issues: list[Issue], workflow: Workflow | None = None) -> None:
        """Show ``issues``; with ``workflow``, nodes are named by their titles."""
        self.list.clear()
        if not issues:  # (no node labels needed: they cost a walk over every node of a big file)
            item = QListWidgetItem(self._ok_icon, "No problems: the workflow is ready to run.")
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.list.addItem(item)
            return
        labels = node_labels(workflow)
        for issue in issues:
            text = describe_issue(issue, workflow, labels)
            item = QListWidgetItem(self._error_icon if issue.is_error else self._warning_icon, text)
            item.setData(Qt.ItemDataRole.UserRole, list(issue.node_ids))
            item.setToolTip(f"{text}\n(click to select the node{'s' * (len(issue.node_ids) != 1)})"
                            if issue.node_ids else text)
            self.list.addItem(item)

    def _clicked(self, item: QListWidgetItem) -> None:
        ids = item.data(Qt.ItemDataRole.UserRole)
        if ids:
            self.nodes_requested.emit(list(ids))
