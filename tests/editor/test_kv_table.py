"""The key/value tables of the inspector (an HTTP node's query and headers, ...): as tall as
their rows, one empty row's room when there are none, six rows at most (then they scroll)."""

from __future__ import annotations

from editor.panels.kv_table import KeyValueTable


def test_tables_are_as_tall_as_their_rows(app):
    empty, one, many = KeyValueTable(), KeyValueTable(), KeyValueTable()
    one.set_rows([{"key": "Accept", "value": "application/json"}])
    many.set_rows([{"key": f"k{i}", "value": "v"} for i in range(20)])
    # a table never given rows is the height of one given a single row (it was Qt's default, far taller)
    assert empty.table.height() == one.table.height()
    six = KeyValueTable()
    six.set_rows([{"key": f"k{i}", "value": "v"} for i in range(6)])
    assert one.table.height() < six.table.height() == many.table.height()
    one.set_rows([])  # emptied again: one row's room
    assert one.table.height() == empty.table.height()
