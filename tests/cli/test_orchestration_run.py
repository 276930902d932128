"""`raf run` takes an orchestration document; a member's approval is answered like any."""

from __future__ import annotations

from pathlib import Path

from .helpers import raf, script, write_agent

TEAM = """
name: team
subAgents:
  - name: scout
    instructions: You look around.
  - name: filer
    instructions: You read files.
    contexts:
      - kind: workspace
        name: project
        config: {root: ., policy: approve}
    tools:
      - kind: file
        name: read_file
metadata:
  orchestration: sequential
"""


def test_run_an_orchestration_and_approve_a_members_call(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-team.txt"
    outside.write_text("outside text", encoding="utf-8")
    write_agent(tmp_path, TEAM)
    model = script(
        tmp_path,
        [
            "Read the file next door.",
            {"calls": [{"name": "read_file", "arguments": {"path": str(outside)}, "id": "c1"}]},
            "It says: outside text",
        ],
    )
    done = raf(tmp_path, "run", "agent.yaml", "go", "--approve", "all", "--model", model)
    assert done.returncode == 0, done.stderr
    # each member's answer on its own line
    assert done.stdout == "Read the file next door.\nIt says: outside text\n"
    refused = raf(tmp_path, "validate", "agent.yaml")
    assert refused.returncode == 0, refused.stdout
    write_agent(tmp_path, TEAM.replace("orchestration: sequential", "orchestration: sequental"))
    refused = raf(tmp_path, "validate", "agent.yaml")
    assert refused.returncode == 1
    assert "metadata.orchestration: unknown orchestration mode 'sequental'; did you mean" in (
        refused.stdout + refused.stderr
    )
