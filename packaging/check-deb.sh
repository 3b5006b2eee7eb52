#!/usr/bin/env bash
# Installs the Debian package packaging/deb.sh built, checks what it installed (the
# binary runs a short load against its own server, the man pages render, bash
# completes), and removes it again. Needs root (dpkg).
set -euo pipefail
cd "$(dirname "$0")/.."
deb=$(ls "${CARGO_TARGET_DIR:-target}"/debian/stampede_*.deb | tail -1)
dpkg -i "$deb" >/dev/null
trap 'dpkg -r stampede >/dev/null' EXIT
/usr/bin/stampede --version | grep -q '^stampede '
man -w stampede-load | grep -q '/usr/share/man/man1/stampede-load.1'
page=$(MANWIDTH=100 man stampede-oha 2>/dev/null)
grep -q -- '--latency-correction' <<<"$page"
bash -c 'source /usr/share/bash-completion/completions/stampede && complete -p stampede' | grep -q _stampede
[ -s /usr/share/zsh/vendor-completions/_stampede ]
[ -s /usr/share/fish/vendor_completions.d/stampede.fish ]
# A short run of the installed binary against its own server, on a free port.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
/usr/bin/stampede serve --threads 1 --listen 127.0.0.1:"$port" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; dpkg -r stampede >/dev/null' EXIT
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.05; done
summary=$(timeout 30 /usr/bin/stampede load -q -n 1000 -c 4 "http://127.0.0.1:$port/pong")
grep -q '1,000 completed' <<<"$summary"
# The shipped .proto files drive a gRPC run against the same server.
summary=$(timeout 30 /usr/bin/stampede load -q -n 100 -c 2 "http://127.0.0.1:$port" \
  --proto /usr/share/stampede/proto/helloworld.proto --call helloworld.Greeter/SayHello)
grep -q 'OK × 100' <<<"$summary"
echo "the package installs, runs, renders its man pages and completes"
