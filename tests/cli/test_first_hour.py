"""What a newcomer trips over in the first hour gets a message that says what happened."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .helpers import APPROVING_AGENT, raf, script, write_agent

SIMPLE = "name: helper\ninstructions: You help.\n"


def test_an_unknown_session_id_says_so(tmp_path: Path) -> None:
    write_agent(tmp_path, SIMPLE)
    done = raf(
        tmp_path,
        "run",
        "agent.yaml",
        "hi",
        "--session",
        "nope",
        "--model",
        script(tmp_path, ["hi!"]),
    )
    assert done.returncode == 0, done.stderr
    assert "no stored session 'nope'; starting a new one" in done.stderr
    again = raf(
        tmp_path, "run", "agent.yaml", "hi", "--session", "nope", "--model", script(tmp_path, ["x"])
    )
    assert "no stored session" not in again.stderr  # stored by the first run


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        ({"answers": ["x"]}, "unknown keys: answers"),
        ([42], "reply 1 is int"),
        (["ok", {"txt": "x"}], "reply 2: unknown keys txt"),
        ([{"calls": [{"arguments": {}}]}], "reply 1: call 1 must be"),
        ([{"text": "x", "delay": "soon"}], "'delay' is a number of seconds"),
    ],
)
def test_a_scripted_model_file_in_the_wrong_format_says_so(
    tmp_path: Path, replies: object, says: str
) -> None:
    write_agent(tmp_path, SIMPLE)
    path = tmp_path / "script.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", f"scripted:{path}")
    assert done.returncode == 1
    assert says in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["run", "agent.yaml", "hi", "--bogus"], "usage: raf run "),
        (["mcp", "serve", "--nope"], "usage: raf mcp serve "),
        (["--nope"], "usage: raf [-h]"),
    ],
)
def test_an_unknown_option_shows_the_usage_of_its_subcommand(
    capsys: pytest.CaptureFixture[str], args: list[str], usage: str
) -> None:
    from raf.cli.main import build_parser, parse

    with pytest.raises(SystemExit) as info:
        parse(build_parser(), args)
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith(usage)


def test_an_unknown_option_names_the_subcommand_it_was_given_to(tmp_path: Path) -> None:
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--bogus")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: raf run ")
    assert "raf run: error: unrecognized arguments: --bogus" in done.stderr
    nested = raf(tmp_path, "mcp", "serve", "--nope")
    assert nested.stderr.startswith("usage: raf mcp serve ")


def test_the_readmes_scripted_model_example_is_a_valid_script(tmp_path: Path) -> None:
    """The scripted-model file format is documented in the testing guide; its example loads."""
    import re

    from raf.testing import ScriptFileClient

    readme = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "testing.md").read_text(
        encoding="utf-8"
    )
    section = readme.split("--model scripted:FILE.json", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None
    path = tmp_path / "script.json"
    path.write_text(block.group(1), encoding="utf-8")
    client = ScriptFileClient(path)
    assert len(client.delays) == 2
    write_agent(tmp_path, APPROVING_AGENT)
    (tmp_path / "notes.md").write_text("release: Friday\n", encoding="utf-8")
    done = raf(tmp_path, "run", "agent.yaml", "when?", "--model", f"scripted:{path}")
    assert done.returncode == 0, done.stderr
    assert "The notes say the release is on Friday." in done.stdout
    assert "read_file failed" not in done.stderr


@pytest.mark.parametrize(
    ("model", "module", "extra"),
    [
        ("model: openai:gpt-4o-mini\n", "openai", "openai"),
        ("model:\n  provider: anthropic\n  id: claude-sonnet-4-5\n", "anthropic", "anthropic"),
        ("model: ollama-native:qwen3:8b\n", "httpx", "ollama"),
    ],
)
def test_validate_names_the_extra_the_documents_model_needs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    module: str,
    extra: str,
) -> None:
    """`raf validate` said "ok" on a document whose model's client was not installed, and
    the first run then failed on it; it now names the extra, at the model's line."""
    from raf.cli.main import main
    from raf.decl.documents import extras

    real = extras.module_available
    monkeypatch.setattr(extras, "module_available", lambda name: name != module and real(name))
    path = write_agent(tmp_path, SIMPLE + model)
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert re.search(r"agent\.yaml:[34]:\d+ model: the model '", err), err  # located
    assert f"needs the '{extra}' extra (module '{module}' is missing)" in err
    assert main(["validate", "--no-extras", str(path)]) == 0  # the document itself is fine


def test_validate_takes_a_folder_as_raf_serve_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`raf serve agents/` takes a folder, so `raf validate agents/` checks the same
    documents: each one in it, problems located in their own file."""
    from raf.cli.main import main

    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "good.yaml").write_text(SIMPLE + "model: openai:gpt-4o-mini\n", "utf-8")
    (agents / "bad.yaml").write_text("name: bad\nmodle: x\n", "utf-8")
    (agents / "notes.txt").write_text("not a document", "utf-8")
    assert main(["validate", "--no-extras", str(agents)]) == 1
    captured = capsys.readouterr()
    assert f"{agents / 'good.yaml'}: ok" in captured.out
    assert f"{agents / 'bad.yaml'}: " in captured.err and "notes.txt" not in captured.err
    (agents / "bad.yaml").unlink()
    assert main(["validate", "--no-extras", str(agents)]) == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["validate", str(empty)]) == 1
    assert "no documents in this folder" in capsys.readouterr().err
