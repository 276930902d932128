"""A known secret is cut out of messages and logs in the forms it is echoed in: any
case, base64 at any offset (a key inside `Basic user:key`), hex, URL-encoded, and split
across lines, chunks or concatenated strings. The SDKs' loggers that print request
headers stay at INFO unless the user set them, and what they print is redacted."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from raf.clients.bedrock.client import BedrockClient
from raf.clients.errors import redact, secret_forms
from raf.clients.openai.client import OpenAIChatClient
from raf.core.errors import ModelError
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from tests.clients.bedrock_peer import ACCESS_KEY, SECRET_KEY, BedrockPeer
from tests.clients.faultserver import FaultServer, Reply

KEY = "sk-proj-Q7w9TOPSECRETvalue42"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKEN1234567890"


def _echoes(secret: str) -> dict[str, str]:
    raw = secret.encode()
    return {
        "as is": secret,
        "upper-cased": secret.upper(),
        "lower-cased": secret.lower(),
        "base64": base64.b64encode(raw).decode(),
        "base64 url-safe": base64.urlsafe_b64encode(raw).decode(),
        "base64 in basic auth": base64.b64encode(b"user:" + raw).decode(),
        "base64 at offset 1": base64.b64encode(b"x" + raw + b"!").decode(),
        "base64 at offset 2": base64.b64encode(b"xy" + raw).decode(),
        "hex": raw.hex(),
        "hex upper": raw.hex().upper(),
        "url-encoded": quote(secret, safe=""),
        "split by a line break": secret[:9] + "\n" + secret[9:],
        "split by a zero-width space": secret[:5] + "\u200b" + secret[5:],
        "joined from strings": f"'{secret[:12]}' + '{secret[12:]}'",
    }


def _leaks(text: str, secret: str) -> bool:
    """Whether `text` still carries `secret`, or 8 characters of it, in any echo form."""
    lowered = text.lower()
    raw = secret.encode()
    cores = [raw.hex(), secret, quote(secret, safe="")]
    cores += [base64.b64encode(b"\0" * n + raw).decode()[4 if n else 0 : 20] for n in range(3)]
    for core in cores:
        for start in range(0, len(core) - 12):
            if core[start : start + 12].lower() in lowered:
                return True
    return False


@pytest.mark.parametrize("form", list(_echoes(KEY)))
def test_a_known_secret_is_redacted_in_every_form(form: str) -> None:
    text = f"upstream said: {_echoes(KEY)[form]} (request 7)"
    cleaned = redact(text, [KEY])
    assert "***" in cleaned and not _leaks(cleaned, KEY), cleaned
    assert cleaned.startswith("upstream said: ") and cleaned.endswith("(request 7)")


def test_text_without_the_secret_is_left_alone() -> None:
    text = "The year 2024; proj-Q7 is a project; c2stcHJvai1R is a word; 736b2d70 a hex."
    assert redact(text, [KEY]) == text
    assert all(len(form) >= 4 for form in secret_forms(KEY))


async def test_a_provider_that_echoes_the_key_encoded_gets_it_cut(fault: FaultServer) -> None:
    client = OpenAIChatClient("m", base_url=f"{fault.url}/v1", api_key=KEY)
    try:
        for form, echo in _echoes(KEY).items():
            fault.reply(Reply(status=400, json_body={"error": {"message": f"bad: {echo}"}}))
            with pytest.raises(ModelError) as info:
                await client.get_response([ChatMessage.user("x")], ChatOptions())
            assert not _leaks(str(info.value), KEY), (form, str(info.value))
    finally:
        await client.aclose()


TOKEN = "team-7f3a9c2e-Q7w9-TOPSECRET"
"""A secret not shaped like any provider's key: only knowing it finds its pieces."""

CUT_SHORT = {
    "start, stars and dots, end": ("sk-proj-Q7w***...ue42", KEY),
    "OpenAI's echo: start, stars, last four": ("sk-proj-" + "*" * 40 + "ue42", KEY),
    "start and an ellipsis": ("sk-proj-Q7w9T\u2026", KEY),
    "its start cut off, marked": ("...OPSECRETvalue42", KEY),
    "its start cut off, unmarked": ("w9TOPSECRETvalue42", KEY),
    "its end cut off, unmarked": ("sk-proj-Q7w9TOP", KEY),
    "start and end of a token": ("team-7f3***...CRET", TOKEN),
    "a token's first characters, dots": ("team-7f...", TOKEN),
    "a token's last characters, stars": ("****-TOPSECRET", TOKEN),
    "a token upper-cased and cut": ("TEAM-7F3A9C2E-Q7", TOKEN),
}


@pytest.mark.parametrize("form", list(CUT_SHORT))
def test_a_secret_echoed_cut_short_is_masked_with_its_cut_mark(form: str) -> None:
    echo, secret = CUT_SHORT[form]
    text = f"Incorrect API key provided: {echo} (find your key in settings)."
    assert redact(text, [secret]) == (
        "Incorrect API key provided: *** (find your key in settings)."
    )


