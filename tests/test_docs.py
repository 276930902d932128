"""The documentation site builds with `mkdocs build --strict` (no broken link or
reference), and every code block on every page runs as written.

On a page, each ```python block runs on its own, in a fresh namespace, unless the line
before its fence says `<!-- docs-check: continues -->`: then it continues the last block
that ran before it on the same page (same namespace), as a reader who keeps going would.
`<!-- docs-check: compile-only: REASON -->` marks a block that needs what a test run
does not have (a key, a server, another framework): it is compiled, not run, and the
blocks around it share their namespace across it. A ```yaml block marked
`<!-- docs-check: document NAME -->` is an agent document: it is written to NAME in a
fresh folder and must validate. Python blocks and documents of a page share that folder.

Each ```bash or ```sh block of README.md and of the pages (decision records aside)
runs with bash (`-e -o pipefail`: a failing command fails the block), with a
timeout, no provider key, a fresh HOME and the `raf` of this checkout, and must exit 0.
The lines before its fence say how (one `<!-- docs-check: ... -->` per line):

- `shell-expect: TEXT`: what its output (stdout and stderr) must contain; a block that
  runs has at least one.
- `shell-continues`: it runs in the page's folder, where the page's earlier python
  blocks ran, its documents were written and its earlier continuing shell blocks ran.
  Without it a shell block runs in a fresh, empty folder.
- `shell-files: PATH ...`: these files or folders of the raf checkout are copied into
  the block's folder first (`NAME=PATH` copies PATH to NAME).
- `shell-model: REPLIES`: `RAF_MODEL` is a scripted model playing REPLIES (the JSON of
  a `--model scripted:FILE` file), so commands that name no model run on the script
  instead of the document's model.
- `shell-not-run: REASON`: the block is not run (it installs packages, starts a server
  that runs until stopped, names a remote host, needs a key, is a synopsis); REASON
  says which. Its `raf` commands are still parsed.

A shell block with neither `shell-expect` nor `shell-not-run` fails the check.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
_BLOCK = re.compile(
    r"(?P<marks>(?:<!-- docs-check: [^>]*? -->\n)*)```(?P<lang>python|yaml|bash|sh)\n"
    r"(?P<code>.*?)```",
    re.S,
)
_MARK = re.compile(r"<!-- docs-check: (?P<mark>[^>]*?) -->")
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
_SHELL = ("bash", "sh")
_SHELL_MARK = re.compile(r"shell-(?:continues|not-run: \S.*|expect: \S.*|files: \S.*|model: \S.*)")
_SHELL_TIMEOUT = 60
"""Seconds a shell block may run (a server it starts included)."""


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int
    marks: tuple[str, ...]

    @property
    def mark(self) -> str:
        """The one mark of a python or yaml block ("" when none)."""
        return self.marks[-1] if self.marks else ""

    def marked(self, kind: str) -> list[str]:
        """The values of this block's `shell-KIND: VALUE` marks."""
        prefix = f"shell-{kind}: "
        return [m.removeprefix(prefix) for m in self.marks if m.startswith(prefix)]


def page_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(
            lang=m.group("lang"),
            code=m.group("code"),
            line=text.count("\n", 0, m.start("code")) + 1,
            marks=tuple(x.group("mark") for x in _MARK.finditer(m.group("marks"))),
        )
        for m in _BLOCK.finditer(text)
    ]


PAGES = sorted(p for p in DOCS.rglob("*.md") if "decisions" not in p.relative_to(DOCS).parts)
SHELL_PAGES = [ROOT / "README.md", *PAGES]
"""The pages whose shell blocks are checked: README.md and the site's pages."""


def _runs(block: Block) -> bool:
    return block.lang in _SHELL and not block.marked("not-run")


RUN_PAGES = [p for p in SHELL_PAGES if any(_runs(b) for b in page_blocks(p))]


def _page_id(page: Path) -> str:
    return str(page.relative_to(DOCS if page.is_relative_to(DOCS) else ROOT))


def test_there_are_pages_with_code() -> None:
    assert sum(len(page_blocks(p)) for p in PAGES) >= 4


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_block_on_the_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python blocks and documents; shell blocks are the test below's."""
    _run_page(page, tmp_path, monkeypatch, shell=False)


