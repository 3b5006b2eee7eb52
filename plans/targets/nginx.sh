#!/bin/sh
# Starts nginx in the foreground on 127.0.0.1:PORT with one worker (or WORKERS), serving
# the reference endpoints from nginx.conf. Everything it writes lives in a temporary
# prefix that is removed when it exits.
set -eu
port=$1
workers=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
mkdir -p "$prefix/logs" "$prefix/static"
cp "$repo/crates/server/assets/FiringGeometry.png" "$prefix/static/"
# mktemp -d makes the prefix 0700; run as root, nginx's workers run as nobody and
# must be able to reach the file, or every request for it is a 403.
chmod 755 "$prefix" "$prefix/static"
chmod 644 "$prefix/static/FiringGeometry.png"
sed -e "s|@PORT@|$port|g" -e "s|@WORKERS@|$workers|g" -e "s|@STATIC@|$prefix/static|g" \
    "$here/nginx.conf" > "$prefix/nginx.conf"
nginx=$(command -v nginx || echo /usr/sbin/nginx)
"$nginx" -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;' &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid; rm -rf "$prefix"' TERM INT
wait $pid
