"""MAF's `requireSpecific` approval mode of an MCP tool: the tools it lists as always and
never needing approval, and every other tool of the server needing it."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.decl.convert import read_as_raf, to_maf
from raf.decl.documents.loader import load
from raf.decl.documents.tool_decls import McpToolDecl
from raf.tools.mcp import McpServerConfig

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "maf-tools" / "mcp_require_specific.yaml"


def _config(text: str) -> McpServerConfig:
    tool = load(text, check_extras=False).decl.tools[0]
    assert isinstance(tool, McpToolDecl)
    return McpServerConfig(**tool.config.to_config("wiki"))


@pytest.mark.parametrize("spelling", ["requireSpecific", "requirespecific", "RequireSpecific"])
def test_listed_tools_follow_their_list_and_others_need_approval(spelling):
    text = FIXTURE.read_text().replace("requireSpecific", spelling)
    config = _config(text)
    assert config.needs_approval("delete_page")
    assert not config.needs_approval("search_pages")
    assert not config.needs_approval("read_page")
    assert config.needs_approval("rename_page")  # in neither list


def test_the_mapping_form_and_tool_names_spelling():
    text = FIXTURE.read_text().replace(
        "    approvalMode: requireSpecific\n"
        "    alwaysRequireApprovalTools: [delete_page]\n"
        "    neverRequireApprovalTools: [search_pages, read_page]\n",
        "    approvalMode:\n      kind: RequireSpecific\n"
        "      alwaysRequireApprovalToolNames: [delete_page]\n"
        "      neverRequireApprovalToolNames: [search_pages]\n",
    )
    config = _config(text)
    assert config.needs_approval("delete_page") and not config.needs_approval("search_pages")
    assert config.needs_approval("read_page")


def test_an_unknown_key_of_the_mode_is_refused_at_its_place():
    from raf.core.errors import ValidationProblems

    text = FIXTURE.read_text().replace(
        "    approvalMode: requireSpecific\n",
        "    approvalMode: {kind: requireSpecific, sometimesRequireApprovalTools: [x]}\n",
    )
    with pytest.raises(ValidationProblems) as caught:
        load(text, check_extras=False)
    assert any(p.line == 13 for p in caught.value.problems)


def test_convert_writes_require_specific_both_ways():
    raf, _ = read_as_raf(FIXTURE)
    mode = raf["tools"][0]["config"]["approvalMode"]
    assert mode == {
        "*": "always",
        "delete_page": "always",
        "search_pages": "never",
        "read_page": "never",
    }
    maf = to_maf(raf)
    assert maf["tools"][0]["requireApproval"] == {
        "kind": "requireSpecific",
        "alwaysRequireApprovalTools": ["delete_page"],
        "neverRequireApprovalTools": ["search_pages", "read_page"],
    }


def test_the_maf_form_reads_back_the_same(tmp_path):
    from raf.decl.convert import dump

    raf, _ = read_as_raf(FIXTURE)
    path = tmp_path / "maf.yaml"
    path.write_text(dump(to_maf(raf), "yaml"), encoding="utf-8")
    again, _ = read_as_raf(path)
    assert again["tools"][0]["config"]["approvalMode"] == raf["tools"][0]["config"]["approvalMode"]


@pytest.mark.slow
async def test_a_real_server_tool_in_neither_list_waits_for_approval():
    import sys

    from raf import FinishReason
    from raf.decl import DeclAgentBuilder
    from raf.testing import ScriptedChatClient, call, reply

    server = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "mcp_py_server.py"
    text = (
        FIXTURE.read_text()
        .replace(
            "    url: http://127.0.0.1:9/mcp\n",
            f"    command: {sys.executable}\n    args: ['{server}', stdio]\n",
        )
        .replace("[delete_page]", "[fail]")
        .replace("[search_pages, read_page]", "[add]")
    )
    model = ScriptedChatClient(
        [reply("", call("add", a=2, b=3, call_id="c1")), reply("", call("pid", call_id="c2"))]
    )
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(model).build()
    try:
        response = await agent.run("add, then tell me your pid")
    finally:
        for provider in agent.context_providers:
            if hasattr(provider, "aclose"):
                await provider.aclose()
    # add (never needs approval) ran at once; pid, in neither list, waits for a person
    (added,) = [r for m in response.messages for r in m.function_results]
    assert added.error is None and "5" in str(added.result)
    assert response.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [a.name for a in response.pending_approvals] == ["pid"]
