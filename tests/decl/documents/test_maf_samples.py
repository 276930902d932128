"""Every declarative document from Microsoft Agent Framework's repository (copied
unchanged into tests/data/maf-samples with its origin and licence) validates as
`raf validate` checks it: an unset `=Env.` variable is a warning there, not an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf.core.errors import ValidationProblems
from raf.decl.documents.hosted import is_toolbox_file, load_toolbox_file
from raf.decl.documents.loader import load_file
from raf.decl.workflow import is_workflow_file, load_workflow_file

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "maf-samples"
FILES = sorted(SAMPLES.rglob("*.yaml"))


def _validate(path: Path) -> None:
    if is_workflow_file(path):
        load_workflow_file(path)
    elif is_toolbox_file(path):
        load_toolbox_file(path)
    else:
        load_file(path, unset_env_is_warning=True)


def test_the_samples_are_all_here() -> None:
    assert len(FILES) == 49
    assert (SAMPLES / "LICENSE").is_file() and (SAMPLES / "README.md").is_file()


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(SAMPLES)) for f in FILES])
def test_sample_validates(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    _validate(path)


def test_hosted_agent_says_what_raf_runs_and_what_it_does_not() -> None:
    path = SAMPLES / "python/samples/04-hosting/foundry-hosted-agents/responses/basic/agent.yaml"
    loaded = load_file(path, unset_env_is_warning=True)
    (note,) = [str(w) for w in loaded.warnings if "hosted agent" in str(w)]
    assert "the container (image, protocols, resources, environment variables)" in note
    assert "not raf's" in note
    assert loaded.decl.name == "agent-framework-agent-basic-responses"


def test_hosted_agent_with_model_and_instructions_runs_them() -> None:
    from raf.decl.documents.loader import load

    text = (
        "kind: hosted\nname: helper\nimage: example.io/helper:1\n"
        "protocols:\n  - protocol: responses\n    version: 2.0.0\n"
        "instructions: Be brief.\nmodel: openai:gpt-4o-mini\n"
    )
    loaded = load(text)
    assert loaded.decl.instructions == "Be brief."
    assert any("raf runs its model, instructions" in str(w) for w in loaded.warnings)


def test_hosted_container_part_is_checked_with_its_location() -> None:
    from raf.decl.documents.loader import load

    with pytest.raises(ValidationProblems) as caught:
        load("kind: hosted\nname: x\nprotocols:\n  - version: 1\n")
    (problem,) = caught.value.problems
    assert problem.line == 4 and "protocol" in str(problem)


def test_toolbox_lists_what_raf_can_call() -> None:
    path = (
        SAMPLES
        / "python/samples/04-hosting/foundry-hosted-agents/responses/foundry_toolbox/toolbox.yaml"
    )
    toolbox = load_toolbox_file(path)
    assert toolbox.callable_servers == {
        "noauth_mcp": "https://gitmcp.io/Azure/azure-rest-api-specs"
    }
    assert "web_search" in str(toolbox.warnings[0])


def test_unset_environment_variable_is_a_warning_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = SAMPLES / "declarative-agents/agent-samples/openai/OpenAIChat.yaml"
    loaded = load_file(path, unset_env_is_warning=True)
    assert any("OPENAI_API_KEY is not set" in str(w) for w in loaded.warnings)
    with pytest.raises(ValidationProblems) as caught:
        load_file(path)  # building needs it: an error naming the variable and its line
    (problem,) = [p for p in caught.value.problems if "OPENAI_API_KEY" in str(p)]
    assert problem.line == 14


def test_mapping_form_output_schema_names_no_pydantic_internals() -> None:
    from raf.decl.documents.loader import load

    bad = (
        "kind: Prompt\nname: a\ninstructions: x\n"
        "outputSchema:\n  properties:\n    n:\n      type: nope\n"
    )
    with pytest.raises(ValidationProblems) as caught:
        load(bad)
    shown = " ".join(str(p) for p in caught.value.problems)
    assert "unknown property kind 'nope'" in shown
    assert "function-after" not in shown and "list[" not in shown
