"""Every example runs keyless as its README shows: each block marked
`<!-- example-check: run -->` is run line by line in a copy of the example's folder, on
the scripted replies checked in beside it, and what it prints (stdout and stderr, as a
terminal shows them) must be the README's next ```text block exactly. A command that
exits non-zero adds a line `[exit code N]`; none may end in a traceback.

After a deliberate change of what the programs print, rewrite the blocks with
`python tests/examples/test_example_readmes.py` and read the diff before committing."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROOT = EXAMPLES.parent
_RUN = re.compile(
    r"<!-- example-check: run -->\n```(?:sh|bash)\n(?P<commands>.*?)```\s*"
    r"(?:[^`]*?\n)?```text\n(?P<expected>.*?)```",
    re.S,
)
FOLDERS = sorted(p.parent for p in EXAMPLES.glob("*/README.md"))


def run_line(line: str, folder: Path, data: Path) -> str:
    words = shlex.split(line)
    if words[0] == "raf":
        words = [sys.executable, "-m", "raf.cli", *words[1:]]
    elif words[0] == "python":
        words = [sys.executable, *words[1:]]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("RAF_MODEL", None)
    env.update(
        RAF_DATA_DIR=str(data),
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
        COLUMNS="100",
    )
    done = subprocess.run(
        words,
        cwd=folder,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    out = done.stdout
    assert "Traceback (most recent call last)" not in out, f"{line}:\n{out}"
    if done.returncode:
        out += f"[exit code {done.returncode}]\n"
    return out


def printed(folder: Path, commands: str, scratch: Path) -> list[str]:
    """What the commands of one block print, run in order in a copy of `folder`."""
    copy = scratch / folder.name
    if not copy.exists():
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("memory", "__pycache__"))
    got = ""
    for line in commands.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            got += run_line(line.split(" #", 1)[0].strip(), copy, scratch / "data")
    return [line.rstrip() for line in got.rstrip("\n").splitlines()]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_the_readme_commands_print_what_the_readme_says(folder: Path, tmp_path: Path) -> None:
    readme = (folder / "README.md").read_text(encoding="utf-8")
    runs = list(_RUN.finditer(readme))
    assert runs, f"{folder.name}/README.md shows no keyless run (<!-- example-check: run -->)"
    for match in runs:
        shown = printed(folder, match.group("commands"), tmp_path)
        expected = [line.rstrip() for line in match.group("expected").rstrip("\n").splitlines()]
        assert shown == expected, "the commands printed:\n" + "\n".join(shown)


@pytest.mark.parametrize(
    ("folder", "command"),
    [
        ("editorial-team", 'python team.py "tide pools" --model openai:gpt-4o-mini'),
        ("research-pipeline", 'python pipeline.py "tides" --model openai:gpt-4o-mini'),
        ("research-pipeline", 'python pipeline.py "tides" --model nonsense'),
    ],
)
def test_a_python_example_that_cannot_start_says_why_in_one_line(
    folder: str, command: str, tmp_path: Path
) -> None:
    """Without a key (or with a model string raf does not know) the Python examples end
    as the raf program does: one line naming the problem, exit code 1, no traceback."""
    shown = printed(EXAMPLES / folder, command, tmp_path)
    program = command.split()[1]
    assert len(shown) == 2 and shown[-1] == "[exit code 1]", shown
    assert shown[0].startswith(f"{program}: error: ")
    assert ("no API key for openai" in shown[0]) != ("nonsense" in command)


def test_the_research_pipeline_runs_end_to_end_on_the_local_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its README says the pipeline runs without a key on the embedded model (its
    findings invented): every agent answers and the run stops at the approval before
    publishing (exit code 3, nobody at a terminal). Each answer is capped at 96 tokens
    (`RAF_LOCAL_MAX_TOKENS`, as on a slow machine): the five agents' run is what is
    checked, not the length of their writing."""
    monkeypatch.setenv("RAF_LOCAL_MAX_TOKENS", "96")
    command = 'raf run workflow.yaml "the history of tide prediction" --model local'
    shown = printed(EXAMPLES / "research-pipeline", command, tmp_path)
    assert shown[-1] == "[exit code 3]", shown[-5:]
    assert "waits for approval; resume with --session" in shown[-2]
    assert len("".join(shown)) > 200  # the report the approval is asked for


if __name__ == "__main__":
    import tempfile

    for folder in FOLDERS:
        path = folder / "README.md"
        text = path.read_text(encoding="utf-8")
        with tempfile.TemporaryDirectory() as scratch:
            for match in reversed(list(_RUN.finditer(text))):
                shown = "\n".join(printed(folder, match.group("commands"), Path(scratch)))
                start, end = match.span("expected")
                text = text[:start] + shown + "\n" + text[end:]
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
