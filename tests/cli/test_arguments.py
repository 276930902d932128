"""The argument types commands share: `raf ask --max-tokens` and `raf eval --repeat`
read whole numbers >= 1 the same way, each refusal saying what was wanted."""

from __future__ import annotations

import argparse

import pytest

from raf.cli.arguments import positive


def test_a_whole_number_of_one_or_more_is_read() -> None:
    assert positive()("1") == 1
    assert positive("tokens")(" 42 ") == 42


@pytest.mark.parametrize("text", ["0", "-3", "x", "1.5", ""])
def test_anything_else_is_refused_saying_what_was_wanted(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as plain:
        positive()(text)
    assert str(plain.value) == f"{text!r} is not a whole number >= 1"
    with pytest.raises(argparse.ArgumentTypeError) as counted:
        positive("tokens")(text)
    assert str(counted.value) == f"{text!r} is not a whole number of tokens >= 1"


def test_a_parser_refuses_with_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="raf eval")
    parser.add_argument("--repeat", type=positive(), default=1)
    assert parser.parse_args(["--repeat", "3"]).repeat == 3
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["--repeat", "0"])
    assert stopped.value.code == 2
    assert "argument --repeat: '0' is not a whole number >= 1" in capsys.readouterr().err
