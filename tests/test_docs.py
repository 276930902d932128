"""The documentation site builds with `mkdocs build --strict` (no broken link or
reference), and every code block on every page runs as written.

On a page, each ```python block runs on its own, in a fresh namespace, unless the line
before its fence says `<!-- docs-check: continues -->`: then it continues the block
before it on the same page (same namespace), as a reader who keeps going would.
`<!-- docs-check: compile-only: REASON -->` marks a block that needs what a test run
does not have (a key, a server): it is compiled, not run. A ```yaml block marked
`<!-- docs-check: document NAME -->` is an agent document: it is written to NAME in a
fresh folder and must validate.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_BLOCK = re.compile(
    r"(?:<!-- docs-check: (?P<mark>[^>]*?) -->\n)?```(?P<lang>python|yaml)\n(?P<code>.*?)```",
    re.S,
)
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int
    mark: str


def page_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(
            lang=m.group("lang"),
            code=m.group("code"),
            line=text.count("\n", 0, m.start("code")) + 1,
            mark=m.group("mark") or "",
        )
        for m in _BLOCK.finditer(text)
    ]


PAGES = sorted(p for p in DOCS.rglob("*.md") if "decisions" not in p.relative_to(DOCS).parts)


def test_there_are_pages_with_code() -> None:
    assert sum(len(page_blocks(p)) for p in PAGES) >= 4


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_block_on_the_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("RAF_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    where = page.relative_to(ROOT)
    namespace: dict[str, object] = {}
    for block in page_blocks(page):
        located = f"{where}:{block.line}"
        if block.mark and not re.fullmatch(
            r"continues|compile-only: \S.*|document [\w./-]+", block.mark
        ):
            pytest.fail(f"{located}: unknown docs-check mark {block.mark!r}")
        if block.lang == "yaml":
            if block.mark.startswith("document "):
                _validate_document(block, tmp_path, located)
            continue
        if block.mark != "continues":
            namespace = {"__name__": "__docs__"}
        code = compile(block.code, located, "exec")
        if block.mark.startswith("compile-only"):
            continue
        try:
            exec(code, namespace)
        except Exception as exc:  # the block's own error, located
            pytest.fail(f"{located}: {type(exc).__name__}: {exc}")


def _validate_document(block: Block, folder: Path, located: str) -> None:
    from raf.core.errors import ValidationProblems
    from raf.decl import load_file

    name = block.mark.removeprefix("document ").strip()
    path = folder / name
    path.write_text(block.code, encoding="utf-8")
    try:
        load_file(path)
    except ValidationProblems as exc:
        pytest.fail(f"{located}: the document does not validate: {exc}")


def test_a_continuation_is_only_written_where_a_block_came_before() -> None:
    for page in PAGES:
        python = [b for b in page_blocks(page) if b.lang == "python"]
        if python and python[0].mark == "continues":
            pytest.fail(f"{page.relative_to(ROOT)}:{python[0].line}: continues nothing")


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """Broken links, missing anchors and unresolved API references fail the build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "site" / "get-started" / "index.html").is_file()
    api = (tmp_path / "site" / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    assert "AgentBuilder" in api and "ContextResult" in api
    http = (tmp_path / "site" / "reference" / "http" / "index.html").read_text(encoding="utf-8")
    for served in ("/agents/{agent}/sessions/{session_id}/approvals", "/v1/chat/completions"):
        assert f"<code>{served}</code>" in http
    for served in ("/agui/{agent}", "/ui/api/workflows/{name}/runs", "/a2a/{agent}"):
        assert f"<code>{served}</code>" in http  # AG-UI, the web UI's API, A2A
    assert "Answer the session&rsquo;s pending approvals" in http or (
        "Answer the session's pending approvals" in http
    )


_INSTALL_FROM_PYPI = re.compile(r"pip install [\"']?raf-agents")


def test_install_commands_install_from_the_clone() -> None:
    """raf is not on PyPI yet: `pip install "raf-agents[x]"` fails for a reader (or installs
    whatever else holds that name), so every page and README says `pip install -e ".[x]"`,
    as raf's own missing-extra errors do in a clone."""
    readmes = [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for path in [*PAGES, *readmes]
        for text in [path.read_text(encoding="utf-8")]
        for m in _INSTALL_FROM_PYPI.finditer(text)
    ]
    assert found == [], "install from the clone instead: " + ", ".join(found)


@pytest.mark.parametrize("path", ["README.md", "docs/get-started.md"])
def test_the_first_install_makes_a_virtual_environment_first(path: str) -> None:
    """A Python that refuses installs outside a virtual environment fails the first `pip
    install` a reader copies, so the first shell block makes one before it installs."""
    text = (ROOT / path).read_text(encoding="utf-8")
    first = re.search(r"```(?:bash|sh)\n(.*?)```", text, re.S)
    assert first is not None
    lines = first.group(1).splitlines()
    venv = next((i for i, line in enumerate(lines) if "-m venv" in line), None)
    install = next(i for i, line in enumerate(lines) if "pip install" in line)
    assert venv is not None and venv <= install, f"{path}: {first.group(1)}"
    assert ". .venv/bin/activate" in lines[venv]
    if venv == install:
        line = lines[venv]
        assert line.index("-m venv") < line.index("activate") < line.index("pip install")


def test_the_readmes_first_command_is_one_line() -> None:
    """A newcomer pastes one line: make the environment, install, ask."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```(?:bash|sh)\n(.*?)```", text, re.S)
    assert first is not None
    lines = [line for line in first.group(1).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "pip install" in lines[0] and "raf ask" in lines[0]


def _raf_command_lines(text: str) -> list[tuple[int, list[str]]]:
    """Each `raf …` command of the page's shell blocks, as the words the program gets:
    continuation lines joined, comments, leading `VAR=value`s, `cmd && ` prefixes and what
    follows `&`, `>` or a pipe dropped."""
    found: list[tuple[int, list[str]]] = []
    for block in re.finditer(r"```(?:bash|sh)\n(.*?)```", text, re.S):
        first = text.count("\n", 0, block.start(1)) + 1
        for offset, line in enumerate(block.group(1).replace("\\\n", " \n").splitlines()):
            for command in line.split("&&"):
                words = shlex.split(command, comments=True)
                while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                    words = words[1:]
                if words[:1] != ["raf"]:
                    continue
                for stop in ("&", ">", "|"):
                    if stop in words:
                        words = words[: words.index(stop)]
                found.append((first + offset, words[1:]))
    return found


def test_every_raf_command_in_a_shell_block_is_one_the_program_accepts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Shell blocks of the pages and READMEs are not run here (they start servers, need
    keys or a database; the examples' keyless runs are checked in tests/examples), but
    each `raf` command in them must parse: a renamed option or command fails here. Written
    alternatives (`--approve all|none|ask`) are each tried."""
    from raf.cli.main import build_parser, parse

    parser = build_parser()
    wrong: list[str] = []
    checked = 0
    readmes = [ROOT / "README.md", *sorted((ROOT / "examples").glob("*/README.md"))]
    for page in [*PAGES, *readmes]:
        for line, words in _raf_command_lines(page.read_text(encoding="utf-8")):
            choices = [w.split("|") if "|" in w and not w.startswith("-") else [w] for w in words]
            for argv in itertools.product(*choices):
                checked += 1
                try:
                    parse(parser, list(argv))
                except SystemExit:
                    error = capsys.readouterr().err.strip().splitlines()[-1]
                    wrong.append(f"{page.relative_to(ROOT)}:{line}: {error}")
    assert checked > 30
    assert wrong == []