@pytest.mark.parametrize("page", RUN_PAGES, ids=_page_id)
def test_every_shell_block_on_the_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's shell blocks that run, each in its folder, with the page's python
    blocks and documents run before them as a reader would."""
    _run_page(page, tmp_path, monkeypatch, shell=True)


def _run_page(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shell: bool) -> None:
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("RAF_MODEL", raising=False)
    folder = tmp_path / "page"
    folder.mkdir()
    monkeypatch.chdir(folder)
    where = page.relative_to(ROOT)
    namespace: dict[str, object] = {}
    for block in page_blocks(page):
        located = f"{where}:{block.line}"
        if block.lang in _SHELL:
            if shell and _runs(block):
                _run_shell(block, folder, tmp_path, located)
            continue
        if len(block.marks) > 1 or (
            block.mark
            and not re.fullmatch(r"continues|compile-only: \S.*|document [\w./-]+", block.mark)
        ):
            pytest.fail(f"{located}: unknown docs-check mark {block.mark!r}")
        if block.lang == "yaml":
            if block.mark.startswith("document "):
                _validate_document(block, folder, located)
            continue
        compile_only = block.mark.startswith("compile-only")
        if block.mark != "continues" and not compile_only:
            namespace = {"__name__": "__docs__"}
        # as the reader runs it: not under this test module's `from __future__` imports
        code = compile(block.code, located, "exec", dont_inherit=True)
        if compile_only:
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


def _shell_env(home: Path) -> dict[str, str]:
    """The environment of a shell block: no key, no RAF_ setting and no XDG folder of the
    machine's, a fresh HOME, this checkout's `raf` first on PATH."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "raf").is_file():
        pytest.fail(f"no `raf` program next to {sys.executable}: install raf (pip install -e .)")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _KEYS and not k.startswith(("RAF_", "XDG_")) and not k.endswith("_API_KEY")
    }
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(bin_dir), env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]),
        PYTHONUNBUFFERED="1",
        NO_COLOR="1",
    )
    return env


def _run_shell(block: Block, page_folder: Path, tmp_path: Path, located: str) -> None:
    """Run one shell block as the marks before it say; fail with its output otherwise."""
    if block.marked("expect") == []:
        pytest.fail(f"{located}: a shell block that runs says what it prints (shell-expect)")
    if "shell-continues" in block.marks:
        folder = page_folder
    else:
        folder = tmp_path / f"block-{block.line}"
        folder.mkdir()
    for entries in block.marked("files"):
        for entry in entries.split():
            name, _, source = entry.rpartition("=")
            origin = ROOT / source
            target = folder / (name or source)
            if not origin.exists():
                pytest.fail(f"{located}: shell-files: {source} is not in the checkout")
            target.parent.mkdir(parents=True, exist_ok=True)
            if origin.is_dir():
                shutil.copytree(origin, target)
            else:
                shutil.copy2(origin, target)
    env = _shell_env(tmp_path / "home")
    for replies in block.marked("model"):
        script = tmp_path / f"replies-{block.line}.json"
        script.write_text(replies, encoding="utf-8")
        env["RAF_MODEL"] = f"scripted:{script}"
    log = tmp_path / f"output-{block.line}.txt"
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["bash", "-e", "-o", "pipefail", "-c", block.code],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: what it leaves running is stopped
        )
        try:
            code: int | None = process.wait(timeout=_SHELL_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    printed = log.read_text(encoding="utf-8", errors="replace")
    if code is None:
        pytest.fail(f"{located}: still running after {_SHELL_TIMEOUT}s; it printed:\n{printed}")
    if code != 0:
        pytest.fail(f"{located}: exit status {code}; it printed:\n{printed}")
    missing = [text for text in block.marked("expect") if text not in printed]
    assert missing == [], f"{located}: does not print {missing}; it printed:\n{printed}"


def test_the_shell_runner_fails_a_block_that_fails_or_prints_otherwise(tmp_path: Path) -> None:
    def block(code: str, *marks: str) -> Block:
        return Block(lang="bash", code=code, line=1, marks=marks)

    (tmp_path / "page").mkdir()
    cases = [
        (block("false\necho after", "shell-expect: after"), "exit status 1"),
        (block("echo hello", "shell-expect: goodbye"), "does not print ['goodbye']"),
        (block("echo hello"), "says what it prints"),
        (block("ls missing.txt", "shell-expect: x", "shell-files: missing.txt"), "not in the"),
    ]
    for number, (wrong, said) in enumerate(cases):
        folder = tmp_path / str(number)
        (folder / "page").mkdir(parents=True)
        with pytest.raises((pytest.fail.Exception, AssertionError), match=re.escape(said)):
            _run_shell(wrong, folder / "page", folder, "page.md:1")


def test_the_shell_runner_stops_what_a_block_leaves_running(tmp_path: Path) -> None:
    """A server a block starts with `&` and does not stop is stopped with the block."""
    (tmp_path / "page").mkdir()
    left = Block(
        lang="bash",
        code='sleep 300 &\necho "$!" > pid\necho started',
        line=1,
        marks=("shell-expect: started",),
    )
    _run_shell(left, tmp_path / "page", tmp_path, "page.md:1")
    status = Path("/proc") / (tmp_path / "block-1" / "pid").read_text().strip() / "status"
    for _ in range(50):  # gone, or a zombie its new parent has not reaped yet
        if not status.exists() or "\nState:\tZ" in status.read_text():
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"left running: {status.read_text()}")


