"""`raf serve --token-file`: as ssh treats a private key, a token file other users can
read or change is refused with the fix (chmod 600); one its group can read is taken
with a warning; a link to a device or a kernel file is refused like an attachment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from raf.cli.serve import read_token_file
from raf.core.errors import ConfigurationError

from .helpers import raf, write_agent


def _tokens(tmp_path: Path, mode: int) -> Path:
    path = tmp_path / "tokens"
    path.write_text("alpha\n\n beta \n", encoding="utf-8")
    os.chmod(path, mode)
    return path


def test_a_private_token_file_is_read(tmp_path: Path) -> None:
    assert read_token_file(str(_tokens(tmp_path, 0o600))) == ["alpha", "beta"]
    assert read_token_file(str(_tokens(tmp_path, 0o400))) == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("mode", "words"), [(0o644, "read or change"), (0o604, "read or change"), (0o620, "change")]
)
def test_a_token_file_others_can_use_is_refused(tmp_path: Path, mode: int, words: str) -> None:
    path = _tokens(tmp_path, mode)
    with pytest.raises(
        ConfigurationError, match=f"mode {mode:04o}: other users can {words}"
    ) as exc:
        read_token_file(str(path))
    assert f"chmod 600 {path}" in str(exc.value)


def test_a_group_readable_token_file_is_taken_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert read_token_file(str(_tokens(tmp_path, 0o640))) == ["alpha", "beta"]
    assert "its group can read the tokens" in capsys.readouterr().err


def test_a_token_file_that_is_no_file_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "tokens"
    link.symlink_to("/proc/self/environ")
    with pytest.raises(ConfigurationError, match="kernel file under /proc"):
        read_token_file(str(link))
    with pytest.raises(ConfigurationError, match="cannot be read"):
        read_token_file(str(tmp_path / "missing"))


@pytest.mark.slow
def test_raf_serve_refuses_a_world_readable_token_file(tmp_path: Path) -> None:
    write_agent(tmp_path, "name: helper\ninstructions: Be brief.\n")
    path = _tokens(tmp_path, 0o644)
    done = raf(tmp_path, "serve", "agent.yaml", "--token-file", str(path), "--port", "0")
    assert done.returncode == 1
    assert "has mode 0644: other users can read or change the tokens" in done.stderr
    assert f"chmod 600 {path}" in done.stderr
