"""Pinned facts declared in a document: kept word for word by the compression it declares
(a 300-turn conversation at budgets of 2 000 and 300 tokens), and refused where they
cannot apply."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.context.compression import CompressionProvider
from raf.context.compression.provider import PINNED_HEADER
from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from tests.context.compression.compression_helpers import (
    FACT,
    TOOL_FACT,
    conversation_model,
    converse,
    lookup,
    seen_text,
    summariser,
)

DOCUMENT = """\
name: keeper
instructions: You answer briefly.
tools:
  - {{kind: function, name: lookup}}
compression:
  kind: summarization
  budget: {budget}
  keepLast: 6
  tokenCounter: estimate
  model: {{connection: {{kind: reference, name: summariser}}}}
  pinned:
    - "Always answer in metric units."
    - "The customer's name is Grace Hopper."
"""


@pytest.mark.parametrize("budget", [2_000, 300])
async def test_a_documents_pinned_facts_and_a_users_pins_last_300_turns(
    tmp_path: Path, budget: int
) -> None:
    model = conversation_model()
    path = tmp_path / "agent.yaml"
    path.write_text(DOCUMENT.format(budget=budget), encoding="utf-8")
    agent = (
        DeclAgentBuilder()
        .from_yaml_file(path)
        .register_factory("lookup", lambda context: lookup)
        .with_connection("summariser", client=summariser())
        .with_chat_client(model)
        .build()
    )
    (compression,) = [p for p in agent.context_providers if p.kind == "compression"]
    assert isinstance(compression, CompressionProvider) and compression.budget == budget
    await converse(agent, 300)
    last = model.requests[-1].messages
    seen = seen_text(last)
    facts = (
        f"{PINNED_HEADER}\n- Always answer in metric units.\n- The customer's name is Grace Hopper."
    )
    assert facts in seen and FACT in seen and TOOL_FACT in seen
    assert "question 150:" not in seen  # the middle of the conversation was compressed


def problems_of(text: str, tmp_path: Path) -> str:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationProblems) as caught:
        DeclAgentBuilder().from_yaml_file(path).build()
    return str(caught.value)


def test_pinned_facts_belong_to_the_compression_not_a_pipeline_step(tmp_path: Path) -> None:
    text = (
        "name: a\ncompression:\n  kind: pipeline\n  strategies:\n"
        "    - {kind: token_budget, pinned: [a fact]}\n"
    )
    assert "not to a step of its pipeline" in problems_of(text, tmp_path)


def test_a_blank_pinned_fact_is_refused(tmp_path: Path) -> None:
    text = "name: a\ncompression:\n  kind: token_budget\n  pinned: ['  ']\n"
    assert "pinned" in problems_of(text, tmp_path)
