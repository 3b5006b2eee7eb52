"""HTTP/3 with aioquic, the other end of stampede's interoperability tests.

  h3_peer.py server CERT KEY   serves GET /pong ("pong\n") and /bytes/N (N bytes) on
                               127.0.0.1, a free UDP port, printed as "ready PORT"
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
    else:
        asyncio.run(run_client(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
