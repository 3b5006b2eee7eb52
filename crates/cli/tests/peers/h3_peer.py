"""HTTP/3 with aioquic, the other end of stampede's interoperability tests.

  h3_peer.py server CERT KEY   serves GET /pong ("pong\n") and /bytes/N (N bytes) on
                               127.0.0.1, a free UDP port, printed as "ready PORT"
  h3_peer.py bad MODE CERT KEY  a server that breaks HTTP/3 on every request, as MODE
                               says: data-first (endless DATA, no HEADERS), huge-head
                               (a HEADERS frame of 1 MiB), reset (each request stream
                               reset with H3_INTERNAL_ERROR), control-flood (a control
                               stream of 100,000 reserved frames, then good answers)
  h3_peer.py badclient HOST PORT MODE
                               sends one request broken as MODE says (data-first,
                               no-method, bad-qpack, two-controls, push) over raw QUIC
                               and prints how the server answered: {"reset": CODE},
                               {"closed": CODE} or {"answered": true}
  h3_peer.py client HOST PORT PATH N
                               sends N GET requests for PATH at once on one
                               connection, prints {"statuses": {...}, "bytes": B,
                               "alt_svc": ...} as JSON
"""

import asyncio
import json
import ssl
import sys

from aioquic.asyncio import connect, serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived, StreamReset


def varint(v):
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return (v | 0x4000).to_bytes(2, "big")
    if v < 0x40000000:
        return (v | 0x80000000).to_bytes(4, "big")
    return (v | 0xC000000000000000).to_bytes(8, "big")


def frame(kind, payload):
    return varint(kind) + varint(len(payload)) + payload


class Bad(QuicConnectionProtocol):
    """Raw QUIC: HTTP/3's frames written by hand, broken on purpose."""

    mode = "data-first"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.control = None

    def open_control(self, flood):
        self.control = self._quic.get_next_available_stream_id(is_unidirectional=True)
        body = varint(0) + frame(0x4, b"")
        if flood:
            # Reserved frame types (0x1f * N + 0x21), each to be ignored.
            body += b"".join(frame(0x21 + 0x1F * (i % 50), b"x") for i in range(100_000))
        self._quic.send_stream_data(self.control, body)

    def quic_event_received(self, event):
        if not isinstance(event, StreamDataReceived) or event.stream_id % 4 != 0:
            return
        if not event.end_stream:
            return
        sid = event.stream_id
        if self.control is None:
            self.open_control(self.mode == "control-flood")
        if self.mode == "data-first":
            chunk = frame(0x0, b"z" * 16000)
            self._quic.send_stream_data(sid, chunk * 64, end_stream=True)
        elif self.mode == "huge-head":
            self._quic.send_stream_data(sid, varint(0x1) + varint(1 << 20) + b"\0" * 4096)
        elif self.mode == "reset":
            self._quic.reset_stream(sid, 0x102)
        else:
            # A good answer, QPACK by hand: static :status 200 (index 25).
            self._quic.send_stream_data(sid, frame(0x1, b"\x00\x00\xd9") + frame(0x0, b"ok"), end_stream=True)
        self.transmit()


class Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)

    def quic_event_received(self, event):
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                fields = dict(e.headers)
                path = fields.get(b":path", b"/").decode()
                if path == "/pong":
                    status, body = 200, b"pong\n"
                elif path.startswith("/bytes/") and path[7:].isdigit() and int(path[7:]) <= 1 << 24:
                    status, body = 200, b"x" * int(path[7:])
                else:
                    status, body = 404, b"not found\n"
                self.h3.send_headers(
                    e.stream_id,
                    [
                        (b":status", str(status).encode()),
                        (b"content-type", b"text/plain"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                )
                self.h3.send_data(e.stream_id, body, end_stream=True)
                self.transmit()


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.waiting = {}

    async def get(self, authority, path):
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
            ],
            end_stream=True,
        )
        done = self._loop.create_future()
        self.waiting[sid] = (done, {"status": None, "bytes": 0, "alt_svc": None})
        self.transmit()
        return await asyncio.wait_for(done, 20)

    def quic_event_received(self, event):
        for e in self.h3.handle_event(event):
            if not isinstance(e, (HeadersReceived, DataReceived)) or e.stream_id not in self.waiting:
                continue
            done, r = self.waiting[e.stream_id]
            if isinstance(e, HeadersReceived):
                for k, v in e.headers:
                    if k == b":status":
                        r["status"] = int(v)
                    elif k == b"alt-svc":
                        r["alt_svc"] = v.decode()
            else:
                r["bytes"] += len(e.data)
            if e.stream_ended and not done.done():
                done.set_result(r)


