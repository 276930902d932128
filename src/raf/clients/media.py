"""Images, audio and documents in messages: checked before any request, then shaped
for each API.

A `DataContent` holds either a URL (`https://...`, sent as a link where the API takes
links) or the bytes themselves as a `data:` URI. Its media type must be one the API
accepts and its size within `MAX_BYTES`; anything else is a `MediaError` naming the
content and what is allowed, raised before a request leaves the process.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raf.core.contents import DataContent
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage

__all__ = [
    "IMAGE_TYPES",
    "MAX_BYTES",
    "Media",
    "MediaError",
    "attachment",
    "chat_completions_part",
    "check_messages",
    "decode",
    "responses_part",
]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
AUDIO_TYPES = ("audio/wav", "audio/x-wav", "audio/mpeg", "audio/mp3")
DOCUMENT_TYPES = ("application/pdf",)
KNOWN_TYPES = (*IMAGE_TYPES, *AUDIO_TYPES, *DOCUMENT_TYPES)
"""Every media type some client of raf sends."""
MAX_BYTES = {"image": 20 * 1024 * 1024, "audio": 25 * 1024 * 1024, "document": 32 * 1024 * 1024}
"""The largest content of each family sent (the strictest of the providers' own limits)."""


class MediaError(ConfigurationError):
    """An image, audio or document that cannot be sent: unreadable, too large, of a type
    the model's API does not take."""


@dataclass(frozen=True, slots=True)
class Media:
    """A data content decoded: its media type, and its bytes or its URL."""

    media_type: str
    data: bytes | None = None
    url: str | None = None

    @property
    def family(self) -> str:
        """image, audio or document."""
        if self.media_type.startswith("image/"):
            return "image"
        if self.media_type.startswith("audio/"):
            return "audio"
        return "document"

    @property
    def base64(self) -> str:
        return base64.b64encode(self.data or b"").decode("ascii")

    @property
    def data_uri(self) -> str:
        return f"data:{self.media_type};base64,{self.base64}"

    @property
    def filename(self) -> str:
        extension = mimetypes.guess_extension(self.media_type) or ""
        return f"attachment{extension}"


def _describe(content: DataContent) -> str:
    uri = content.uri
    return f"{uri[:40]}..." if len(uri) > 40 else uri


def decode(content: DataContent, accepted: Iterable[str], *, api: str) -> Media:
    """The content's type and bytes (or URL), checked against what `api` accepts."""
    uri = content.uri
    media_type = content.media_type
    if uri.startswith("data:"):
        header, sep, payload = uri[5:].partition(",")
        if not sep or not header.endswith(";base64"):
            raise MediaError(
                f"data content {_describe(content)!r} is not a base64 data URI "
                "(data:<type>;base64,<bytes>)"
            )
        media_type = media_type or header.removesuffix(";base64") or None
        try:
            data: bytes | None = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise MediaError(
                f"data content of type {media_type!r} carries bytes that are not base64"
            ) from None
        url = None
    elif uri.startswith(("https://", "http://")):
        media_type = media_type or mimetypes.guess_type(uri)[0]
        data, url = None, uri
    else:
        raise MediaError(
            f"data content {_describe(content)!r}: give a data: URI or an http(s) URL "
            "(raf.clients.media.attachment reads a file into one)"
        )
    accepted = tuple(accepted)
    if not media_type or media_type not in accepted:
        raise MediaError(
            f"{api} does not take data content of type {media_type or 'unknown'!r} "
            f"({_describe(content)!r}); it takes {', '.join(accepted) or 'no data content'}"
        )
    media = Media(media_type=media_type, data=data, url=url)
    limit = MAX_BYTES[media.family]
    if data is not None and len(data) > limit:
        raise MediaError(
            f"{media.family} of type {media_type} is {len(data)} bytes; the most sent is "
            f"{limit} bytes ({limit // (1024 * 1024)} MiB)"
        )
    return media


def check_messages(messages: Sequence[ChatMessage], accepted: Iterable[str], *, api: str) -> None:
    """Check every data content of `messages` before a request is built."""
    allowed = tuple(accepted)
    for message in messages:
        for content in message.contents:
            if isinstance(content, DataContent):
                decode(content, allowed, api=api)


def attachment(
    source: str | Path | bytes,
    media_type: str | None = None,
    *,
    root: str | Path | None = None,
) -> DataContent:
    """A file (or bytes) as a data content: its type guessed from the name unless given.

    A file is read as the file tools read one: a regular file only (a FIFO, a device, a
    folder or a kernel file under `/proc`, `/sys` or `/dev` is refused, wherever a link
    leads), through a reader that stops at the size limit. `root`: when given, the file
    must lie inside that folder once links are followed. An unreadable or refused file,
    an unknown type or one too large is a `MediaError` naming the file and the reason."""
    if isinstance(source, bytes):
        name = "bytes"
    else:
        path = Path(source)
        name = str(path)
        media_type = media_type or mimetypes.guess_type(path.name)[0]
    known = KNOWN_TYPES
    if media_type not in known:  # before a byte of a file is read
        raise MediaError(
            f"attachment {name!r} has type {media_type or 'unknown'!r}; raf sends "
            f"{', '.join(known)} (pass media_type= when the name does not say)"
        )
    if isinstance(source, bytes):
        data = source
    else:
        from raf.core.safe_read import FileRefusedError, FileTooLargeError, read_regular_file

        family = "image" if media_type.startswith("image/") else "document"
        family = "audio" if media_type.startswith("audio/") else family
        try:
            data = read_regular_file(path, limit=MAX_BYTES[family], root=root)
        except FileTooLargeError as exc:
            article = "an" if family[0] in "aeiou" else "a"
            raise MediaError(
                f"attachment refused: {exc} (the limit for {article} {family})"
            ) from None
        except FileRefusedError as exc:
            raise MediaError(f"attachment refused: {exc}") from None
        except OSError as exc:
            raise MediaError(f"cannot read attachment {name!r}: {exc.strerror or exc}") from None
    content = DataContent(
        uri=f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}",
        media_type=media_type,
    )
    decode(content, known, api="raf")  # the size check
    return content


