"""One `raf serve`-style durable worker for the tests (run as a script): the agent of
app.py behind DurableAgentHost on a free loopback port, sessions and the system database
on PostgreSQL. `python serve_app.py DB_URL FOLDER EXECUTOR_ID` prints its URL."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

from raf.durable import DurableRuntime
from raf.serve import ServeSecurity, create_app
from raf.serve.durable_host import DurableAgentHost
from raf.serve.server import bind, serve_socket
from raf.stores.postgres_sessions import PostgresSessionStore
from tests.durable.app import build_agent


async def main(database: str, folder: Path, executor_id: str) -> None:
    runtime = DurableRuntime(
        [build_agent(folder)],
        store=PostgresSessionStore(database),
        database=database,
        executor_id=executor_id,
        takeover_after=float(os.environ.get("RAF_TEST_TAKEOVER", "3")),
        heartbeat_interval=0.5,
    )
    await runtime.launch()
    try:
        host = DurableAgentHost(runtime)
        app = create_app(host, ServeSecurity.for_bind("127.0.0.1"), openai=False, a2a=False)
        sock = bind("127.0.0.1", 0)
        port = sock.getsockname()[1]

        def started() -> None:
            print(f"http://127.0.0.1:{port}", flush=True)

        await serve_socket(app, sock, on_started=started)
    finally:
        runtime.shutdown()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
