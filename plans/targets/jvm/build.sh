#!/usr/bin/env bash
# Builds one JVM target into plans/targets/jvm (kept between runs; rebuilt only when a
# source is newer than the build): `jdk` (the JDK-server classes) and `tomcat` (the
# servlet) with javac; `akka` and `http4s` with Maven, their artifacts cached in ~/.m2
# so that later builds are offline. Prints nothing when there is nothing to do.
# Usage: bash plans/targets/jvm/build.sh jdk|tomcat|akka|http4s ...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/build"
# Whether `$1` is missing or older than a Java source here.
stale() { [ ! -e "$1" ] || [ -n "$(find "$here" -maxdepth 1 -name '*.java' -newer "$1")" ]; }
# A Maven project: packaged with its runtime dependencies in target/lib.
maven() {
  local dir="$here/$1"
  if [ ! -e "$dir/target/lib" ] || [ -n "$(find "$dir/src" "$dir/pom.xml" -newer "$dir/target/lib")" ]; then
    (cd "$dir" && mvn -q -B -Dstyle.color=never package dependency:copy-dependencies \
      -DoutputDirectory=target/lib -DincludeScope=runtime >&2)
    touch "$dir/target/lib"
  fi
}
for target in "$@"; do
  case "$target" in
    jdk)
      if stale "$out/classes/JdkServer.class"; then
        mkdir -p "$out/classes"
        javac -d "$out/classes" "$here/Endpoints.java" "$here/JdkServer.java"
      fi ;;
    tomcat)
      if stale "$out/servlet/PlanServlet.class"; then
        api=/usr/share/tomcat10/lib/servlet-api.jar
        [ -f "$api" ] || { echo "tomcat10 is not installed (apt-get install tomcat10): no $api" >&2; exit 1; }
        mkdir -p "$out/servlet"
        javac -cp "$api" -d "$out/servlet" "$here/Endpoints.java" "$here/PlanServlet.java"
      fi ;;
    akka)
      cp -p "$here/Endpoints.java" "$here/akka/src/main/java/Endpoints.java"
      maven akka ;;
    http4s) maven http4s ;;
    *) echo "build.sh: unknown target $target (jdk, tomcat, akka or http4s)" >&2; exit 2 ;;
  esac
done
