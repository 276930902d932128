"""The one sanitiser for text from outside raf printed on a terminal."""

from __future__ import annotations

import json

import pytest

from raf.cli.terminal_text import json_text_safe, terminal_safe

HOSTILE = [
    ("\x1b[30;40mhidden\x1b[0m", "hidden"),  # black on black
    ("a\x1b[8mconcealed\x1b[28m", "aconcealed"),  # conceal
    ("\x1b[2J\x1b[Hcleared", "cleared"),  # clear screen, cursor home
    ("up\x1b[3Aover", "upover"),  # cursor up
    ("\x1b]0;owned title\x07text", "text"),  # OSC window title, BEL-ended
    ("\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink
    ("\x1b]52;c;ZXZpbA==\x07paste", "paste"),  # OSC 52 clipboard write
    ("\x1bP+q544e\x1b\\dcs", "dcs"),  # DCS request
    ("\x1b_apc\x1b\\after", "after"),  # APC string
    ("\x9b31mc1csi", "c1csi"),  # 8-bit CSI
    ("\x9d0;t\x9cosc8", "osc8"),  # 8-bit OSC ended by 8-bit ST
    ("\x1bcreset", "reset"),  # RIS: full terminal reset
    ("\x1b(0line", "line"),  # charset switch
    ("over\rwrite", "overwrite"),  # carriage return rewrites the line
    ("back\x08\x08space", "backspace"),
    ("bell\x07\x00nul\x7fdel", "bellnuldel"),
    ("\u202eevil\u202c", "evil"),  # right-to-left override
    ("\u2066iso\u2069\u200f\u061c", "iso"),  # isolates and marks
    ("zero\u200bwidth\ufeff\u2060", "zerowidth"),
    ("tag\U000e0041\U000e007f", "tag"),  # tag characters
    ("soft\u00adhyphen", "softhyphen"),
    ("line\u2028sep\u2029", "linesep"),
]


@pytest.mark.parametrize(("hostile", "shown"), HOSTILE)
def test_control_sequences_and_invisible_formatting_are_removed(hostile, shown):
    assert terminal_safe(hostile) == shown


def test_newlines_tabs_and_ordinary_text_stay():
    text = "línea\tuno\nzweite Zeile — 日本語 👩\u200d💻 مرحبا\n"
    assert terminal_safe(text) == text
    assert terminal_safe("a\r\nb") == "a\nb"


def test_a_sequence_cut_between_stream_pieces_prints_as_plain_text():
    pieces = ["fake prompt [y/N] \x1b", "[8m", "real prompt"]
    shown = "".join(terminal_safe(p) for p in pieces)
    assert "\x1b" not in shown
    assert shown == "fake prompt [y/N] [8mreal prompt"


def test_unterminated_string_command_loses_its_introducer_and_stays_visible():
    assert terminal_safe("\x1b]0;never ended") == "0;never ended"


def test_nothing_a_terminal_acts_on_survives_any_code_point():
    every = "".join(chr(c) for c in range(0x0, 0x3000))
    out = terminal_safe(every + "\U000e0001\U000e0020")
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in out)
    assert not any(0x7F <= ord(c) <= 0x9F for c in out)
    assert not any(c in out for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert "\U000e0001" not in out


def test_json_text_keeps_the_value_but_escapes_what_a_terminal_acts_on():
    value = {"text": "a\x1b[8mb\u202e\x9bc\U000e0041", "n": 1}
    line = json.dumps(value, ensure_ascii=False)
    safe = json_text_safe(line)
    assert json.loads(safe) == value
    assert terminal_safe(safe) == safe  # nothing left to remove
    assert json_text_safe('{"plain": "text"}') == '{"plain": "text"}'


def test_the_approval_block_is_raf_s_own_and_says_what_runs_where(tmp_path, monkeypatch):
    from raf.cli._render import approval_prompt, describe_request
    from raf.core.contents import ApprovalRequestContent

    monkeypatch.chdir(tmp_path)
    request = ApprovalRequestContent(
        call_id="c1",
        name="run_command",
        arguments={"command": "rm -rf ~\x1b[8m", "cwd": "..", "outside_workspace": True},
        reason="an MCP server asks:\x1b[2J\x1b]0;ok\x07 \u202eapprove all",
    )
    block = approval_prompt(request)
    assert block.startswith("\n── raf asks for approval ──\n")
    assert "\x1b" not in block and "\u202e" not in block
    assert "tool:      run_command" in block
    assert "cwd .." in block and "OUTSIDE the workspace sandbox" in block
    assert f"raf runs in {tmp_path}" in block
    assert "why:       an MCP server asks:" in block
    assert "\x1b" not in describe_request(request)
