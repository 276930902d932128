"""One agent for an editor over the Agent Client Protocol on stdio (`raf acp FILE`).

Text, reasoning and tool calls stream as session updates; a call that needs approval
becomes a permission request to the editor, and its answer resumes the run. A tool call
is shown with its kind, the files it touches and (an edit) its diff, and its result as
text. A prompt may hold resource links, embedded resources and images beside text (see
`raf.serve.acp.parts`). Sessions are raf sessions, so `session/load` replays a stored
conversation: each prompt's blocks as the editor sent them, the agent's text, and its
tool calls with their results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from raf.core.agent_like import AgentLike, close_agent_like
from raf.core.call_approval import answerable_requests
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
)
from raf.core.errors import RafError
from raf.core.messages import ChatMessage, Role, new_id
from raf.core.responses import (
    ANSWER_PROBLEMS,
    AgentResponseUpdate,
    AnswerCheck,
    FinishReason,
    UpdateKind,
)
from raf.core.sessions import AgentSession, SessionStore
from raf.serve.acp.parts import (
    ShownCall,
    agent_tools,
    data_block,
    model_media,
    replayed_prompt,
    show_call,
)
from raf.serve.answer_text import SEPARATOR, StreamedText
from raf.serve.errors import ServeError, require_extra
from raf.serve.hosting import ANONYMOUS, AgentHost
from raf.serve.requests import error_for

if TYPE_CHECKING:
    import acp
    from acp import schema

STOP_REASONS: dict[FinishReason | None, str] = {
    FinishReason.LENGTH: "max_tokens",
    FinishReason.CONTENT_FILTER: "refusal",
    FinishReason.CANCELLED: "cancelled",
}
ALLOW, REJECT = "allow_once", "reject_once"


def _acp_error(exc: BaseException) -> Exception:
    """A failure as a JSON-RPC error the editor shows."""
    from acp import RequestError

    error = error_for(exc)
    return RequestError(-32000 if error.status >= 500 else -32602, error.message, error.body())


class RafAcpAgent:
    """The agent side of ACP over one hosted raf agent (sessions owned by the editor)."""

    def __init__(self, agent: AgentLike, store: SessionStore | None = None) -> None:
        require_extra("acp", "serving an agent over ACP")
        self.host = AgentHost([agent], store=store)
        self.name = agent.name
        self.client: acp.Client | None = None
        self.calls: dict[str, set[str]] = {}
        """Per session, the tool calls the editor has been told of (`tool_call` sent)."""
        self.tools = agent_tools(agent)
        self.media = model_media(agent)
        self.shown: dict[str, ShownCall] = {}
        """How each call the editor was told of is shown, by call id, until its result
        (an edit's diff holds the text written: kept past it, every write of a long
        editing session would stay in memory)."""
        self.turns: dict[str, bool] = {}
        """Sessions with a prompt in progress, and whether the editor cancelled it (a
        cancel can arrive before the run has started)."""

    def on_connect(self, conn: acp.Client) -> None:
        self.client = conn

    def _client(self) -> acp.Client:
        if self.client is None:  # pragma: no cover - the SDK connects before any request
            raise RuntimeError("no editor is connected")
        return self.client

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **_: Any,
    ) -> schema.InitializeResponse:
        from acp import PROTOCOL_VERSION
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            InitializeResponse,
        )

        from raf._version import __version__

        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=self._prompt_capabilities()
            ),
            agent_info=Implementation(name=self.name, title=self.name, version=__version__),
        )

    def _prompt_capabilities(self) -> schema.PromptCapabilities:
        """What prompts may hold beside text: embedded resources always (their text is
        text; a binary one must be of a type the model takes); images unless the agent's
        model declares it takes none (every API raf speaks takes images); audio only when
        it declares audio types (some APIs take none)."""
        from acp.schema import PromptCapabilities

        media = self.media
        image = media is None or any(t.startswith("image/") for t in media)
        audio = media is not None and any(t.startswith("audio/") for t in media)
        return PromptCapabilities(image=image, audio=audio, embedded_context=True)

    async def new_session(self, cwd: str, **_: Any) -> schema.NewSessionResponse:
        from acp.schema import NewSessionResponse

        session = await self.host.create_session(self.name, ANONYMOUS)
        return NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> schema.LoadSessionResponse:
        from acp.schema import LoadSessionResponse

        try:
            session = await self.host.session(self.name, session_id, ANONYMOUS)
        except ServeError as exc:
            raise _acp_error(exc) from None
        for update in self._replay(session):
            await self._client().session_update(session_id, update)
        return LoadSessionResponse()

    def _replay(self, session: AgentSession) -> list[Any]:
        """The stored conversation as the session updates that first showed it: user
        text and images, the agent's text and thoughts, each tool call (`tool_call`) and
        its result (`tool_call_update`, same id)."""
        from acp import (
            start_tool_call,
            update_agent_message_text,
            update_agent_thought_text,
            update_user_message,
            update_user_message_text,
        )

        known = self.calls.setdefault(session.id, set())
        out: list[Any] = []
        said = False  # whether the agent said something since the last prompt
        for message in session.messages:
            said = said and message.role is not Role.USER
            if message.role is Role.USER:
                sent = replayed_prompt(session, message)
                if sent is not None:  # the prompt's blocks as the editor sent them
                    out.extend(sent)
                    continue
            for content in message.contents:
                if isinstance(content, TextContent) and content.text:
                    if message.role is Role.USER:
                        out.append(update_user_message_text(content.text))
                    elif message.role is Role.ASSISTANT:  # joined as the turn streamed it
                        text = SEPARATOR + content.text if said else content.text
                        out.append(update_agent_message_text(text))
                        said = True
                elif isinstance(content, DataContent) and message.role is Role.USER:
                    block = data_block(content)
                    if block is not None:
                        out.append(update_user_message(block))
                elif isinstance(content, ReasoningContent) and content.text:
                    out.append(update_agent_thought_text(content.text))
                elif isinstance(content, FunctionCallContent):
                    known.add(content.call_id)
                    out.append(
                        self._call_start(
                            content.call_id, content.name, content.arguments, "pending"
                        )
                    )
                elif isinstance(content, FunctionResultContent):
                    if content.call_id not in known:  # a result whose call was not kept
                        known.add(content.call_id)
                        shown = self._show(content.call_id, content.name or "tool", None)
                        out.append(
                            start_tool_call(
                                content.call_id, content.name or "tool", kind=shown.tool_kind
                            )
                        )
                    out.append(self._result_update(content))
        return out

    def _show(self, call_id: str, name: str, arguments: Any) -> ShownCall:
        """How call `call_id` is shown (kept for its result)."""
        shown = show_call(self.tools.get(name), name, arguments)
        self.shown[call_id] = shown
        return shown

    def _call_start(self, call_id: str, name: str, arguments: Any, status: Any) -> Any:
        """The `tool_call` that tells the editor of a call: its kind, the files it
        touches, an edit's diff and its arguments."""
        from acp import start_tool_call

        shown = self._show(call_id, name, arguments)
        return start_tool_call(
            call_id,
            name,
            kind=shown.tool_kind,
            status=status,
            locations=shown.location_models(),
            content=shown.diff_content() or None,
            raw_input=arguments,
        )

    def _result_update(self, result: FunctionResultContent) -> Any:
        """A finished call's `tool_call_update`: its status, its result as content (and
        an edit's diff), and the raw result."""
        from acp import update_tool_call

        failed = result.error is not None
        shown = self.shown.pop(result.call_id, None) or ShownCall()
        return update_tool_call(
            result.call_id,
            status="failed" if failed else "completed",
            content=shown.result_content(result),
            raw_output=result.error if failed else result.result,
        )

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> schema.PromptResponse:
        from acp.schema import PromptResponse

        from raf.serve.acp.parts import keep_prompt, kept_blocks, prompt_message

        try:
            message = prompt_message(prompt, self.media)
        except ServeError as exc:  # nothing ran: the session is as it was
            raise _acp_error(exc) from None
        message.message_id = message_id = new_id("msg")
        blocks = kept_blocks(prompt)
        messages = [message]
        approvals: list[ApprovalResponseContent] = []
        self.turns[session_id] = False
        joined = StreamedText()  # the turn's text, one text per answer as on every surface
        try:
            # Kept before the run, under the session's lease, by every host alike (a durable
            # run's worker loads the session from the store); a prompt whose run stores no
            # message leaves an entry the next prompt drops.
            await self.host.edit_session(
                self.name, session_id, ANONYMOUS, lambda s: keep_prompt(s, message_id, blocks)
            )
            while True:
                finish, empty = await self._run(session_id, messages, approvals, joined)
                if empty:  # no answer at all: an error the editor shows
                    raise ServeError(502, "empty_answer", ANSWER_PROBLEMS["empty_answer"])
                if finish is not FinishReason.AWAITING_APPROVAL:
                    return PromptResponse(stop_reason=STOP_REASONS.get(finish, "end_turn"))  # type: ignore[arg-type]
                session = await self.host.session(self.name, session_id, ANONYMOUS)
                waiting = answerable_requests(session)
                if not waiting:  # another run claimed them all: nothing for the editor
                    return PromptResponse(stop_reason="end_turn")
                decided = await self._ask(session_id, waiting)
                if decided is None or self.turns.get(session_id):
                    return PromptResponse(stop_reason="cancelled")
                messages, approvals = [], decided
        except RafError as exc:
            raise _acp_error(exc) from None
        finally:
            self.turns.pop(session_id, None)

    async def _run(
        self,
        session_id: str,
        messages: list[ChatMessage],
        approvals: list[ApprovalResponseContent],
        joined: StreamedText,
    ) -> tuple[FinishReason | None, bool]:
        """Run once: the finish reason, and whether the run ended with no answer at all
        (a cut-off or filtered answer has a stop reason of its own)."""
        active, updates = await self.host.stream(
            self.name, session_id, ANONYMOUS, messages, approvals
        )
        if self.turns.get(session_id):
            active.token.cancel("cancelled by the editor")
        finish: FinishReason | None = None
        check = AnswerCheck()
        async for update in updates:
            check.see(update)
            if update.kind is UpdateKind.FINISHED:
                finish = update.finish_reason
            else:
                await self._send(session_id, update, joined.piece(update))
        problem = check.problem
        return finish, problem is not None and problem.code == "empty_answer"

    async def _send(self, session_id: str, update: AgentResponseUpdate, text: str) -> None:
        """One raf update as ACP session updates (those with no ACP form are skipped);
        `text` is its text as the turn's joined text has it.
        The editor hears of each tool call (`tool_call`) before any update of it: when
        the call is first seen, whether its arguments are in, it waits for approval,
        it starts, or (refused) it already has its result."""
        from acp import update_agent_message_text, update_agent_thought_text, update_tool_call

        sent: list[Any] = []
        content = update.content
        known = self.calls.setdefault(session_id, set())

        def announce(call_id: str, name: str, arguments: Any, status: Any) -> None:
            if call_id not in known:
                known.add(call_id)
                sent.append(self._call_start(call_id, name, arguments, status))

        if text:
            sent.append(update_agent_message_text(text))
        elif update.kind is UpdateKind.REASONING_DELTA and update.text:
            sent.append(update_agent_thought_text(update.text))
        elif update.kind in (UpdateKind.TOOL_CALL_ENDED, UpdateKind.APPROVAL_REQUEST) and (
            isinstance(content, FunctionCallContent | ApprovalRequestContent)
        ):
            announce(content.call_id, content.name, content.arguments, "pending")
        elif update.kind is UpdateKind.TOOL_CALLING and update.call_id:
            arguments = content.arguments if isinstance(content, FunctionCallContent) else None
            if update.call_id in known:
                sent.append(update_tool_call(update.call_id, status="in_progress"))
            else:
                announce(update.call_id, update.tool_name, arguments, "in_progress")
        elif update.kind is UpdateKind.TOOL_CALLED and isinstance(content, FunctionResultContent):
            announce(content.call_id, content.name or update.tool_name, None, "pending")
            sent.append(self._result_update(content))
        for item in sent:
            await self._client().session_update(session_id, item)

    async def _ask(
        self, session_id: str, pending: list[ApprovalRequestContent]
    ) -> list[ApprovalResponseContent] | None:
        """The editor's decision on each pending call; None when the editor cancelled."""
        from acp.schema import PermissionOption, ToolCallUpdate

        options = [
            PermissionOption(option_id=ALLOW, name="Allow", kind="allow_once"),
            PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
        ]
        decided: list[ApprovalResponseContent] = []
        for request in pending:
            title = request.name + (f": {request.reason}" if request.reason else "")
            shown = self.shown.get(request.call_id) or self._show(
                request.call_id, request.name, request.arguments
            )
            call = ToolCallUpdate(
                tool_call_id=request.call_id,
                title=title,
                kind=shown.tool_kind,
                status="pending",
                locations=shown.location_models() or None,
                content=shown.diff_content() or None,
                raw_input=request.arguments,
            )
            answer = await self._client().request_permission(
                session_id=session_id, tool_call=call, options=options
            )
            outcome = answer.outcome
            if outcome.outcome != "selected":
                return None
            approved = getattr(outcome, "option_id", None) == ALLOW
            decided.append(
                ApprovalResponseContent(
                    call_id=request.call_id,
                    approved=approved,
                    reason=None if approved else "rejected in the editor",
                )
            )
        return decided

    async def cancel(self, session_id: str, **_: Any) -> None:
        if session_id in self.turns:
            self.turns[session_id] = True
        active = self.host.active_run(self.name, session_id, ANONYMOUS)
        if active is not None:
            active.token.cancel("cancelled by the editor")


async def serve_acp_stdio(agent: AgentLike, store: SessionStore | None = None) -> None:
    """Speak ACP on this process's stdin/stdout until the editor closes them."""
    require_extra("acp", "serving an agent over ACP")
    from acp import run_agent

    try:
        # The SDK answers "method not found" for the optional methods left out here.
        await run_agent(cast("acp.Agent", RafAcpAgent(agent, store)))
    finally:
        await close_agent_like(agent)
