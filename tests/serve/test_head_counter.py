"""The head counter reads a whole head at once the way it reads one line at a time: for
many heads (usual and odd framing, pipelined, cut anywhere), both ways agree on where a
head passes the limit and on where each request ends."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from raf.serve.connections import HeadCounter


class LineByLine(HeadCounter):
    """The counter without its whole-head step."""

    def _whole_head(self, data: bytes, at: int) -> int | None:
        return None


NAMES = [b"Host", b"Content-Length", b"content-length", b"CONTENT-LENGTH", b"X-Thing"]
NAMES += [b"Transfer-Encoding", b"x-transfer-encoding", b"Content-Lengthx", b"Accept"]
SEPARATORS = [b":", b": ", b":\t", b" :", b"\t:", b":   "]
VALUES = [b"0", b"5", b"12", b"abc", b"5, 5", b"chunked", b"007", b"9" * 20, b" 3 ", b""]
VALUES += [b"text/plain", b" " * 130 + b"4"]
ENDINGS = [b"\r\n", b"\r\n", b"\r\n", b"\n", b"\r\r\n"]


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    lines = [draw(st.sampled_from([b"POST /a HTTP/1.1", b"GET /content-length:3 HTTP/1.1"]))]
    for _ in range(draw(st.integers(0, 5))):
        name = draw(st.sampled_from(NAMES))
        folded = draw(st.sampled_from([b"", b"", b"", b" ", b"\t"]))
        lines.append(
            folded + name + draw(st.sampled_from(SEPARATORS)) + draw(st.sampled_from(VALUES))
        )
    ending = draw(st.sampled_from(ENDINGS))
    lead = draw(st.sampled_from([b"", b"", b"\r\n"]))
    body = draw(st.binary(max_size=12))
    return lead + ending.join(lines) + ending + ending + body


@settings(max_examples=600, deadline=None)
@given(
    stream=st.lists(requests(), min_size=1, max_size=3).map(b"".join),
    limit=st.sampled_from([40, 90, 400, 4000]),
    cuts=st.lists(st.integers(1, 60), max_size=6),
)
def test_a_whole_head_reads_as_its_lines_do(stream: bytes, limit: int, cuts: list[int]) -> None:
    pieces, at = [], 0
    for size in [*cuts, len(stream)]:
        pieces.append(stream[at : at + size])
        at += size
    for chunks in ([stream], [p for p in pieces if p]):
        whole, lines = HeadCounter(limit), LineByLine(limit)
        for chunk in chunks:
            got, want = whole.feed(chunk), lines.feed(chunk)
            assert got == want, (chunks, chunk)
            if want is not None:
                break
            assert (whole.part, whole.left, whole.counted, whole.lost, whole.started) == (
                lines.part,
                lines.left,
                lines.counted,
                lines.lost,
                lines.started,
            ), (chunks, chunk)


def test_a_usual_head_is_read_in_one_step() -> None:
    counter = HeadCounter(1000)
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n"
    assert counter._whole_head(head + b"body", 0) == len(head)
    assert counter.feed(head + b"body" + head + b"bo") is None
    assert counter.left == 2  # inside the second request's body


class Recording:
    """A transport that records what is written to it."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"

    def get_write_buffer_size(self) -> int:
        return 0


async def test_what_one_turn_writes_goes_out_as_one_write_in_order() -> None:
    import asyncio

    from raf.serve.connections import _JoinedWrites

    real = Recording()
    joined = _JoinedWrites(real)  # type: ignore[arg-type]
    joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
    joined.write(memoryview(b"body"))
    assert real.written == []  # not yet: the turn is not over
    assert joined.get_write_buffer_size() == 23
    await asyncio.sleep(0)
    assert real.written == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    joined.write(b"last")
    joined.close()  # what is pending goes out before the close
    assert real.written[-1] == b"last" and real.closed
    assert joined.get_extra_info("peername") == "info peername"  # the rest is the transport's
    joined.write(b"after close")
    await asyncio.sleep(0)
    assert real.written[-1] == b"last"  # a closing transport is written no more
