"""WebSocket over HTTP/2 (RFC 8441) from other implementations, for the
interoperability tests.

`client HOST PORT PATH N` opens an h2c connection with the h2 library, waits for the
server's SETTINGS_ENABLE_CONNECT_PROTOCOL, sends an extended CONNECT for PATH (a
subprotocol and permessage-deflate offered), then drives wsproto's framing over the
stream: N text and N binary messages each checked against its echo, a ping, and a
close with 1000; it prints what it saw as JSON. `serve` runs Hypercorn (h2c with
prior knowledge, which takes extended CONNECT) with an ASGI echo application on a
port of 127.0.0.1 the kernel gives, prints the port and serves until its standard
input closes (60 s at most)."""

import asyncio
import json
import socket
import sys


def client(host, port, path, n):
    import h2.config
    import h2.connection
    import h2.events
    import h2.settings
    from wsproto.connection import Connection, ConnectionType
    from wsproto.events import (BytesMessage, CloseConnection, Ping, Pong,
                                TextMessage)
    from wsproto.extensions import PerMessageDeflate

    seen = {"enable_connect": False, "text": 0, "binary": 0, "pong": False}
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    deflate = PerMessageDeflate()
    ws = None
    stream = None
    inbox = []
    ended = False

    def pump():
        nonlocal ws, ended
        data = sock.recv(65536)
        if not data:
            raise EOFError("the server closed the connection")
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RemoteSettingsChanged):
                c = ev.changed_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL)
                if c is not None:
                    seen["enable_connect"] = c.new_value == 1
            elif isinstance(ev, h2.events.ResponseReceived):
                fields = {k.decode(): v.decode() for k, v in ev.headers}
                seen["status"] = fields.get(":status")
                seen["subprotocol"] = fields.get("sec-websocket-protocol")
                seen["extensions"] = fields.get("sec-websocket-extensions")
                # The framing after the handshake, with the extension the server took.
                taken = []
                if seen["extensions"]:
                    deflate.finalize(seen["extensions"])
                    taken = [deflate]
                ws = Connection(ConnectionType.CLIENT, extensions=taken)
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                ws.receive_data(ev.data)
                inbox.extend(ws.events())
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended = True
        out = conn.data_to_send()
        if out:
            sock.sendall(out)

    while not seen["enable_connect"]:
        pump()
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, [
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "http"),
        (":path", path),
        (":authority", f"{host}:{port}"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-protocol", "chat.v2, chat.v1"),
        ("sec-websocket-extensions", deflate.offer() and "permessage-deflate"),
    ])
    sock.sendall(conn.data_to_send())
    while "status" not in seen:
        pump()
    if seen["status"] != "200":
        print(json.dumps(seen))
        return

    def send(event):
        conn.send_data(stream, ws.send(event))
        sock.sendall(conn.data_to_send())

    def next_event():
        while not inbox:
            pump()
        return inbox.pop(0)

    for i in range(n):
        text = f"message {i} ü€"
        send(TextMessage(data=text))
        got = next_event()
        assert isinstance(got, TextMessage) and got.data == text, got
        seen["text"] += 1
        data = bytes([i % 256]) * (i * 97 % 70000)
        send(BytesMessage(data=data))
        got = next_event()
        assert isinstance(got, BytesMessage) and bytes(got.data) == data, got
        seen["binary"] += 1
    send(Ping(payload=b"are you there"))
    got = next_event()
    assert isinstance(got, Pong) and bytes(got.payload) == b"are you there", got
    seen["pong"] = True
    send(CloseConnection(code=1000, reason="done"))
    got = next_event()
    assert isinstance(got, CloseConnection), got
    seen["close_code"] = got.code
    while not ended:
        pump()
    seen["stream_ended"] = True
    print(json.dumps(seen))


async def echo_app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            m = await receive()
            if m["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif m["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "http":
        await receive()
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b"echo at /echo over WebSocket\n"})
        return
    m = await receive()
    assert m["type"] == "websocket.connect"
    offered = scope.get("subprotocols") or []
    if scope["path"] != "/echo":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "websocket.accept", "subprotocol": offered[0] if offered else None})
    while True:
        m = await receive()
        if m["type"] == "websocket.disconnect":
            return
        if m.get("text") is not None:
            await send({"type": "websocket.send", "text": m["text"]})
        else:
            await send({"type": "websocket.send", "bytes": m["bytes"]})


async def serve():
    from hypercorn.asyncio import serve as hypercorn_serve
    from hypercorn.config import Config

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    listener.set_inheritable(True)
    config = Config()
    config.bind = [f"fd://{listener.fileno()}"]
    config.accesslog = None
    config.errorlog = None
    config.loglevel = "ERROR"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not sys.stdin.read(1) else None)
    loop.call_later(60, stop.set)
    print(listener.getsockname()[1], flush=True)
    await hypercorn_serve(echo_app, config, shutdown_trigger=stop.wait)


if __name__ == "__main__":
    if sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        asyncio.run(serve())
