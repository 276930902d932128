"""What an A2A JSON-RPC request must get right before the SDK answers it: a protocol
version this endpoint speaks, a method of that version, well-formed message parts and a
task state that exists. Each miss is the protocol's own JSON-RPC error, with a message
that says what to change (the SDK alone answers "Method not found", or a version error
that does not say how to pick the other version, and reads an unknown status or an empty
part as no filter and no content).

The envelope is checked first, before the method or its params: a `jsonrpc` other than
"2.0", an `id` that is not a string, a number or null, or a `method` that is not a string
is Invalid Request (-32600). An error answered on a JSON-RPC URL before the SDK sees the
request (a body too large, the wrong content type, a missing token, a rate limit, the
wrong HTTP method) is a JSON-RPC error object too (`jsonrpc_error_body`), with its HTTP
status.

The version is the `A2A-Version` header: `1.0` (any 1.x) picks the 1.0 methods
(`SendMessage`, ...); no header, or `0.3`, is a 0.3 client (`message/send`, ...).
"""

from __future__ import annotations

import re
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

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
CONTENT_TYPE_NOT_SUPPORTED = -32005
VERSION_NOT_SUPPORTED = -32009

RPC_PATH = re.compile(r"^/a2a/[^/]+/?$")
"""A JSON-RPC URL: an agent's endpoint, with or without the trailing `/`."""

ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
"""The detail every A2A error carries in its `data` list, as the SDK writes it."""


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


def is_rpc_path(path: str) -> bool:
    """Whether `path` is an agent's A2A JSON-RPC URL (where every error is JSON-RPC's)."""
    return RPC_PATH.match(path) is not None


def jsonrpc_error_body(status: int, code: str, message: str) -> dict[str, Any]:
    """An HTTP-level refusal (status `status`, raf's `code`) as a JSON-RPC error response:
    a wrong content type is A2A's ContentTypeNotSupported (-32005), a server failure is
    Internal error (-32603), any other refusal Invalid Request (-32600); `data` carries
    raf's code and the status as an ErrorInfo, as A2A's own errors do."""
    if status == 415:
        number, reason = CONTENT_TYPE_NOT_SUPPORTED, "CONTENT_TYPE_NOT_SUPPORTED"
    elif status >= 500:
        number, reason = INTERNAL_ERROR, code.upper()
    else:
        number, reason = INVALID_REQUEST, code.upper()
    info = {
        "@type": ERROR_INFO_TYPE,
        "reason": reason,
        "domain": "raf",
        "metadata": {"code": code, "status": str(status)},
    }
    error = {"code": number, "message": f"{code}: {message}", "data": [info]}
    return {"jsonrpc": "2.0", "id": None, "error": error}


def valid_id(body: Any) -> Any:
    """The request's `id` when it is one a response may echo (a string, a number or
    null), else None."""
    found = body.get("id") if isinstance(body, Mapping) else None
    if isinstance(found, str | int | float) and not isinstance(found, bool):
        return found
    return None


def check_envelope(body: Mapping[str, Any]) -> None:
    """Raise Invalid Request for an envelope JSON-RPC 2.0 refuses, before the method or
    its params are looked at."""
    version = body.get("jsonrpc")
    if version != "2.0":
        raise RequestProblem(
            INVALID_REQUEST, f'"jsonrpc" is {version!r}: a JSON-RPC 2.0 request says "2.0"'
        )
    if "id" in body and body["id"] is not None and valid_id(body) is None:
        kind = type(body["id"]).__name__
        raise RequestProblem(
            INVALID_REQUEST, f'"id" is a {kind}: a request\'s id is a string, a number or null'
        )
    if not isinstance(body.get("method"), str):
        raise RequestProblem(INVALID_REQUEST, '"method" must be a string naming the method')


def check_request(body: Any, header: str | None) -> None:
    """Raise a `RequestProblem` for a request the endpoint must refuse: its envelope
    first, then its version, method and params. A body that is not a JSON object (a
    batch, a parse error) is left to the SDK, which answers that itself."""
    if not isinstance(body, Mapping):
        return
    check_envelope(body)
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
