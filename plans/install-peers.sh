#!/usr/bin/env bash
# Installs and builds the servers the plans start: nginx, aiohttp, Tomcat 10, Apache
# with mod_php, and Rails with Puma from Debian's packages (with a JDK and Maven when
# missing); the JVM targets (the JDK server, the Tomcat servlet, Akka-http and http4s)
# built once into plans/targets/jvm, their Maven artifacts cached so later builds are
# offline. Node.js must be on the PATH already (it ships with the machine image here).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null || need+=(python3-aiohttp)
[ -f /usr/share/tomcat10/lib/servlet-api.jar ] || need+=(tomcat10)
[ -x /usr/sbin/apache2 ] || need+=(apache2)
ls /usr/lib/apache2/modules/libphp*.so >/dev/null 2>&1 || need+=(libapache2-mod-php)
ruby -e 'require "rails"' >/dev/null 2>&1 || need+=(ruby-rails)
[ -x /usr/bin/puma ] || need+=(puma)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The packages' own services are not the plans' targets: keep them off their ports.
for svc in apache2 tomcat10; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  elif [ -x "/etc/init.d/$svc" ]; then
    "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
  fi
done
bash plans/targets/jvm/build.sh jdk tomcat akka http4s
command -v node >/dev/null 2>&1 || echo "note: node is not on the PATH; the node-http target will fail to start" >&2
echo "peers ready: $(nginx -v 2>&1), node $(node --version 2>/dev/null || echo missing), $(/usr/bin/python3 -c 'import aiohttp; print("aiohttp", aiohttp.__version__)'), $(/usr/sbin/apache2 -v | head -n 1), Rails $(ruby -e 'require "rails"; print Rails.version'), $(java -version 2>&1 | head -n 1), Tomcat, Akka-http and http4s built"
