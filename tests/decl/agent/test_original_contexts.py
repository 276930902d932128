"""The original framework's contexts and template formats run in raf: its `skill-memory`
is raf's super-brain in the original's folder, `config.source` loads a knowledge base and
a wiki, a source-less one is skipped, and a jinja2 template reaches the model as written."""

from __future__ import annotations

import shutil
from pathlib import Path

from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient

ORIGINAL = Path(__file__).parents[1] / "original"


async def test_the_originals_contexts_build_and_run(tmp_path: Path) -> None:
    for name in ("knowledge", "wiki", "skills"):
        shutil.copytree(ORIGINAL / name, tmp_path / name)
    text = (ORIGINAL / "contexts.yaml").read_text(encoding="utf-8")
    # its MCP server is not there to connect to: the run goes without it
    (tmp_path / "contexts.yaml").write_text(text.split("  - kind: mcp")[0], encoding="utf-8")
    client = ScriptedChatClient(["done"])
    builder = DeclAgentBuilder().from_file(tmp_path / "contexts.yaml")
    agent = builder.with_chat_client(client).build()
    kinds = [(p.kind, p.name) for p in agent.context_providers]
    assert ("memory", "super-brain") in kinds
    assert sum(kind == "knowledge" for kind, _ in kinds) == 1  # the source-less one skipped
    assert sum(kind == "wiki" for kind, _ in kinds) == 1  # the wiki without config skipped
    response = await agent.run("When does the release ship?")
    assert response.text == "done"
    assert (tmp_path / "logs" / "memory").is_dir()  # the original's folder for skill-memory
    assert not (tmp_path / "logs" / "super-brain").exists()
    sent = " ".join(str(m) for m in client.requests[0].messages)
    assert "Fridays" in sent  # the knowledge base from config.source


async def test_a_jinja2_template_reaches_the_model_as_written() -> None:
    client = ScriptedChatClient(["ok"])
    text = (ORIGINAL / "template_formats.yaml").read_text(encoding="utf-8")
    text = text.split("subAgents:")[0]
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(client).build()
    await agent.run("hello")
    sent = " ".join(str(m) for m in client.requests[0].messages)
    assert "Answer about {{ topic | upper }}." in sent
