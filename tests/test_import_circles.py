"""No import circles in src/raf: modules that import each other, directly or through
others, are one module in several files. Every import counts (module level, inside
functions, under TYPE_CHECKING)."""

from __future__ import annotations

from pathlib import Path

from tests.import_graph import circles, module_graph


def test_the_module_graph_has_no_circle() -> None:
    found = circles(module_graph().edges())
    report = "\n".join(f"circle of {len(c)}: {', '.join(c)}" for c in found)
    assert not found, f"{len(found)} import circles in src/raf:\n{report}"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "raf" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_circle_through_a_function_body_a_face_and_type_checking_is_found(
    tmp_path: Path,
) -> None:
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "from raf.a.one import One\n__all__ = ['One']\n",
            "a/one.py": "def f():\n    from ..b import two\n\nclass One: ...\n",
            "b/__init__.py": "",
            "b/two.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from raf.a import One\n"
            ),
            "b/alone.py": "import raf.b.two\n",
        },
    )
    graph = module_graph(root)
    assert "raf.a" in graph.faces
    assert circles(graph.edges()) == [["raf.a.one", "raf.b.two"]]


def test_a_package_with_code_of_its_own_is_a_module_in_the_graph(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "__init__.py": "",
            "p/__init__.py": "from .q import helper\n\ndef run():\n    return helper()\n",
            "p/q.py": "def helper():\n    from raf.p import run\n    return run\n",
        },
    )
    assert circles(module_graph(root).edges()) == [["raf.p", "raf.p.q"]]
