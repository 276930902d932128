"""A declaration without a name expands to every tool of its kind, and
workspace routing applies to the expanded tools."""

from __future__ import annotations

from raf.decl.documents.schema import FILE_TOOLS
from tests.decl.helpers import builder_for, names

from .test_linkage import WORKSPACE, workspace_of


def test_rule6_kind_file_expands_to_the_eleven_scope_tools_all_routed(tmp_path):
    text = WORKSPACE + "tools:\n  - kind: file\n"
    agent = builder_for(text, tmp_path).build()
    assert names(agent.tools) == []
    workspace = workspace_of(agent)
    assert sorted(names(workspace.tools)) == sorted(FILE_TOOLS)
    # under approve every routed tool was wrapped for per-call approval
    assert all(t.requires_approval for t in workspace.tools)


def test_rule6_kind_web_expands_to_search_and_fetch(tmp_path):
    agent = builder_for("name: a\ntools:\n  - kind: web\n", tmp_path).build()
    assert sorted(names(agent.tools)) == ["web_fetch", "web_search"]


def test_rule6_a_named_declaration_gives_one_tool(tmp_path):
    agent = builder_for("name: a\ntools:\n  - {kind: web, name: web_fetch}\n", tmp_path).build()
    assert names(agent.tools) == ["web_fetch"]
