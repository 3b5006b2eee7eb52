"""A gRPC server and client built by grpcio (the C core's Python binding) from the
repository's .proto files at run time: the other end of stampede's gRPC tests.

  grpc_peer.py serve PROTO_DIR     serves helloworld.Greeter and stampede.v1.Echo on
                                   127.0.0.1, a free port, printed as "ready PORT";
                                   SayHello answers "Hello NAME", or UNAVAILABLE with
                                   a message when the name is "unavailable"
  grpc_peer.py call PROTO_DIR ADDR N
                                   calls ADDR's Greeter N times, Echo's server
                                   stream once (count 3), Echo's Unary asking for
                                   UNAVAILABLE and for 300,000 bytes, a
                                   bidirectional stream of three, and one that
                                   sends each request only once the answer to the
                                   one before has come (ping-pong), printing one
                                   JSON line of what came back
"""

import json
import queue
import sys
import time
from concurrent import futures

import grpc

PROTO_DIR = sys.argv[2]
sys.path.insert(0, PROTO_DIR)
hello_pb2, hello_grpc = grpc.protos_and_services("helloworld.proto")
echo_pb2, echo_grpc = grpc.protos_and_services("echo.proto")


class Greeter(hello_grpc.GreeterServicer):
    def SayHello(self, request, context):
        if request.name == "unavailable":
            context.abort(grpc.StatusCode.UNAVAILABLE, "down for the test")
        return hello_pb2.HelloReply(message="Hello " + request.name)


def reply(request, seq):
    payload = b"x" * request.size if request.size else request.payload
    return echo_pb2.EchoReply(payload=payload, seq=seq)


class Echo(echo_grpc.EchoServicer):
    def Unary(self, request, context):
        time.sleep(request.delay_ms / 1000)
        if request.status:
            code = next(c for c in grpc.StatusCode if c.value[0] == request.status)
            context.abort(code, "asked for")
        return reply(request, 1)

    def ServerStream(self, request, context):
        for seq in range(1, max(request.count, 1) + 1):
            if seq > 1:
                time.sleep(request.interval_ms / 1000)
            yield reply(request, seq)

    def ClientStream(self, requests, context):
        n = sum(1 for _ in requests)
        return echo_pb2.EchoReply(seq=n)

    def Bidi(self, requests, context):
        for seq, request in enumerate(requests, 1):
            yield reply(request, seq)


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    hello_grpc.add_GreeterServicer_to_server(Greeter(), server)
    echo_grpc.add_EchoServicer_to_server(Echo(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"ready {port}", flush=True)
    server.wait_for_termination()


def ping_pong(echo, n):
    """A bidirectional stream whose next request waits for the last one's answer:
    it finishes only if the server answers each request as it comes."""
    turns = queue.Queue()
    turns.put(1)

    def requests():
        while True:
            size = turns.get()
            if size is None:
                return
            yield echo_pb2.EchoRequest(size=size)

    sizes = []
    for reply in echo.Bidi(requests(), timeout=10):
        sizes.append(len(reply.payload))
        turns.put(len(sizes) + 1 if len(sizes) < n else None)
    return sizes


def call(addr, n):
    with grpc.insecure_channel(addr) as channel:
        greeter = hello_grpc.GreeterStub(channel)
        replies = [greeter.SayHello(hello_pb2.HelloRequest(name=f"n{i}"), timeout=10).message for i in range(n)]
        echo = echo_grpc.EchoStub(channel)
        stream = [r.seq for r in echo.ServerStream(echo_pb2.EchoRequest(count=3, size=4), timeout=10)]
        try:
            echo.Unary(echo_pb2.EchoRequest(status=14), timeout=10)
            status = "OK"
        except grpc.RpcError as e:
            status = f"{e.code().name}: {e.details()}"
        bidi = [r.seq for r in echo.Bidi(iter([echo_pb2.EchoRequest(size=2)] * 3), timeout=10)]
        pingpong = ping_pong(echo, 4)
        # Larger than a stream's first window: held, then the trailers after it.
        big = len(echo.Unary(echo_pb2.EchoRequest(size=300000), timeout=10).payload)
    print(json.dumps({"replies": replies, "stream": stream, "status": status, "bidi": bidi, "pingpong": pingpong, "big": big}), flush=True)


if sys.argv[1] == "serve":
    serve()
else:
    call(sys.argv[3], int(sys.argv[4]))
