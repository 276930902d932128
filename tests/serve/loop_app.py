"""A server for tests/serve/test_loop_stays_free.py, run as its own process so that work
holding the interpreter (Python's `re` never lets go of it) cannot also stop the test
that measures it: an agent `helper` whose model answers `SLOW_ANSWER` to a user message
`slow` and `{"fine": true}` to any other, and the UI with a workflow that asks an age.

`python loop_app.py` prints `port N` once it serves on loopback; SIGINT stops it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from raf import AgentBuilder
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.decl.workflow import DeclWorkflowBuilder
from raf.serve import AgentHost, ServeSecurity, create_app
from raf.serve.limits import ServeLimits
from raf.serve.server import bind, serve_socket
from raf.serve.ui import ServeUI
from raf.testing import FunctionChatClient

SLOW_ANSWER = '{"x": "' + "a" * 40 + 'b"}'
"""With Python's `re`, `^(a|aa)+$` takes 15 s to fail on 27 characters, four times longer
for each two more: on this one it would take days."""

AGE_QUESTION = """
kind: Workflow
name: ask_age
actions:
  - kind: Question
    id: ask
    variable: Local.age
    prompt: How old are you?
    entity: AgePrebuiltEntity
    repeatCount: 0
    defaultValue: 30
  - {kind: SendActivity, id: done, activity: "age {Local.age}"}
"""


def model(messages: Sequence[ChatMessage], options: ChatOptions) -> str:
    said = [m.text for m in messages if m.role == "user"]
    return SLOW_ANSWER if said and said[0] == "slow" else '{"fine": true}'


async def main() -> int:
    agent = AgentBuilder("helper").with_chat_client(FunctionChatClient(model)).build()
    host = AgentHost([agent])
    ui = ServeUI.attach(host, [DeclWorkflowBuilder().from_yaml_str(AGE_QUESTION).build()])
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    security = ServeSecurity.for_bind("127.0.0.1", limits=ServeLimits(rate_per_second=0))
    app = create_app(host, security, ui=ui, a2a=False)
    await serve_socket(app, sock, on_started=lambda: print(f"port {port}", flush=True))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except KeyboardInterrupt:
        sys.exit(0)
