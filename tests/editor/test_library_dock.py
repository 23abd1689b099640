"""The Library dock, the flow/action/http inspector pages and the action quick fix (issue 16, editor side).

The library is the engine's default one over the test's data folder (FLOWDESK_DATA_DIR, set per
test by the ``isolated`` fixture) plus folders added through the dock's settings.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from engine import FlowLibrary, set_default_library


@pytest.fixture(autouse=True)
def fresh_library():
    set_default_library(None)  # the default library is made under this test's data folder
    yield
    set_default_library(None)


def lib_flow(folder: Path, stem: str, name: str, description: str = "", variables=(), triggers=(), fid=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "name": name,
        "description": description,
        "version": 1,
        "nodes": [
            {
                "id": "start",
                "type": "start",
                "x": 0,
                "y": 0,
                "data": {"initialInput": "", "variables": list(variables)},
            },
            {
                "id": "a",
                "type": "agent",
                "x": 300,
                "y": 0,
                "data": {"agentName": "Writer", "systemPrompt": "", "userPrompt": "{{topic}}"},
            },
        ],
        "connections": [{"source": "start", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }
    if fid:
        data["id"] = fid
    if triggers:
        data["triggers"] = list(triggers)
    path = folder / f"{stem}.flow.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def names(panel) -> list[str]:
    return [f.name for f in panel.visible_flows()]


def test_dock_lists_flows_of_the_library_and_an_added_folder_and_search_filters(window, tmp_path):
    extra = tmp_path / "team-flows"
    lib_flow(
        extra,
        "summarise",
        "Summarise a page",
        "Reads a page and summarises it",
        [{"name": "url", "type": "string", "required": True}],
        ["summarise $(url:wildcard)"],
        fid="flow-sum",
    )
    lib_flow(
        extra,
        "translate",
        "Translate text",
        "Into another language",
        [{"name": "text"}, {"name": "language"}],
        fid="flow-tr",
    )
    panel = window.library_panel
    seeded = names(panel)
    assert seeded  # the samples are seeded into the data folder's library once
    panel.add_folder(str(extra))  # the dock's Folders menu; kept in the settings
    assert str(extra) in json.loads((tmp_path / "config" / "settings.json").read_text())["library"]["folders"]
    assert {"Summarise a page", "Translate text"} <= set(names(panel))
    # each item shows the name, description, parameters (required marked) and the first trigger
    item = next(
        panel.list.item(i)
        for i in range(panel.list.count())
        if panel.list.item(i).data(Qt.ItemDataRole.UserRole + 1).id == "flow-sum"
    )
    assert item.text().splitlines() == [
        "Summarise a page",
        "Reads a page and summarises it",
        "⚙ url*   “summarise $(url:wildcard)”",
    ]
    panel.search.setText("language")  # a parameter name
    assert names(panel) == ["Translate text"]
    panel.search.setText("SUMMARISE page")  # every word, any case
    assert names(panel) == ["Summarise a page"]
    panel.search.setText("nothing like this")
    assert names(panel) == [] and panel.empty.isVisibleTo(panel) and "No flow matches" in panel.empty.text()
    panel.search.clear()
    assert len(names(panel)) == len(seeded) + 2
    assert panel.empty.isVisibleTo(panel) and panel.empty.text().startswith("Checked flows are on")  # the check boxes


def test_enable_and_disable_from_the_checkbox(window, tmp_path):
    lib_flow(tmp_path / "data" / "library", "mine", "Mine", fid="flow-mine")
    panel = window.library_panel
    panel.refresh()
    assert panel.select("flow-mine")
    item = panel.list.currentItem()
    assert item.checkState() == Qt.CheckState.Checked
    item.setCheckState(Qt.CheckState.Unchecked)  # as a click on the box does
    assert "flow-mine" in json.loads((tmp_path / "config" / "settings.json").read_text())["library"]["disabled"]
    assert panel.select("flow-mine") and panel.list.currentItem().text().startswith("Mine  (off)")
    assert FlowLibrary().get("flow-mine").enabled is False
    panel.set_enabled("flow-mine", True)
    assert FlowLibrary().get("flow-mine").enabled is True


def test_save_to_library_gives_a_stable_id_and_lists_it(window, tmp_path):
    window.files.new_document()
    window.document.set_info(name="Weekly digest", description="Collects the week")
    assert window.library.save_to_library()
    doc_path = Path(window.document.path)
    assert doc_path.parent == tmp_path / "data" / "library" and doc_path.name == "weekly-digest.flow.json"
    saved = json.loads(doc_path.read_text())
    flow_id = saved["id"]
    assert flow_id and not window.document.is_modified()
    assert window.library_panel.selected_flow().id == flow_id
    assert "Weekly digest" in names(window.library_panel)
    # saving again keeps the id and the file
    window.document.set_info(description="Collects the week, twice")
    assert window.library.save_to_library()
    assert json.loads(doc_path.read_text())["id"] == flow_id
    assert len([f for f in window.library.library.flows() if f.id == flow_id]) == 1


def test_open_from_the_dock_opens_the_flow_file(window, tmp_path):
    path = lib_flow(tmp_path / "data" / "library", "opener", "Opener", fid="flow-open")
    panel = window.library_panel
    panel.refresh()
    panel.select("flow-open")
    panel.open_selected()
    assert window.document.path == str(path.resolve())
    assert window.document.workflow.name == "Opener"


def test_flow_node_parameter_form_writes_inputs_and_double_click_opens_the_child(window, tmp_path, qtbot):
    child = lib_flow(
        tmp_path / "data" / "library",
        "child",
        "Child flow",
        "Writes about a topic",
        [
            {"name": "topic", "type": "string", "required": True, "description": "What about"},
            {"name": "count", "type": "number", "value": 3},
        ],
        fid="flow-child",
    )
    window.files.new_document()
    nid = window.document.add_node("flow", 300, 200)
    window.scene.select_nodes([nid])
    page = window.inspector.stack.currentWidget()
    assert page.objectName() == "flowPage"
    ix = page.flow.findData("flow-child")
    assert ix >= 0 and page.flow.itemText(ix) == "Child flow"
    page.flow.setCurrentIndex(ix)
    page.flow.activated.emit(ix)  # the user picks it
    assert window.document.node(nid).data.flow == "flow-child"
    page = window.inspector.stack.currentWidget()
    assert list(page.param_edits) == ["topic", "count"]
    assert page.description.text() == "Writes about a topic"
    assert "required" in page.param_edits["topic"].placeholderText()
    assert "default 3" in page.param_edits["count"].placeholderText()
    qtbot.keyClicks(page.param_edits["topic"], "{{PREVIOUS_OUTPUT}}")
    page.param_edits["count"].setFocus()
    qtbot.keyClicks(page.param_edits["count"], "5")
    assert window.document.node(nid).data.inputs == {"topic": "{{PREVIOUS_OUTPUT}}", "count": "5"}
    window.document.undo_stack.undo()  # one step per field typed
    assert window.document.node(nid).data.inputs == {"topic": "{{PREVIOUS_OUTPUT}}"}
    assert page.param_edits["count"].text() == ""
    # double-clicking the flow node opens the child flow (the document was changed: discard)
    window.scene.node_activated.emit(nid)
    assert window.document.path == str(child.resolve())
    assert window.document.workflow.name == "Child flow"


def test_action_page_and_quick_fix_creates_a_flow_for_an_unbound_action(window, tmp_path, qtbot):
    window.files.new_document()
    nid = window.document.add_node("action", 300, 200)
    data = window.document.node(nid).data.model_dump()
    data.update({"action": "send_invoice", "schema": "billing", "parameters": {"customer": "{{who}}", "amount": 12}})
    window.document.edit_node_data(nid, data)
    window.scene.select_nodes([nid])
    page = window.inspector.stack.currentWidget()
    assert page.objectName() == "actionPage"
    assert page.name.text() == "send_invoice"
    assert page.params.rows() == [{"key": "customer", "value": "{{who}}"}, {"key": "amount", "value": "12"}]
    assert "No library flow is named 'send_invoice' yet (from billing)" in page.bound.text()
    assert not page.open_button.isEnabled()
    window.validation.run_validation()
    problems = window.problems
    row = next(
        i
        for i in range(problems.list.count())
        if problems.list.item(i).data(Qt.ItemDataRole.UserRole + 1) is not None
        and problems.list.item(i).data(Qt.ItemDataRole.UserRole + 1).code == "action_unbound"
    )
    assert "quick fix: Create a flow for it" in problems.list.item(row).text()
    problems.list.setCurrentRow(row)
    assert problems.fix_button.isVisibleTo(problems)
    problems.fix_button.click()
    made = window.library.library.get("send_invoice")
    assert made is not None and [p.name for p in made.parameters] == ["customer", "amount"]
    assert window.library_panel.selected_flow().id == made.id
    codes = [i.code for i in window.validation.issues]
    assert "action_unbound" not in codes
    window.scene.select_nodes([nid])
    page = window.inspector.stack.currentWidget()
    assert page.bound.text().startswith("Runs the library flow 'send_invoice' (from billing)")
    assert page.open_button.isEnabled()


def test_an_action_added_from_the_palette_is_named_and_given_parameters(window, qtbot):
    window.files.new_document()
    nid = window.document.add_node("action", 300, 200)
    window.scene.select_nodes([nid])
    page = window.inspector.stack.currentWidget()
    assert page.objectName() == "actionPage" and page.name.text() == ""
    assert page.bound.text() == "Name the library flow this action runs."
    stack = window.document.undo_stack
    n0 = stack.count()
    qtbot.keyClicks(page.name, "notify")
    assert window.document.node(nid).data.action == "notify"
    assert stack.count() == n0 + 1  # typing merges into one step
    assert "No library flow is named 'notify' yet" in page.bound.text()
    page.params.add_row()  # a row with no name yet: shown, nothing written
    assert page.params.table.rowCount() == 1 and stack.count() == n0 + 1
    page.params.table.item(0, 0).setText("channel")
    page.params.table.item(0, 1).setText("{{team}}")
    assert window.document.node(nid).data.parameters == {"channel": "{{team}}"}
    stack.undo()
    assert window.document.node(nid).data.parameters == {"channel": ""}
    stack.redo()
    # an imported number stays a number while it parses
    data = window.document.node(nid).data.model_dump()
    data["parameters"] = {"channel": "{{team}}", "retries": 3}
    window.document.edit_node_data(nid, data)
    page.params.table.item(1, 1).setText("5")
    assert window.document.node(nid).data.parameters == {"channel": "{{team}}", "retries": 5}


def test_http_page_tables_are_one_undo_step_per_edit_and_keyring_move(window, monkeypatch):
    window.files.new_document()
    nid = window.document.add_node("http", 300, 200)
    window.scene.select_nodes([nid])
    page = window.inspector.stack.currentWidget()
    assert page.objectName() == "httpPage"
    stack = window.document.undo_stack
    n0 = stack.count()
    page.headers.add_row()
    assert stack.count() == n0 + 1
    page.headers.table.item(0, 0).setText("Authorization")
    page.headers.table.item(0, 1).setText("Bearer sk-abcdefghijklmnopqrstuvwxyz123456")
    assert stack.count() == n0 + 3
    headers = window.document.node(nid).data.headers
    assert [(h.key, h.value) for h in headers] == [("Authorization", "Bearer sk-abcdefghijklmnopqrstuvwxyz123456")]
    assert page.move_to_keyring.isVisibleTo(page) and "looks like a credential" in page.credential_hint.text()
    stored = {}  # the OS keyring is not touched in tests: the page's keyring writer records instead
    import editor.panels.web_pages as web_pages

    monkeypatch.setattr(web_pages, "store_api_key", lambda name, key: stored.__setitem__(name, key))
    assert page.move_header_to_keyring(0, "BILLING_TOKEN")
    assert stored == {"BILLING_TOKEN": "sk-abcdefghijklmnopqrstuvwxyz123456"}
    assert window.document.node(nid).data.headers[0].value == "Bearer {{secrets.BILLING_TOKEN}}"
    assert not page.move_to_keyring.isVisibleTo(page)
    stack.undo()
    assert window.document.node(nid).data.headers[0].value.startswith("Bearer sk-")
    # query rows, body type and body
    page.query.add_row()
    page.query.table.item(0, 0).setText("q")
    page.body_type.setCurrentIndex(page.body_type.findData("json"))
    assert window.document.node(nid).data.bodyType == "json"
    assert page.body_stack.currentWidget() is page.body_text
    page.body_text.setPlainText('{"a": ')
    assert "Not valid JSON" in page.body_error.text()
    page.body_type.setCurrentIndex(page.body_type.findData("form"))
    assert page.body_stack.currentWidget() is page.form_data
    page.query.table.setCurrentCell(0, 0)
    page.query.remove_current()
    assert window.document.node(nid).data.query == []


def test_agent_tools_offer_library_flows(window, tmp_path):
    folder = tmp_path / "data" / "library"
    lib_flow(folder, "tool", "Lookup", "Looks a word up", [{"name": "word", "required": True}], fid="flow-lookup")
    pausing = json.loads(lib_flow(folder, "signoff", "Sign-off", fid="flow-signoff").read_text())
    pausing["nodes"].append({"id": "ok", "type": "approval", "x": 600, "y": 0, "data": {"prompt": "Sure?"}})
    (folder / "signoff.flow.json").write_text(json.dumps(pausing))
    window.files.new_document()
    nid = window.document.add_node("agent", 300, 200)
    window.scene.select_nodes([nid])
    tools = window.inspector.page("agent").flows
    items = {tools.list.item(i).data(Qt.ItemDataRole.UserRole): tools.list.item(i) for i in range(tools.list.count())}
    assert {"flow-lookup", "flow-signoff"} <= set(items)
    assert not (items["flow-signoff"].flags() & Qt.ItemFlag.ItemIsEnabled)  # can pause: not a tool
    items["flow-lookup"].setCheckState(Qt.CheckState.Checked)
    assert window.document.node(nid).data.tools.flows == ["flow-lookup"]
    window.document.undo_stack.undo()
    assert not window.document.node(nid).data.tools.flows
    assert tools.list.item(list(items).index("flow-lookup")).checkState() == Qt.CheckState.Unchecked


def test_showing_the_library_from_the_view_menu_brings_it_in_front_of_the_palette(window, qtbot):
    from PySide6.QtWidgets import QApplication

    dock = window.library_dock
    assert dock.isHidden()
    dock.toggleViewAction().trigger()  # View ▸ Library
    QApplication.processEvents()
    assert window.palette_dock in window.tabifiedDockWidgets(dock)
    qtbot.waitUntil(lambda: not dock.visibleRegion().isEmpty())
    assert window.palette_dock.visibleRegion().isEmpty()  # the palette's tab is behind it now
    window.palette_dock.toggleViewAction().trigger()  # hidden, then shown again: in front once more
    window.palette_dock.toggleViewAction().trigger()
    QApplication.processEvents()
    qtbot.waitUntil(lambda: not window.palette_dock.visibleRegion().isEmpty())


def test_the_dock_lists_flows_by_use_with_their_usage(qtbot, tmp_path):
    from editor.panels.library import LibraryPanel
    from engine import FlowLibrary

    folder = tmp_path / "bylib"
    lib_flow(folder, "alpha", "Alpha", fid="flow-alpha")
    lib_flow(folder, "beta", "Beta", fid="flow-beta")
    library = FlowLibrary([folder], seed=False)
    library.record_run("flow-beta")
    library.record_run("flow-beta")
    panel = LibraryPanel(library=library)
    qtbot.addWidget(panel)
    panel.refresh()
    texts = [panel.list.item(i).text() for i in range(panel.list.count())]
    assert [t.splitlines()[0] for t in texts] == ["Beta", "Alpha"]
    assert "▶ 2 runs · last " in texts[0] and "▶" not in texts[1]