async def run_server(cert, key):
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    server = await serve("127.0.0.1", 0, configuration=config, create_protocol=Server)
    port = server._transport.get_extra_info("sockname")[1]
    print(f"ready {port}", flush=True)
    await asyncio.Future()


async def run_bad(mode, cert, key):
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    Bad.mode = mode
    server = await serve("127.0.0.1", 0, configuration=config, create_protocol=Bad)
    port = server._transport.get_extra_info("sockname")[1]
    print(f"ready {port}", flush=True)
    await asyncio.Future()


class RawClient(QuicConnectionProtocol):
    """Raw QUIC: HTTP/3's streams written by hand; notes the server's answer."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcome = self._loop.create_future()

    def settle(self, value):
        if not self.outcome.done():
            self.outcome.set_result(value)

    def quic_event_received(self, event):
        if isinstance(event, StreamReset):
            self.settle({"reset": event.error_code})
        elif isinstance(event, ConnectionTerminated):
            self.settle({"closed": event.error_code})
        elif isinstance(event, StreamDataReceived) and event.stream_id % 4 == 0 and event.end_stream:
            self.settle({"answered": True})


async def run_badclient(host, port, mode):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.verify_mode = ssl.CERT_NONE
    async with connect(host, port, configuration=config, create_protocol=RawClient) as c:
        q = c._quic
        control = q.get_next_available_stream_id(is_unidirectional=True)
        q.send_stream_data(control, varint(0) + frame(0x4, b""))
        # A request's field section by hand: :method GET (static 17), :scheme https
        # (23), :path / (1), :authority as a literal with static name (0).
        head = b"\x00\x00" + bytes([0xC0 | 17, 0xC0 | 23, 0xC0 | 1]) + bytes([0x50, 1]) + b"x"
        sid = q.get_next_available_stream_id()
        if mode == "data-first":
            q.send_stream_data(sid, frame(0x0, b"body") + frame(0x1, head), end_stream=True)
        elif mode == "no-method":
            q.send_stream_data(sid, frame(0x1, b"\x00\x00" + bytes([0xC0 | 23, 0xC0 | 1])), end_stream=True)
        elif mode == "bad-qpack":
            q.send_stream_data(sid, frame(0x1, b"\x00\x00\xff\xff\xff\xff\xff"), end_stream=True)
        elif mode == "two-controls":
            other = q.get_next_available_stream_id(is_unidirectional=True)
            q.send_stream_data(other, varint(0) + frame(0x4, b""))
        elif mode == "push":
            other = q.get_next_available_stream_id(is_unidirectional=True)
            q.send_stream_data(other, varint(1) + varint(0))
        else:
            q.send_stream_data(sid, frame(0x1, head), end_stream=True)
        c.transmit()
        try:
            outcome = await asyncio.wait_for(c.outcome, 10)
        except asyncio.TimeoutError:
            outcome = {"timeout": True}
    print(json.dumps(outcome))


async def run_client(host, port, path, n):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.verify_mode = ssl.CERT_NONE
    async with connect(host, port, configuration=config, create_protocol=Client) as c:
        answers = await asyncio.gather(*[c.get(f"{host}:{port}", path) for _ in range(n)])
    statuses = {}
    for a in answers:
        statuses[str(a["status"])] = statuses.get(str(a["status"]), 0) + 1
    print(json.dumps({
        "statuses": statuses,
        "bytes": sum(a["bytes"] for a in answers),
        "alt_svc": answers[0]["alt_svc"] if answers else None,
    }))


if __name__ == "__main__":
    if sys.argv[1] == "server":
        asyncio.run(run_server(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "bad":
        asyncio.run(run_bad(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif sys.argv[1] == "badclient":
        asyncio.run(run_badclient(sys.argv[2], int(sys.argv[3]), sys.argv[4]))
    else:
        asyncio.run(run_client(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
