"""An OTLP/HTTP metrics receiver that decodes with OpenTelemetry's published schema
(the opentelemetry-proto package's classes, generated from its .proto files) and
Google's protobuf runtime: the other end of stampede's `--out otlp` test.

  otlp_receiver.py OUT   listens on 127.0.0.1, a free port, printed as "ready PORT";
                         each POST /v1/metrics is decoded as an
                         ExportMetricsServiceRequest and appended to OUT as one JSON
                         line (the proto3 JSON mapping, field names as in the .proto);
                         a body that does not decode gets 400 with the parser's reason
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

OUT = sys.argv[1]
MAX_BODY = 16 << 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        if self.path != "/v1/metrics" or n > MAX_BODY:
            return self.answer(404 if self.path != "/v1/metrics" else 413, b"")
        body = self.rfile.read(n)
        req = ExportMetricsServiceRequest()
        try:
            req.ParseFromString(body)
        except Exception as e:  # the decoder's reason goes back to the sender
            return self.answer(400, str(e).encode())
        if self.headers.get("Content-Type") != "application/x-protobuf":
            return self.answer(415, b"content type")
        with open(OUT, "a") as f:
            f.write(json.dumps(MessageToDict(req, preserving_proto_field_name=True)) + "\n")
        self.answer(200, ExportMetricsServiceResponse().SerializeToString())

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print("ready", server.server_address[1], flush=True)
server.serve_forever()
