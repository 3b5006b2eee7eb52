#!/usr/bin/env bash
# Installs the peer servers the plans start: nginx and aiohttp from Debian's packages;
# Node.js must be on the PATH already (it ships with the machine image here).
set -euo pipefail
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
/usr/bin/python3 -c 'import aiohttp' 2>/dev/null || need+=(python3-aiohttp)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v node >/dev/null 2>&1 || echo "note: node is not on the PATH; the node-http target will fail to start" >&2
echo "peers ready: $(nginx -v 2>&1), node $(node --version 2>/dev/null || echo missing), $(/usr/bin/python3 -c 'import aiohttp; print("aiohttp", aiohttp.__version__)')"