OPENAI_TYPES = (*IMAGE_TYPES, *AUDIO_TYPES, *DOCUMENT_TYPES)


def _audio_format(media_type: str) -> str:
    return "wav" if "wav" in media_type else "mp3"


def chat_completions_part(content: DataContent) -> dict[str, Any]:
    """A chat-completions content part: `image_url`, `input_audio` or `file`."""
    media = decode(content, OPENAI_TYPES, api="chat completions")
    if media.family == "image":
        return {"type": "image_url", "image_url": {"url": media.url or media.data_uri}}
    if media.url is not None:
        raise MediaError(
            f"chat completions takes {media.family}s as bytes, not links ({media.url!r}); "
            "read it with raf.clients.media.attachment"
        )
    if media.family == "audio":
        return {
            "type": "input_audio",
            "input_audio": {"data": media.base64, "format": _audio_format(media.media_type)},
        }
    return {"type": "file", "file": {"filename": media.filename, "file_data": media.data_uri}}


RESPONSES_TYPES = (*IMAGE_TYPES, "application/pdf")


def responses_part(content: DataContent) -> dict[str, Any]:
    """A Responses input part: `input_image` or `input_file` (it takes no audio input)."""
    media = decode(content, RESPONSES_TYPES, api="the OpenAI Responses API")
    if media.family == "image":
        return {"type": "input_image", "image_url": media.url or media.data_uri, "detail": "auto"}
    if media.url is not None:
        return {"type": "input_file", "file_url": media.url}
    return {"type": "input_file", "filename": media.filename, "file_data": media.data_uri}


ANTHROPIC_TYPES = (*IMAGE_TYPES, "application/pdf")


def anthropic_block(content: DataContent) -> dict[str, Any]:
    """A Messages API `image` or `document` block, by bytes or by URL (it takes no audio)."""
    media = decode(content, ANTHROPIC_TYPES, api="Anthropic's Messages API")
    kind = "image" if media.family == "image" else "document"
    if media.url is not None:
        return {"type": kind, "source": {"type": "url", "url": media.url}}
    source = {"type": "base64", "media_type": media.media_type, "data": media.base64}
    return {"type": kind, "source": source}


def result_parts(
    result: Any,
    part: Callable[[DataContent], dict[str, Any]],
    text: Callable[[str], dict[str, Any]],
) -> list[dict[str, Any]]:
    """A tool result that holds data contents as an API's parts, in order: data through
    `part`, anything else as text through `text`."""
    from raf.core.contents import result_to_text

    items = result if isinstance(result, list) else [result]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, DataContent):
            out.append(part(item))
        elif item is not None:
            out.append(text(result_to_text(item)))
    return out
