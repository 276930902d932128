"""What an editor is shown of raf's tool calls over ACP, and what it may put in a prompt.

A tool call is shown with a kind (ACP's: read, edit, delete, move, search, execute,
think, fetch, other), the files it touches (`locations`) and, for an edit, a diff; its
result is shown as text content. A prompt's blocks (text, resource links, embedded
resources, images, audio) become one user message the model sees: text as text, a
resource link as a line naming it, an embedded text resource as its text in a
`<context>` element, images, audio and binary resources as data contents, each checked
against what the agent's model takes and against raf's size limits before the run starts.
The blocks themselves are kept in the session, so `session/load` replays them as sent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from raf.core.agent_like import AgentLike, own_providers, own_tools
from raf.core.contents import Content, DataContent, FunctionResultContent, TextContent
from raf.core.function_tool import TOOL_ACTIONS
from raf.core.messages import ChatMessage, Role
from raf.core.tools import Tool
from raf.serve.catalog import provider_tools
from raf.serve.errors import ServeError

if TYPE_CHECKING:
    from acp import schema

    from raf.core.sessions import AgentSession

MAX_TEXT_RESOURCE_BYTES = 4 * 1024 * 1024
"""The largest embedded text resource a prompt may carry (UTF-8 bytes): about a million
tokens, past any model's context."""

_NAME_KINDS: dict[str, str] = {
    **dict.fromkeys(("read", "cat", "view", "list", "ls", "inspect", "stat", "head"), "read"),
    **dict.fromkeys(
        ("write", "edit", "create", "update", "patch", "replace", "append", "insert", "save"),
        "edit",
    ),
    **dict.fromkeys(("make", "mkdir", "modify"), "edit"),
    **dict.fromkeys(("delete", "remove", "rm", "rmdir", "unlink"), "delete"),
    **dict.fromkeys(("move", "rename", "mv"), "move"),
    **dict.fromkeys(("search", "grep", "find", "glob", "query", "lookup"), "search"),
    **dict.fromkeys(
        ("run", "exec", "execute", "shell", "bash", "command", "code", "interpreter", "terminal"),
        "execute",
    ),
    **dict.fromkeys(("think", "plan", "reason", "reflect"), "think"),
    **dict.fromkeys(("fetch", "download", "http", "url", "browse", "curl", "scrape"), "fetch"),
}
"""Words of a tool's name and the kind each says, for tools that declare nothing."""

_ACCESS_KINDS = {"delete": "delete", "write": "edit", "execute": "execute"}


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^a-zA-Z0-9]+", spaced.lower()) if w]


def kind_from_name(name: str) -> str:
    """The kind a tool's name says: its first word that names one (`read_file`: read,
    `web_search`: search, `run_command`: execute), or other."""
    for word in _words(name):
        if word in _NAME_KINDS:
            return _NAME_KINDS[word]
    return "other"


def _chain(tool: object) -> list[object]:
    """The tool and those it wraps (approval wrappers keep theirs as `inner`)."""
    chain = [tool]
    for _ in range(16):
        inner = getattr(chain[-1], "inner", None)
        if inner is None:
            break
        chain.append(inner)
    return chain


