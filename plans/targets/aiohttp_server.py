"""aiohttp server as a peer of the reference server: the same endpoints and body sizes.

/biteq computes its hash in the default thread pool before answering, as the reference
server hands it to another task. Usage: python3 aiohttp_server.py PORT
"""
import asyncio
import hashlib
import itertools
import pathlib
import re
import sys

from aiohttp import web

PNG = (pathlib.Path(__file__).parent / "../../crates/server/assets/FiringGeometry.png").read_bytes()
ID = re.compile(r"^[A-Za-z0-9]{14}$")
COUNTER = itertools.count(1)


def text(body, ctype="text/plain", status=200):
    return web.Response(body=body.encode(), status=status, content_type=ctype)


async def quacker(req):
    i = req.query.get("i")
    if i is None:
        return text("missing i", status=400)
    if not ID.match(i):
        return text("unknown id", status=404)
    return text('{"id":"%s","n":59}' % i, "application/json")


async def biteq(req):
    i = req.query.get("i")
    if i is None:
        return text("missing i", status=400)
    if not ID.match(i):
        return text("unknown id", status=404)
    loop = asyncio.get_running_loop()
    h = await loop.run_in_executor(None, lambda: hashlib.sha1(i.encode()).hexdigest()[:12])
    return text("%s:%s" % (i, h))


async def perf(_):
    n = next(COUNTER)
    return text('{"endpoint":"perf","thread":0,"request":%d,"message":"aiohttp server"}' % n, "application/json")


def constant(body, ctype="text/plain"):
    async def handler(_):
        return text(body, ctype)
    return handler


async def png(_):
    return web.Response(body=PNG, content_type="image/png")


app = web.Application()
app.add_routes([
    web.get("/pong", constant("PONG")),
    web.get("/backend", constant("Hello from the backend service!")),
    web.get("/chat", constant('{"message":"Hello from the server"}', "application/json")),
    web.get("/plaintext", constant("Hello, World!")),
    web.get("/json", constant('{"message":"Hello, World!"}', "application/json")),
    web.get("/quacker", quacker),
    web.get("/biteq", biteq),
    web.get("/perf", perf),
    web.get("/FiringGeometry.png", png),
])

if __name__ == "__main__":
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
