"""The agent behind `raf demo`: order tools on a scripted model, one tool call and one
approval, so a new user sees the whole loop without a key or a download."""

from __future__ import annotations

from typing import Any

from raf.agent.builder import AgentBuilder
from raf.core.function_tool import tool
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.responses import FinishReason, UpdateKind
from raf.testing import ScriptedChatClient, call, reply

ORDERS = {"A-1001": "shipped", "A-1002": "processing"}


@tool
def order_status(order_id: str) -> str:
    """Look up the status of an order.

    Args:
        order_id: the order number, for example A-1001
    """
    return ORDERS.get(order_id, "unknown order")


@tool(approval_required=True)
def cancel_order(order_id: str, reason: str) -> str:
    """Cancel an order (a person must approve this).

    Args:
        order_id: the order to cancel
        reason: why the customer wants to cancel
    """
    ORDERS[order_id] = "cancelled"
    return f"order {order_id} cancelled"


async def run_demo(*, approve: bool) -> int:
    model = ScriptedChatClient(
        [
            reply("", call("order_status", order_id="A-1002", call_id="call_1")),
            reply(
                "Order A-1002 is still processing, so it can be cancelled.",
                call("cancel_order", order_id="A-1002", reason="ordered twice", call_id="call_2"),
            ),
            "Done: order A-1002 is cancelled."
            if approve
            else "Understood, I left order A-1002 as it is.",
        ],
        chunk_size=12,
    )
    agent = (
        AgentBuilder("support")
        .with_instructions("You help customers with their orders.")
        .with_chat_client(model)
        .with_tool(order_status)
        .with_tool(cancel_order)
        .build()
    )
    session = agent.create_session()
    prompt = "Please cancel order A-1002, I ordered it twice."
    print(f"user> {prompt}")
    pending = []
    async for update in agent.run_stream(prompt, session=session):
        _show(update)
        if update.kind is UpdateKind.APPROVAL_REQUEST and update.content is not None:
            pending.append(update)
    decision = "approve" if approve else "deny"
    for update in pending:
        print(f"\n[approval] {update.tool_name} {_args(update)} -> {decision}")
    responses = [
        ToolApprovalResponse(
            call_id=u.call_id, approved=approve, reason=None if approve else "keep the order"
        )
        for u in pending
    ]
    async for update in agent.run_stream(
        [], session=session, options=AgentRunOptions(tool_approval_responses=responses)
    ):
        _show(update)
    print(f"\n\n{len(session.messages)} messages in session {session.id}; orders: {ORDERS}")
    return 0


def _args(update: Any) -> str:
    content = update.content
    return str(getattr(content, "arguments", ""))


def _show(update: Any) -> None:
    kind = update.kind
    if kind is UpdateKind.TEXT_DELTA:
        print(update.text, end="", flush=True)
    elif kind is UpdateKind.TOOL_CALL_ENDED:
        print(f"\n[tool call] {update.tool_name}({_args(update)})")
    elif kind is UpdateKind.TOOL_CALLED and update.content is not None:
        print(f"[tool result] {update.content.as_text()}")
    elif kind is UpdateKind.APPROVAL_REQUEST:
        print(f"[needs approval] {update.tool_name}")
    elif kind is UpdateKind.FINISHED and update.finish_reason is FinishReason.AWAITING_APPROVAL:
        print("\n[run paused: awaiting approval]")
