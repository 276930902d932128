"""`holds_document`: the one reader behind `is_workflow_file` and `is_toolbox_file`."""

from __future__ import annotations

from pathlib import Path

from raf.decl.documents.document_file import holds_document
from raf.decl.documents.document_kind import is_workflow_data
from raf.decl.documents.hosted import is_toolbox_data, is_toolbox_file
from raf.decl.workflow import is_workflow_file


def test_only_a_readable_well_formed_document_of_the_kind_is_held(tmp_path: Path) -> None:
    workflow = tmp_path / "flow.yaml"
    workflow.write_text("kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  actions: []\n")
    agent = tmp_path / "agent.yaml"
    agent.write_text("name: helper\ninstructions: Help.\n")
    malformed = tmp_path / "bad.yaml"
    malformed.write_text("kind: Workflow\n  actions: [\n")
    binary = tmp_path / "latin1.yaml"
    binary.write_bytes(b"kind: Workflow\nname: caf\xe9\n")

    assert holds_document(workflow, is_workflow_data)
    assert is_workflow_file(workflow)
    assert not holds_document(agent, is_workflow_data)
    assert not holds_document(malformed, is_workflow_data)
    assert not holds_document(binary, is_workflow_data)
    assert not holds_document(tmp_path, is_workflow_data)  # a folder is no document
    assert not holds_document(tmp_path / "missing.yaml", is_workflow_data)
    assert not is_toolbox_file(workflow)
    assert not holds_document(workflow, is_toolbox_data)
