"""A WebSocket client and server from another implementation (Python's websockets),
for the interoperability tests: `echo URL N` sends N text and N binary messages and a
ping (permessage-deflate offered, as the library does by default), checks each echo,
closes with 1000 and prints what it saw as JSON, the extensions taken among it; `push
URL` reads a push endpoint's messages until the server closes and prints their count
and the close code; `serve deflate|plain` runs an echo server on a port of
127.0.0.1 the kernel gives, taking permessage-deflate or not, prints the port and
serves until its standard input closes (30 s at most)."""

import asyncio
import json
import sys

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed


async def echo(url, n):
    seen = {"text": 0, "binary": 0, "pong": False, "subprotocol": None}
    async with connect(url, subprotocols=["chat.v2", "chat.v1"], max_size=1 << 20) as ws:
        seen["subprotocol"] = ws.subprotocol
        seen["extensions"] = [e.name for e in ws.protocol.extensions]
        for i in range(n):
            text = f"message {i} ü€"
            await ws.send(text)
            assert await ws.recv() == text
            seen["text"] += 1
            data = bytes([i % 256]) * (i * 97 % 70000)
            await ws.send(data)
            assert await ws.recv() == data
            seen["binary"] += 1
        pong = await ws.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        seen["pong"] = True
        await ws.close(1000, "done")
        seen["close_code"] = ws.close_code
    return seen


async def push(url):
    count = 0
    async with connect(url) as ws:
        try:
            async for _ in ws:
                count += 1
        except ConnectionClosed:
            pass
        return {"messages": count, "close_code": ws.close_code, "reason": ws.close_reason}


async def serve(compression):
    async def echo(ws):
        try:
            async for message in ws:
                await ws.send(message)
        except ConnectionClosed:
            pass

    from websockets.asyncio.server import serve as ws_serve

    async with ws_serve(echo, "127.0.0.1", 0, compression=compression, max_size=1 << 20) as server:
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        loop = asyncio.get_running_loop()
        await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.read), 30)


def main():
    what, url = sys.argv[1], sys.argv[2]
    if what == "serve":
        try:
            asyncio.run(serve("deflate" if url == "deflate" else None))
        except asyncio.TimeoutError:
            pass
        return
    if what == "echo":
        out = asyncio.run(asyncio.wait_for(echo(url, int(sys.argv[3])), 30))
    else:
        out = asyncio.run(asyncio.wait_for(push(url), 30))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
