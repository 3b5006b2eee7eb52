#!/usr/bin/env sh
# Starts the Akka-http target on PORT (built with Maven first when needed), with
# Akka-http's default limit of 1,024 open connections raised to 20,000: Gatling's
# atOnceUsers(3000) opens 3,000 at once, and the limit would time out the rest.
# Usage: sh plans/targets/jvm/akka-server.sh PORT; run from the repository root.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/build.sh" akka
exec java -Dakka.http.server.max-connections=20000 -cp "$here/akka/target/classes:$here/akka/target/lib/*" AkkaServer "$1" "$here/../../../crates/server/assets/FiringGeometry.png"