def test_every_shell_block_runs_or_says_why_not() -> None:
    """A shell block runs (and says what it prints) or says why it is not run; its marks
    are ones the runner knows, and a continuation has something before it to continue."""
    wrong: list[str] = []
    checked = 0
    for page in SHELL_PAGES:
        blocks = page_blocks(page)
        for index, block in enumerate(blocks):
            if block.lang not in _SHELL:
                continue
            checked += 1
            located = f"{page.relative_to(ROOT)}:{block.line}"
            unknown = [m for m in block.marks if not _SHELL_MARK.fullmatch(m)]
            if unknown:
                wrong.append(f"{located}: unknown docs-check marks {unknown}")
            elif block.marked("not-run"):
                if len(block.marks) > 1:
                    wrong.append(f"{located}: shell-not-run goes alone: {list(block.marks)}")
            elif not block.marked("expect"):
                wrong.append(
                    f"{located}: neither runs nor says why not: mark it `shell-expect: TEXT` "
                    "(what it prints) or `shell-not-run: REASON`"
                )
            elif "shell-continues" in block.marks and index == 0:
                wrong.append(f"{located}: shell-continues continues nothing")
    assert checked > 20
    assert wrong == []


def test_a_continuation_is_only_written_where_a_block_came_before() -> None:
    for page in PAGES:
        python = [b for b in page_blocks(page) if b.lang == "python"]
        if python and python[0].mark == "continues":
            pytest.fail(f"{page.relative_to(ROOT)}:{python[0].line}: continues nothing")


@pytest.mark.slow
def test_the_site_builds_strict_from_the_docs_extra_alone(tmp_path: Path) -> None:
    """`pip install -e ".[docs]" && mkdocs build --strict` in a fresh virtual environment:
    broken links, missing anchors and unresolved API references fail the build, and
    nothing the reference pages read may need another extra."""
    venv = tmp_path / "venv"
    # pip itself is not needed in it: this environment's pip installs into it (--python),
    # without compiling the packages' bytecode first (Python compiles what mkdocs imports)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300
    )
    python = str(venv / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]
    install = subprocess.run(
        [*pip, "install", "-q", "--no-compile", "-e", ".[docs]"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    extras = subprocess.run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('fastapi'))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert extras.stdout.strip() == "None"  # the serve extra is not there
    site = tmp_path / "site"
    done = subprocess.run(
        [python, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            "NO_MKDOCS_2_WARNING": "1",
            "VIRTUAL_ENV": str(venv),
        },
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (site / "get-started" / "index.html").is_file()
    api = (site / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    assert "AgentBuilder" in api and "ContextResult" in api and "WebFetch" in api
    http = (site / "reference" / "http" / "index.html").read_text(encoding="utf-8")
    for served in ("/agents/{agent}/sessions/{session_id}/approvals", "/v1/chat/completions"):
        assert f"<code>{served}</code>" in http


def test_the_http_reference_snapshot_is_what_the_server_publishes() -> None:
    """The HTTP reference page is generated from `raf serve`'s OpenAPI document when the
    serve extra is installed, else read from the snapshot; the two must agree."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        docs_hooks: Any = importlib.import_module("docs_hooks")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    http = docs_hooks.http_api()
    assert http == docs_hooks.HTTP_API_SNAPSHOT.read_text(encoding="utf-8"), (
        "the served operations changed: run python scripts/docs_hooks.py --write-http-api"
    )
    for served in ("/agents/{agent}/sessions/{session_id}/approvals", "/v1/chat/completions"):
        assert f"`{served}`" in http
    for served in ("/agui/{agent}", "/ui/api/workflows/{name}/runs", "/a2a/{agent}"):
        assert f"`{served}`" in http  # AG-UI, the web UI's API, A2A
    assert "Answer the session's pending approvals" in http


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
    """Each `raf` command in the shell blocks of the pages and READMEs parses, the blocks
    not run above included (the examples' READMEs are run in tests/examples): a renamed
    option or command fails here. Written alternatives (`--approve all|none|ask`) are each
    tried."""
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


GUIDE_PAGES = sorted((DOCS / "guide").glob("*.md")) + sorted((DOCS / "migrating").glob("*.md"))


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=_page_id)
def test_every_guide_page_has_sections(page: Path) -> None:
    """At least two `##` sections, so the page's table of contents leads somewhere."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    sections = re.findall(r"^## \S", text, flags=re.M)
    assert len(sections) >= 2, f"{_page_id(page)} has {len(sections)} second-level headings"
