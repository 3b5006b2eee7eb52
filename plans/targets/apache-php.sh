#!/usr/bin/env sh
# Starts Debian's Apache httpd with mod_php (prefork, as PHP needs) on PORT, with its
# own configuration under plans/targets/build: /pong from a PHP script and the
# 50,991-byte PNG as a static file, the Apache+PHP stack of reference experiment 003.
# Keep-alive is unlimited per connection, so httperf-style sessions of 1,000
# pipelined calls stay on one connection.
# Usage: sh plans/targets/apache-php.sh PORT; run from the repository root.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
mods=/usr/lib/apache2/modules
php="$(ls "$mods"/libphp*.so 2>/dev/null | head -n 1)"
if [ ! -x /usr/sbin/apache2 ] || [ -z "$php" ]; then
  echo "apache2 with mod_php is not installed (apt-get install apache2 libapache2-mod-php)" >&2
  exit 1
fi
base="$here/build/apache-$1"
rm -rf "$base"
mkdir -p "$base"
user=""
[ "$(id -u)" = 0 ] && user="User www-data
Group www-data"
cat > "$base/httpd.conf" <<CONF
ServerRoot "$base"
ServerName 127.0.0.1
Listen 127.0.0.1:$1
PidFile "$base/httpd.pid"
ErrorLog "$base/error.log"
LogLevel warn
$user
LoadModule mpm_prefork_module $mods/mod_mpm_prefork.so
LoadModule authz_core_module $mods/mod_authz_core.so
LoadModule mime_module $mods/mod_mime.so
LoadModule alias_module $mods/mod_alias.so
LoadModule php_module $php
TypesConfig /etc/mime.types
StartServers 8
MinSpareServers 8
MaxSpareServers 32
ServerLimit 256
MaxRequestWorkers 256
MaxConnectionsPerChild 0
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 15
DocumentRoot "$here/php"
<Directory "$here/php">
  Require all granted
</Directory>
<Directory "$(cd "$here/../../crates/server/assets" && pwd)">
  Require all granted
</Directory>
<FilesMatch "\.php\$">
  SetHandler application/x-httpd-php
</FilesMatch>
Alias /pong "$here/php/pong.php"
Alias /FiringGeometry.png "$(cd "$here/../../crates/server/assets" && pwd)/FiringGeometry.png"
CONF
exec /usr/sbin/apache2 -f "$base/httpd.conf" -DFOREGROUND
