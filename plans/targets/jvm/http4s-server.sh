#!/usr/bin/env sh
# Starts the http4s target on PORT (built with Maven first when needed).
# Usage: sh plans/targets/jvm/http4s-server.sh PORT; run from the repository root.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/build.sh" http4s
exec java -cp "$here/http4s/target/classes:$here/http4s/target/lib/*" Http4sServer "$1"
