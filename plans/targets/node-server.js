// Node.js `http` server as a peer of the reference server: the same endpoints and body
// sizes. /biteq hands the hash to the event loop's next turn before answering, as the
// reference server hands it to another task. Usage: node node-server.js PORT
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');

const port = Number(process.argv[2] || 8080);
const png = fs.readFileSync(path.join(__dirname, '../../crates/server/assets/FiringGeometry.png'));
let perfCounter = 0;

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), Server: 'node' });
  res.end(body);
}

const ID = /^[A-Za-z0-9]{14}$/;

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const id = url.searchParams.get('i');
  switch (url.pathname) {
    case '/pong': return send(res, 200, 'text/plain', 'PONG');
    case '/backend': return send(res, 200, 'text/plain', 'Hello from the backend service!');
    case '/chat': return send(res, 200, 'application/json', '{"message":"Hello from the server"}');
    case '/plaintext': return send(res, 200, 'text/plain', 'Hello, World!');
    case '/json': return send(res, 200, 'application/json', JSON.stringify({ message: 'Hello, World!' }));
    case '/quacker':
      if (id === null) return send(res, 400, 'text/plain', 'missing i');
      if (!ID.test(id)) return send(res, 404, 'text/plain', 'unknown id');
      return send(res, 200, 'application/json', `{"id":"${id}","n":59}`);
    case '/biteq':
      if (id === null) return send(res, 400, 'text/plain', 'missing i');
      if (!ID.test(id)) return send(res, 404, 'text/plain', 'unknown id');
      return setImmediate(() => {
        const h = crypto.createHash('sha1').update(id).digest('hex').slice(0, 12);
        send(res, 200, 'text/plain', `${id}:${h}`);
      });
    case '/perf':
      perfCounter += 1;
      return send(res, 200, 'application/json',
        `{"endpoint":"perf","thread":0,"request":${perfCounter},"message":"node http server"}`);
    case '/FiringGeometry.png':
      res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': png.length, Server: 'node' });
      return res.end(png);
    default: return send(res, 404, 'text/plain', 'not found');
  }
});
server.keepAliveTimeout = 75000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
