"""The workflow's ``permissions``: parsed with the file, asked by every kind that reaches out."""

from __future__ import annotations

import pytest

from engine.graph.model import Workflow
from engine.graph.permissions import PermissionDenied, access_for


def _wf(perms=None):
    doc = {"nodes": [{"id": "s", "type": "start"}], "connections": []}
    if perms is not None:
        doc["permissions"] = perms
    return Workflow.model_validate(doc)


def test_no_permissions_leaves_open_kinds_open_and_closes_sandboxes():
    wf = _wf()
    assert access_for(wf, open_by_default=True).allows_network("https://anything.example/x")
    closed = access_for(wf, open_by_default=False)
    assert not closed.allows_network("https://anything.example/x")
    assert not closed.allows_file("/etc/passwd")
    assert closed.network_hosts() == []


def test_hosts_ports_and_wildcards():
    access = access_for(_wf({"network": ["api.example.com", "127.0.0.1:8080", "*.docs.org"]}), open_by_default=True)
    assert access.allows_network("https://api.example.com/v1")
    assert access.allows_network("http://127.0.0.1:8080/x")
    assert not access.allows_network("http://127.0.0.1:9090/x")
    assert access.allows_network("https://en.docs.org/")
    assert not access.allows_network("https://evil.com/")
    with pytest.raises(PermissionDenied, match=r"permission_denied: network access to 'evil.com'.*permissions.network"):
        access.check_network("https://evil.com/")
    assert access_for(_wf({"network": ["*"]}), open_by_default=False).network_hosts() is None


def test_files_flows_and_tools(tmp_path):
    (tmp_path / "data").mkdir()
    access = access_for(
        _wf({"files": ["data"], "flows": ["summarise"], "tools": ["fs/read", "web/*"]}),
        open_by_default=False,
        base=tmp_path,
    )
    assert access.allows_file(tmp_path / "data" / "a.txt")
    assert not access.allows_file(tmp_path / "data" / ".." / "secret.txt")
    assert access.allows_flow("summarise") and not access.allows_flow("other")
    assert access.allows_tool("fs", "read") and not access.allows_tool("fs", "write")
    assert access.allows_tool("web", "search")
    with pytest.raises(PermissionDenied, match="the tool fs/write"):
        access.check_tool("fs", "write")


def test_permissions_round_trip_and_bad_values_are_named():
    wf = _wf({"network": ["example.com"]})
    assert wf.model_dump(mode="json")["permissions"] == {"network": ["example.com"]}
    assert "permissions" not in _wf().model_dump(mode="json")
    with pytest.raises(ValueError, match="permissions.network"):
        _wf({"network": 5})
