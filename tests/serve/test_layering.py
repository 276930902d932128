"""Serving is a layer on top: nothing below imports it, and `import raf.serve` needs no extra."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "raf"


def test_nothing_below_the_serve_layer_imports_it() -> None:
    offenders = []
    for layer in ("core", "agent", "clients", "tools", "context", "workflow", "decl", "testing"):
        for path in (SRC / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("raf.serve"):
                    offenders.append(str(path.relative_to(SRC)))
                if isinstance(node, ast.Import) and any(
                    a.name.startswith("raf.serve") for a in node.names
                ):
                    offenders.append(str(path.relative_to(SRC)))
    assert offenders == []


def test_raf_serve_imports_without_its_extra_and_names_the_install_line() -> None:
    code = (
        "import sys\n"
        "for name in ('fastapi', 'uvicorn', 'a2a', 'acp', 'starlette'):\n"
        "    sys.modules[name] = None\n"
        "import raf, raf.serve\n"
        "from raf.serve import AgentHost, create_app\n"
        "try:\n"
        "    create_app(AgentHost([]))\n"
        "except raf.RafError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert '[serve]"' in done.stdout and "pip install" in done.stdout
