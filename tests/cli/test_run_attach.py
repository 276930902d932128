"""`raf run FILE "prompt" --attach FILE`: files go with the prompt to the model (here a
loopback server of Ollama's native API that reports the image bytes it received), and a
bad file is a usage error before anything starts."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from tests.clients.ollama_peer import OllamaPeer

from .helpers import raf, write_agent

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
AGENT = "name: looker\ninstructions: You describe pictures.\n"


def test_attach_sends_the_image_with_the_prompt(tmp_path: Path) -> None:
    write_agent(tmp_path, AGENT)
    (tmp_path / "photo.png").write_bytes(PNG)
    with OllamaPeer() as peer:
        done = raf(
            tmp_path,
            "run",
            "agent.yaml",
            "describe this",
            "--attach",
            "photo.png",
            "--model",
            "ollama-native:llava-peer",
            env={"OLLAMA_HOST": peer.url, "OLLAMA_BASE_URL": ""},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"You said: describe this I saw {len(PNG)} bytes of images.\n"
        user = peer.requests[0]["messages"][-1]
        assert user["images"] == [base64.b64encode(PNG).decode()]


def test_a_bad_attachment_is_a_usage_error_before_any_request(tmp_path: Path) -> None:
    write_agent(tmp_path, AGENT)
    (tmp_path / "notes.qqq").write_text("x")
    with (tmp_path / "huge.png").open("wb") as handle:  # sparse: sized, never read
        handle.truncate(20 * 1024 * 1024 + 1)
    (tmp_path / "zero.png").symlink_to("/dev/zero")  # never ends
    (tmp_path / "env.pdf").symlink_to("/proc/self/environ")  # "0 bytes", holds secrets
    os.mkfifo(tmp_path / "pipe.png")  # reading one waits forever for a writer
    for name, words in (
        ("missing.png", "cannot read attachment"),
        ("notes.qqq", "has type"),
        ("huge.png", "is 20971521 bytes; the most read is 20971520 bytes (the limit for an image)"),
        ("zero.png", "kernel file under /dev"),
        ("env.pdf", "kernel file under /proc"),
        ("pipe.png", "is a FIFO (named pipe); raf reads regular files only"),
    ):
        done = raf(
            tmp_path,
            "run",
            "agent.yaml",
            "describe",
            "--attach",
            name,
            "--model",
            "ollama-native:llava-peer",
            env={"OLLAMA_HOST": "127.0.0.1:9"},
        )
        assert done.returncode == 2, done.stderr
        assert words in done.stderr and name in done.stderr
