"""What an A2A JSON-RPC request must get right before the SDK answers it: a protocol
version this endpoint speaks, a method of that version, well-formed message parts and a
task state that exists. Each miss is the protocol's own JSON-RPC error, with a message
that says what to change (the SDK alone answers "Method not found", or a version error
that does not say how to pick the other version, and reads an unknown status or an empty
part as no filter and no content).

The version is the `A2A-Version` header: `1.0` (any 1.x) picks the 1.0 methods
(`SendMessage`, ...); no header, or `0.3`, is a 0.3 client (`message/send`, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VERSION_HEADER = "A2A-Version"

METHODS_1_0 = {
    "SendMessage": "message/send",
    "SendStreamingMessage": "message/stream",
    "GetTask": "tasks/get",
    "ListTasks": None,
    "CancelTask": "tasks/cancel",
    "CreateTaskPushNotificationConfig": "tasks/pushNotificationConfig/set",
    "GetTaskPushNotificationConfig": "tasks/pushNotificationConfig/get",
    "ListTaskPushNotificationConfigs": "tasks/pushNotificationConfig/list",
    "DeleteTaskPushNotificationConfig": "tasks/pushNotificationConfig/delete",
    "SubscribeToTask": "tasks/resubscribe",
    "GetExtendedAgentCard": "agent/getAuthenticatedExtendedCard",
}
"""The 1.0 methods, each with its 0.3 name (None: 0.3 has no such method)."""

METHODS_0_3 = {old: new for new, old in METHODS_1_0.items() if old is not None}
"""The 0.3 methods, each with its 1.0 name."""

TASK_STATES = (
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
)
"""The task states a `ListTasks` status filter may name."""

PART_FIELDS_1_0 = ("text", "raw", "url", "data")
"""A 1.0 part holds exactly one of these."""

PART_KINDS_0_3 = {"text": "text", "file": "file", "data": "data"}
"""A 0.3 part's `kind` and the field it needs."""

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
VERSION_NOT_SUPPORTED = -32009


class RequestProblem(Exception):
    """A request the endpoint refuses: a JSON-RPC error code and what to change."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def protocol_version(header: str | None) -> str:
    """`1.0` or `0.3` from the `A2A-Version` header (none: 0.3); a `RequestProblem` for
    a version this endpoint does not speak."""
    given = (header or "").strip()
    if not given:
        return "0.3"
    major, _, rest = given.partition(".")
    minor = rest.partition(".")[0]
    if major == "1":
        return "1.0"
    if (major, minor) == ("0", "3"):
        return "0.3"
    raise RequestProblem(
        VERSION_NOT_SUPPORTED,
        f"A2A-Version {given!r} is not supported: this endpoint speaks 1.0 (send the header "
        "A2A-Version: 1.0) and 0.3 (send A2A-Version: 0.3, or no header)",
    )


def check_request(body: Any, header: str | None) -> None:
    """Raise a `RequestProblem` for a request the endpoint must refuse; a body that is not
    a JSON-RPC request object is left to the SDK, which answers that itself."""
    if not isinstance(body, Mapping) or not isinstance(body.get("method"), str):
        return
    version = protocol_version(header)
    method: str = body["method"]
    params = body.get("params")
    if version == "1.0":
        if method not in METHODS_1_0:
            raise RequestProblem(METHOD_NOT_FOUND, _unknown_1_0(method))
        if method in ("SendMessage", "SendStreamingMessage") and isinstance(params, Mapping):
            _check_parts_1_0(params.get("message"))
        if method == "ListTasks" and isinstance(params, Mapping):
            _check_status(params.get("status"))
        return
    if method not in METHODS_0_3:
        raise RequestProblem(METHOD_NOT_FOUND, _unknown_0_3(method, header))
    if method in ("message/send", "message/stream") and isinstance(params, Mapping):
        _check_parts_0_3(params.get("message"))


def _unknown_1_0(method: str) -> str:
    if method in METHODS_0_3:
        return (
            f"{method!r} is an A2A 0.3 method, but the request says A2A-Version 1.0: call "
            f"{METHODS_0_3[method]!r}, or send no A2A-Version header to speak 0.3"
        )
    return f"method {method!r} is not an A2A 1.0 method; use one of " + ", ".join(METHODS_1_0)


def _unknown_0_3(method: str, header: str | None) -> str:
    said = "says A2A-Version 0.3" if header and header.strip() else "has no A2A-Version header"
    if method in METHODS_1_0:
        old = METHODS_1_0[method]
        instead = f", or call {old!r} to speak 0.3" if old else " (0.3 has no such method)"
        return (
            f"{method!r} is an A2A 1.0 method, but the request {said}, which means protocol "
            f"0.3: send the header A2A-Version: 1.0{instead}"
        )
    return (
        f"method {method!r} is not an A2A method; with A2A-Version: 1.0 use one of "
        + ", ".join(METHODS_1_0)
        + "; without the header (0.3) one of "
        + ", ".join(METHODS_0_3)
    )


def _check_status(status: Any) -> None:
    if status is None or status in TASK_STATES:
        return
    if isinstance(status, int) and not isinstance(status, bool) and 0 < status <= len(TASK_STATES):
        return  # the enum's number, as protobuf's JSON also reads it
    raise RequestProblem(
        INVALID_PARAMS,
        f"params.status {status!r} is not a task state; use one of " + ", ".join(TASK_STATES),
    )


def _parts(message: Any) -> list[Any]:
    if not isinstance(message, Mapping):
        raise RequestProblem(INVALID_PARAMS, "params.message is missing: send the message")
    parts = message.get("parts")
    if not isinstance(parts, list) or not parts:
        raise RequestProblem(
            INVALID_PARAMS, "params.message.parts must be a list with at least one part"
        )
    return parts


def _check_parts_1_0(message: Any) -> None:
    for index, part in enumerate(_parts(message)):
        held = [name for name in PART_FIELDS_1_0 if isinstance(part, Mapping) and name in part]
        if len(held) != 1:
            found = "none" if not held else " and ".join(held)
            raise RequestProblem(
                INVALID_PARAMS,
                f"params.message.parts[{index}] holds {found} of "
                f"{', '.join(PART_FIELDS_1_0)}: an A2A 1.0 part holds exactly one "
                "(a 0.3 part with 'kind' is sent without the A2A-Version header)",
            )


def _check_parts_0_3(message: Any) -> None:
    for index, part in enumerate(_parts(message)):
        kind = part.get("kind") if isinstance(part, Mapping) else None
        field = PART_KINDS_0_3.get(kind) if isinstance(kind, str) else None
        where = f"params.message.parts[{index}]"
        if field is None:
            kinds = ", ".join(f"{k!r} (with {f!r})" for k, f in PART_KINDS_0_3.items())
            raise RequestProblem(
                INVALID_PARAMS,
                f"{where} has kind {kind!r}: an A2A 0.3 part's kind is one of {kinds} "
                "(a 1.0 part without 'kind' needs the header A2A-Version: 1.0)",
            )
        if field not in part:
            raise RequestProblem(
                INVALID_PARAMS, f"{where} has kind {kind!r} but no {field!r}: add it"
            )
