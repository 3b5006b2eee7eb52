#!/usr/bin/env sh
# Starts the JDK built-in HTTP server target on PORT (built first when needed).
# Usage: sh plans/targets/jvm/jdk-server.sh PORT [THREADS]; run from the repository root.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/build.sh" jdk
exec java -cp "$here/build/classes" JdkServer "$1" "$here/../../../crates/server/assets/FiringGeometry.png" "${2:-4}"