def test_a_key_shaped_echo_cut_short_is_masked_unknown() -> None:
    for echo in ("sk-abc***...xyz", "sk-...JMbA", "sk-proj-****************JMbA", "sk-\u2026x9"):
        assert redact(f"bad key {echo} given") == "bad key *** given", echo


def test_pieces_of_a_secret_that_are_no_echo_are_left_alone() -> None:
    text = (
        "Loading... done; team work *** stays; 7f3a is hex; a *** team; "
        "values go... here; SECRET is a word"
    )
    assert redact(text, [TOKEN]) == text


MULTILINE = "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END KEY-----"


@pytest.mark.parametrize(
    "shown",
    [
        json.dumps({"key": MULTILINE}),
        json.dumps(json.dumps({"key": MULTILINE})),
        json.dumps({"key": MULTILINE}, ensure_ascii=False).replace("\\n", "\\r\\n"),
        json.dumps({"key": MULTILINE})[:40] + "...",
    ],
    ids=["json", "json in json", "crlf", "cut short"],
)
def test_a_secret_with_a_line_break_is_masked_as_json_writes_it(shown: str) -> None:
    cleaned = redact(f"upstream said: {shown}", [MULTILINE])
    assert "MIIEvQIBADANBgkqhkiG9w0B" not in cleaned and "BEGIN KEY" not in cleaned, cleaned
    assert cleaned.startswith("upstream said: ")


def test_a_short_secret_with_a_line_break_is_masked_as_json_writes_it() -> None:
    short = "pw\nQZ"  # under 8 characters even escaped: only its exact forms are looked for
    for shown in (json.dumps({"pass": short}), json.dumps(json.dumps({"pass": short}))):
        assert "QZ" not in redact(shown, [short]), shown


def test_a_key_split_by_a_json_line_break_is_masked() -> None:
    for joint in ("\\n", "\\r\\n", "\\\\n", "\\t"):
        text = json.dumps({"message": f"bad key {KEY[:10]}{joint}{KEY[10:]} given"})
        text = text.replace("\\\\", "\\")  # as the provider wrote it, not escaped again
        cleaned = redact(text, [KEY])
        assert "bad key *** given" in cleaned and not _leaks(cleaned, KEY), (joint, cleaned)


async def test_a_provider_that_echoes_the_key_cut_short_gets_it_masked(
    fault: FaultServer,
) -> None:
    client = OpenAIChatClient("m", base_url=f"{fault.url}/v1", api_key=TOKEN)
    try:
        for form, (echo, secret) in CUT_SHORT.items():
            if secret != TOKEN:
                continue
            said = f"Incorrect API key provided: {echo} (see settings)"
            fault.reply(Reply(status=401, json_body={"error": {"message": said}}))
            with pytest.raises(ModelError) as info:
                await client.get_response([ChatMessage.user("x")], ChatOptions())
            assert "provided: *** (see settings)" in str(info.value), (form, str(info.value))
    finally:
        await client.aclose()


@pytest.fixture
def peer() -> Iterator[BedrockPeer]:
    with BedrockPeer() as server:
        yield server


@pytest.fixture
def sdk_levels() -> Iterator[None]:
    """Each test starts with the SDK loggers unset, as in a fresh process."""
    names = ("botocore", "boto3", "urllib3", "openai", "anthropic")
    before = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.NOTSET)
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)


class _Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def root_debug() -> Iterator[_Everything]:
    """An application that logs everything at DEBUG (`basicConfig(level=DEBUG)`)."""
    handler, root = _Everything(), logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    root.setLevel(old)


async def _converse(peer: BedrockPeer) -> None:
    client = BedrockClient(
        "anthropic.claude-peer-v1:0",
        region="us-east-1",
        endpoint_url=peer.url,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        aws_session_token=SESSION_TOKEN,
    )
    try:
        await client.get_response([ChatMessage.user("hello")], ChatOptions())
    finally:
        await client.aclose()


async def test_botocore_keeps_the_session_token_out_of_debug_logs(
    peer: BedrockPeer, sdk_levels: None, root_debug: _Everything
) -> None:
    await _converse(peer)
    assert logging.getLogger("botocore").level == logging.INFO
    assert not any(SESSION_TOKEN in line for line in root_debug.lines)
    assert not any(line.startswith("Sending http request") for line in root_debug.lines)


async def test_a_user_who_asks_for_botocore_debug_gets_it_redacted(
    peer: BedrockPeer, sdk_levels: None, root_debug: _Everything
) -> None:
    logging.getLogger("botocore").setLevel(logging.DEBUG)  # the user asks
    await _converse(peer)
    assert logging.getLogger("botocore").level == logging.DEBUG  # theirs, kept
    sent = [line for line in root_debug.lines if "Sending http request" in line]
    assert sent, "botocore logged no request at DEBUG"
    assert not any(SESSION_TOKEN in line for line in root_debug.lines)
    assert not any(SECRET_KEY in line for line in root_debug.lines)


async def test_raf_sdk_debug_leaves_the_levels_alone(
    peer: BedrockPeer, sdk_levels: None, root_debug: _Everything, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAF_SDK_DEBUG", "1")
    await _converse(peer)
    assert logging.getLogger("botocore").level == logging.NOTSET
    assert not any(SESSION_TOKEN in line for line in root_debug.lines)
