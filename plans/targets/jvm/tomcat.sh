#!/usr/bin/env sh
# Starts Debian's Tomcat 10 on PORT with its own base directory under
# plans/targets/jvm/build, serving the reference endpoints from PlanServlet. With
# `error-pages` as the second argument the web application maps no servlet, so Tomcat
# answers every request with its 404 error page: the misconfigured Tomcat of reference
# experiment 000, which ab counted as complete requests.
# Usage: sh plans/targets/jvm/tomcat.sh PORT [error-pages]; run from the repository root.
set -e
here="$(cd "$(dirname "$0")" && pwd)"
home=/usr/share/tomcat10
bash "$here/build.sh" tomcat
base="$here/build/tomcat-$1"
rm -rf "$base"
mkdir -p "$base/conf" "$base/logs" "$base/temp" "$base/work" "$base/webapps/ROOT/WEB-INF"
cp "$home/etc/web.xml" "$home/etc/logging.properties" "$home/etc/catalina.properties" "$home/etc/context.xml" "$base/conf/"
cat > "$base/conf/server.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1" shutdown="SHUTDOWN">
  <Service name="Catalina">
    <Connector port="$1" address="127.0.0.1" protocol="HTTP/1.1" maxThreads="200"
               maxConnections="20000" acceptCount="10000" connectionTimeout="20000"/>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false"/>
    </Engine>
  </Service>
</Server>
XML
root="$base/webapps/ROOT/WEB-INF"
if [ "${2:-}" = error-pages ]; then
  printf '<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="5.0"/>\n' > "$root/web.xml"
else
  mkdir -p "$root/classes"
  cp "$here"/build/servlet/*.class "$root/classes/"
  cp "$here/../../../crates/server/assets/FiringGeometry.png" "$root/"
  cat > "$root/web.xml" <<XML
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="5.0">
  <servlet><servlet-name>plan</servlet-name><servlet-class>PlanServlet</servlet-class>
    <load-on-startup>1</load-on-startup></servlet>
  <servlet-mapping><servlet-name>plan</servlet-name><url-pattern>/</url-pattern></servlet-mapping>
</web-app>
XML
fi
CATALINA_HOME="$home" CATALINA_BASE="$base" CATALINA_TMPDIR="$base/temp" exec "$home/bin/catalina.sh" run