def _uses(tool: object, arguments: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """(path, access) of every path a workspace tool's call touches; None for a tool
    that does not say, or arguments it would refuse."""
    model = getattr(tool, "Arguments", None)
    uses = getattr(tool, "uses", None)
    if model is None or not callable(uses):
        return None
    try:
        found = uses(model.model_validate(dict(arguments)))
    except Exception:  # arguments the tool refuses: it answers them itself
        return None
    return [(str(u.path), str(u.access)) for u in found]


def _root(tool: object) -> Path:
    scope = getattr(tool, "scope", None)
    root = getattr(scope, "root", None)
    return Path(root) if root is not None else Path.cwd()


@dataclass(kw_only=True, slots=True)
class ShownCall:
    """A tool call as an editor shows it."""

    kind: str = "other"
    locations: list[str] = field(default_factory=list)
    """Absolute paths the call touches."""
    diffs: list[tuple[str, str | None, str]] = field(default_factory=list)
    """(path, old text or None for a whole new file, new text) of an edit."""

    @property
    def tool_kind(self) -> schema.ToolKind:
        """The kind as ACP's type."""
        return cast("schema.ToolKind", self.kind)

    def location_models(self) -> list[schema.ToolCallLocation]:
        from acp.schema import ToolCallLocation

        return [ToolCallLocation(path=p) for p in self.locations]

    def diff_content(self) -> list[Any]:
        from acp import tool_diff_content

        return [tool_diff_content(path, new, old) for path, old, new in self.diffs]

    def result_content(self, result: FunctionResultContent) -> list[Any]:
        """What the editor shows of the call's result: the diff of a successful edit,
        then the result (or error) as text."""
        from acp import text_block, tool_content

        shown = [] if result.error is not None else self.diff_content()
        return [*shown, tool_content(text_block(result.as_text()))]


def show_call(tool: object | None, name: str, arguments: Mapping[str, Any] | None) -> ShownCall:
    """How to show a call of `tool` (None: a tool known only by its name).

    The kind is the tool's declared `action` when it has one; else what the paths a
    workspace tool's call touches say (a deletion and a write: move; a deletion: delete;
    a write: edit; running: execute; reading only: read, or search when the name says
    so); else what the name says."""
    chain = _chain(tool) if tool is not None else []
    args = dict(arguments or {})
    inner: object | None = None
    uses: list[tuple[str, str]] | None = None
    for wrapped in chain:  # the first of them that says which paths a call uses
        uses = _uses(wrapped, args)
        if uses is not None:
            inner = wrapped
            break
    by_name = kind_from_name(name)
    declared = [a for a in (getattr(t, "action", None) for t in chain) if a in TOOL_ACTIONS]
    if declared:
        kind = str(declared[0])
    elif uses:
        accesses = {access for _, access in uses}
        if {"delete", "write"} <= accesses:
            kind = "move"
        elif accesses == {"read"}:
            kind = "search" if by_name == "search" else "read"
        else:
            found = [_ACCESS_KINDS[a] for a in ("delete", "write", "execute") if a in accesses]
            kind = found[0] if found else by_name
    else:
        kind = by_name
    shown = ShownCall(kind=kind)
    if uses and inner is not None:
        root = _root(inner)
        for path, _ in uses:
            absolute = os.path.normpath(root / os.path.expanduser(path))
            if absolute not in shown.locations:
                shown.locations.append(absolute)
    if kind == "edit" and shown.locations:
        path = shown.locations[0]
        if isinstance(args.get("content"), str):
            shown.diffs.append((path, None, args["content"]))
        elif isinstance(args.get("old_string"), str) and isinstance(args.get("new_string"), str):
            shown.diffs.append((path, args["old_string"], args["new_string"]))
    return shown


def agent_tools(agent: AgentLike) -> dict[str, Tool]:
    """The tools an agent's model is offered, by name: its own and those its context
    providers declare (a provider's tools known only at run time are left out)."""
    found: dict[str, Tool] = {}
    for provider in own_providers(agent):
        for tool in provider_tools(provider) or []:
            found.setdefault(tool.name, tool)
    for tool in own_tools(agent):
        found[tool.name] = tool
    return found


# -- prompts ----------------------------------------------------------------------------


def model_media(agent: AgentLike) -> tuple[str, ...] | None:
    """The media types the agent's model declares it takes (`media_types` on its chat
    client or a client it wraps as `inner`); None when none declares any (raf's own
    checks of type and size then apply, and the model's API has the last word)."""
    client = getattr(agent, "chat_client", None)
    for _ in range(64):
        if client is None:
            return None
        declared = getattr(client, "media_types", None)
        if declared is not None:
            return tuple(str(t) for t in declared)
        client = getattr(client, "inner", None)
    return None


def _refused(where: str, what: str, message: str) -> ServeError:
    return ServeError(422, "invalid_prompt", f"{where} ({what}): {message}")


def _data(
    where: str, what: str, media_type: str, payload: str, media: tuple[str, ...] | None
) -> DataContent:
    """A base64 payload as a data content, checked (type, size, encoding) now."""
    from raf.clients.media import KNOWN_TYPES, MediaError, decode

    if media is not None and media_type not in media:
        takes = ", ".join(media) if media else "text only"
        raise _refused(
            where,
            what,
            f"the agent's model does not take {media_type} (it takes {takes}); send the "
            "content as text, or run the agent with a model that takes it",
        )
    content = DataContent(uri=f"data:{media_type};base64,{payload}", media_type=media_type)
    try:
        decode(content, KNOWN_TYPES, api="raf acp")
    except MediaError as exc:
        raise _refused(where, what, str(exc)) from None
    return content


def _link_text(block: Any) -> str:
    details = [d for d in (block.title, block.mime_type, block.description) if d]
    if block.size is not None:
        details.append(f"{block.size} bytes")
    extra = f" ({'; '.join(details)})" if details else ""
    return f"[{block.name}]({block.uri}){extra}"


def prompt_message(blocks: Sequence[Any], media: tuple[str, ...] | None) -> ChatMessage:
    """A prompt's blocks as the user message the model sees; a block the model cannot
    take, or one too large, is a ServeError naming it (`prompt[i]`) and the limit."""
    texts: list[str] = []
    data: list[Content] = []
    for index, block in enumerate(blocks):
        where = f"prompt[{index}]"
        kind = block.type
        if kind == "text":
            texts.append(block.text)
        elif kind == "resource_link":
            texts.append(_link_text(block))
        elif kind == "resource":
            resource = block.resource
            what = f"resource {resource.uri}"
            if hasattr(resource, "text"):
                size = len(resource.text.encode("utf-8"))
                if size > MAX_TEXT_RESOURCE_BYTES:
                    raise _refused(
                        where,
                        what,
                        f"the text is {size} bytes; the most a prompt takes is "
                        f"{MAX_TEXT_RESOURCE_BYTES} bytes ({MAX_TEXT_RESOURCE_BYTES >> 20} "
                        "MiB): send a part of it, or a resource link",
                    )
                texts.append(f'<context uri="{resource.uri}">\n{resource.text}\n</context>')
            else:
                media_type = resource.mime_type or "application/octet-stream"
                data.append(_data(where, f"{what}, {media_type}", media_type, resource.blob, media))
        elif kind in ("image", "audio"):
            what = f"{kind}, {block.mime_type}"
            data.append(_data(where, what, block.mime_type, block.data, media))
        else:
            raise _refused(
                where, str(kind), "raf takes text, resource_link, resource, image and audio blocks"
            )
    contents: list[Content] = [TextContent(text="\n\n".join(texts))] if texts else []
    return ChatMessage(role=Role.USER, contents=[*contents, *data])


# -- prompts kept for replay -----------------------------------------------------------

PROMPTS_KEY = "raf_acp_prompts"
"""Session metadata key under which each prompt's blocks are kept as the editor sent
them, by the id of the user message the prompt became."""

_HELD = "rafData"
"""In a kept block, the place of its payload among the message's data contents: a
payload the message holds already (an image, audio, a binary resource) is not kept
twice."""


def kept_blocks(blocks: Sequence[Any]) -> list[dict[str, Any]]:
    """A prompt's blocks (each accepted by `prompt_message`) as JSON, for `session/load`
    to replay them as sent; a payload the user message holds as a data content is named
    by its place there instead of copied."""
    kept: list[dict[str, Any]] = []
    held = 0
    for block in blocks:
        data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
        payload = data.get("resource") if block.type == "resource" else data
        key = "data" if block.type in ("image", "audio") else "blob"
        if isinstance(payload, dict) and key in payload:
            del payload[key]
            data[_HELD] = held
            held += 1
        kept.append(data)
    return kept


def keep_prompt(session: AgentSession, message_id: str, blocks: list[dict[str, Any]]) -> None:
    """Keep a prompt's blocks in the session under its user message's id, dropping those
    of messages the session no longer holds."""
    found = session.metadata.get(PROMPTS_KEY)
    prompts = found if isinstance(found, dict) else {}
    ids = {m.message_id for m in session.messages if m.message_id is not None}
    prompts = {k: v for k, v in prompts.items() if k in ids}
    prompts[message_id] = blocks
    session.metadata[PROMPTS_KEY] = prompts


def replayed_prompt(session: AgentSession, message: ChatMessage) -> list[Any] | None:
    """The `user_message_chunk`s of a user message's prompt, one per block as the editor
    sent it; None when the session did not keep its blocks (a session from before they
    were kept, or a message not made from a prompt) or they no longer fit the message."""
    from acp.schema import UserMessageChunk
    from pydantic import ValidationError

    prompts = session.metadata.get(PROMPTS_KEY)
    kept = prompts.get(message.message_id) if isinstance(prompts, dict) else None
    if not isinstance(kept, list):
        return None
    payloads = [
        c.uri.partition(",")[2]
        for c in message.contents
        if isinstance(c, DataContent) and c.uri.startswith("data:")
    ]
    out: list[Any] = []
    try:
        for stored in kept:
            block = dict(stored)
            held = block.pop(_HELD, None)
            if held is not None:
                if block.get("type") == "resource":
                    block["resource"] = {**block["resource"], "blob": payloads[held]}
                else:
                    block["data"] = payloads[held]
            out.append(
                UserMessageChunk.model_validate(
                    {"sessionUpdate": "user_message_chunk", "content": block}
                )
            )
    except (ValidationError, IndexError, TypeError, KeyError):
        return None
    return out


def data_block(content: DataContent) -> Any | None:
    """A data content of a stored message as the prompt block it came from (an image or
    audio block); None for one held as a URL or of another family."""
    uri = content.uri
    if not uri.startswith("data:"):
        return None
    header, _, payload = uri[5:].partition(",")
    media_type = content.media_type or header.removesuffix(";base64")
    from acp import audio_block, image_block

    if media_type.startswith("image/"):
        return image_block(payload, media_type)
    if media_type.startswith("audio/"):
        return audio_block(payload, media_type)
    return None
