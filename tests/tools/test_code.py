"""code_interpreter against hostile programs: each is contained and reported."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from raf.core.tools import ToolContext
from raf.tools.code import CodeInterpreter
from raf.tools.sandbox import SandboxKind, detect_sandbox


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


async def test_runs_code_and_returns_files():
    result = await CodeInterpreter().run(
        "import sys\nprint('hello', sys.argv[1])\n"
        "open('out/r.txt','w').write(open('in.txt').read()*2)",
        files={"in.txt": "ab", "out/keep.txt": b"same"},
        args=["there"],
    )
    assert result.ok, result.stderr
    assert result.stdout == "hello there\n"
    assert [(f.name, f.content) for f in result.files] == [("out/r.txt", b"abab")]


async def test_shell_language_and_stdin():
    result = await CodeInterpreter().run("read x; echo got $x; exit 3", "shell", stdin=b"42\n")
    assert result.exit_code == 3 and result.stdout == "got 42\n"


async def test_as_a_tool():
    tool = CodeInterpreter()
    result = await tool.invoke({"code": "open('a.txt','w').write('x'); print(1+1)"}, ToolContext())
    assert result.value["stdout"] == "2\n"
    assert result.value["files"] == [{"name": "a.txt", "size": 1, "text": "x"}]
    assert tool.name == "code_interpreter" and not tool.requires_approval
    bad = await tool.invoke({"code": "x", "language": "cobol"}, ToolContext())
    assert "invalid arguments" in (bad.error or "")


async def test_infinite_loop_is_killed():
    start = time.monotonic()
    result = await CodeInterpreter(timeout_s=2).run("while True:\n    pass")
    assert time.monotonic() - start < 10
    assert result.timed_out and not result.ok
    assert any("wall-clock" in n for n in result.notes)


async def test_fork_bomb_is_contained():
    marker = "forkbomb" + secrets.token_hex(4)
    code = (
        f"# {marker}\nimport os, time\n"
        "n = 0\n"
        "while True:\n"
        "    try:\n"
        "        os.fork(); n += 1\n"
        "    except OSError:\n"
        "        time.sleep(0.05)\n"
    )
    start = time.monotonic()
    result = await CodeInterpreter(timeout_s=3, max_processes=16).run(code)
    assert time.monotonic() - start < 20
    assert result.timed_out
    time.sleep(0.5)
    assert _processes_with(marker) == []


async def test_memory_hog_is_stopped():
    result = await CodeInterpreter(memory_mb=256).run("x = bytearray(1024 * 1024 * 1024)")
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr
    assert any("memory limit" in n for n in result.notes)


async def test_output_is_capped():
    result = await CodeInterpreter(output_cap=1000).run("print('x' * 100000)")
    assert len(result.stdout) == 1000
    assert any("output cut" in n for n in result.notes)


async def test_file_size_limit():
    result = await CodeInterpreter(file_mb=1).run("open('big','wb').write(b'x' * 5_000_000)")
    assert result.exit_code != 0
    big = [f for f in result.files if f.name == "big"]
    assert not big or big[0].size <= 1024 * 1024


def _require_bubblewrap() -> None:
    """Fail (never skip, never pass on a fallback) when bubblewrap does not work for the
    interpreter's user: the test command installs it."""
    kind = detect_sandbox(as_user=65534 if os.geteuid() == 0 else None)
    assert kind is SandboxKind.BWRAP, (
        f"bubblewrap does not work on this machine (found {kind}); scripts/test.sh installs it"
    )


async def test_write_outside_is_contained(tmp_path: Path):
    tmp_path.chmod(0o777)
    target = tmp_path / "escaped.txt"
    code = (
        "import os\n"
        f"for p in [{str(target)!r}, '/escaped-raf.txt', '/etc/escaped-raf']:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); print('wrote', p)\n"
        "    except OSError as e:\n"
        "        print('refused', p, e.errno)\n"
    )
    _require_bubblewrap()
    result = await CodeInterpreter().run(code)
    assert result.sandbox == "bubblewrap"
    assert not target.exists()
    assert not Path("/escaped-raf.txt").exists() and not Path("/etc/escaped-raf").exists()
    assert "refused" in result.stdout or "wrote" in result.stdout


async def test_network_connection_is_refused():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
            accepted.append(conn)
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        code = (
            "import socket\n"
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "print('connected')\n"
        )
        result = await CodeInterpreter().run(code)
    finally:
        server.close()
        thread.join(6)
    _require_bubblewrap()
    assert "connected" not in result.stdout
    assert result.exit_code != 0
    assert accepted == []
    assert result.sandbox == "bubblewrap"


async def test_produced_files_are_capped_in_count_and_total() -> None:
    """600 files of 1 MB once grew raf by 3.9 GB when read back; count and total are capped."""
    tool = CodeInterpreter(max_files=50, max_total_bytes=1_000_000)
    code = "for i in range(150):\n    open(f'f{i:03}.bin', 'wb').write(b'x' * 200_000)\n"
    result = await tool.run(code)
    assert len(result.files) == 50
    read_back = sum(len(f.content or b"") for f in result.files)
    assert 0 < read_back <= 1_000_000
    assert any("100 further files not listed" in n for n in result.notes)
    assert any("capped at 1000000 bytes" in n for n in result.notes)


async def test_a_venv_in_a_folder_the_sandbox_hides_still_runs(tmp_path: Path) -> None:
    """The sandbox hides $HOME and /tmp; a virtual environment in one of them (the usual
    place of a project's venv) holds the interpreter's path, so it is shown read-only."""
    _require_bubblewrap()
    system = "/usr/bin/python3"  # a base interpreter anyone may run (the test command's)
    hidden = Path(tempfile.mkdtemp(prefix="raf-venv-", dir="/tmp"))
    try:
        hidden.chmod(0o755)  # the code may run as another user (`nobody` under root)
        venv = hidden / "venv"
        subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
        python = str(venv / "bin" / "python")
        result = await CodeInterpreter(python=python).run("import sys; print(sys.prefix)")
        assert result.ok, result.stderr
        assert result.stdout.strip() == str(venv)  # the venv's own interpreter ran
        assert result.sandbox == "bubblewrap"
    finally:
        shutil.rmtree(hidden)
