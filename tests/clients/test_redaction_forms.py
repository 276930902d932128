"""A known secret is cut out of messages and logs in the forms it is echoed in: any
case, base64 at any offset (a key inside `Basic user:key`), hex, URL-encoded, and split
across lines, chunks or concatenated strings. The SDKs' loggers that print request
headers stay at INFO unless the user set them, and what they print is redacted."""

from __future__ import annotations

import base64
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
