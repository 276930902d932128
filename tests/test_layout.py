"""`tests/` mirrors `src/raf`: each package that holds modules of its own has a folder of
the same path under `tests/` with tests in it, so the tests of a piece of code are found
where the code is."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "raf"
TESTS = ROOT / "tests"


def _packages_with_modules() -> list[Path]:
    """Packages under `src/raf` (relative paths) holding a module besides `__init__.py`
    (a folder of assets or data alone, such as the UI's static files, has no tests)."""
    found = []
    for folder in sorted(p for p in SRC.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        if any(m.name != "__init__.py" for m in folder.glob("*.py")):
            found.append(folder.relative_to(SRC))
    return found


def test_every_package_has_its_tests_at_the_same_path() -> None:
    missing = [
        str(package)
        for package in _packages_with_modules()
        if not any((TESTS / package).rglob("test_*.py"))
    ]
    assert not missing, f"packages of src/raf without tests/<same path>/test_*.py: {missing}"


def test_the_check_sees_the_packages() -> None:
    packages = {str(p) for p in _packages_with_modules()}
    assert {"agent/run", "clients/openai", "context/memory", "serve/mcp", "tools/scope"} <= packages
