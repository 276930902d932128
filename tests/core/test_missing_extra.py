"""A missing extra is a ModuleNotFoundError (an ImportError) as well as a RafError:
tools that skip modules they cannot import (pytest.importorskip, pkgutil.walk_packages,
Sphinx) skip raf.durable when DBOS is absent instead of crashing, and the message still
names the install line."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from raf.core.errors import MissingExtraError, RafError, install_hint

# Runs in a fresh interpreter where a meta-path finder refuses `dbos`, as on an install
# without the durable extra.
_WITHOUT_DBOS = textwrap.dedent(
    """
    import importlib.abc
    import pkgutil
    import sys

    class NoDbos(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "dbos" or name.startswith("dbos."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoDbos())

    import pytest
    import raf

    try:
        pytest.importorskip("raf.durable")
    except pytest.skip.Exception as skipped:
        print("skipped:", skipped.msg)

    failed = []
    names = [m.name for m in pkgutil.walk_packages(raf.__path__, "raf.", onerror=failed.append)]
    print("walked:", "raf.durable.runtime" not in names, "raf.workflow.runner" in names)
    print("failed:", failed)

    try:
        import raf.durable
    except ImportError as exc:
        print("error:", type(exc).__name__, isinstance(exc, raf.RafError), exc.name, exc)
    """
)


def test_without_dbos_raf_durable_is_skipped_and_walked_past_not_crashed_on() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_DBOS],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("skipped: could not import 'raf.durable'")
    assert "durable runs needs the 'durable' extra" in lines[0]
    assert lines[1] == "walked: True True"
    assert lines[2] == "failed: ['raf.durable']"
    assert lines[3].startswith("error: MissingExtraError True dbos durable runs needs the")
    assert install_hint("durable") in lines[3]


def test_the_error_is_both_kinds_and_keeps_its_message_and_fields() -> None:
    error = MissingExtraError("durable runs", "durable", "dbos")
    assert isinstance(error, RafError)
    assert isinstance(error, ModuleNotFoundError)
    assert error.name == "dbos"
    assert (error.feature, error.extra, error.module) == ("durable runs", "durable", "dbos")
    assert str(error) == (
        f"durable runs needs the 'durable' extra (module 'dbos' is missing): "
        f"{install_hint('durable')}"
    )
    assert str(MissingExtraError("tracing", "otel")).startswith("tracing needs the 'otel' extra: ")
