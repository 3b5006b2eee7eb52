// The reference endpoints on the JDK's built-in HTTP server (com.sun.net.httpserver),
// the kind of plain Java server experiment 002 put under 10,000 connections.
// Usage: java -cp BUILD JdkServer PORT PNG [THREADS]

import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.Executors;

public final class JdkServer {
    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        Endpoints e = new Endpoints(Path.of(args[1]), "jdk http server");
        int threads = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 16384);
        server.setExecutor(Executors.newFixedThreadPool(threads));
        server.createContext("/", ex -> {
            Endpoints.Reply r = e.answer(ex.getRequestURI().getPath(), ex.getRequestURI().getRawQuery());
            ex.getResponseHeaders().set("Content-Type", r.type());
            ex.getResponseHeaders().set("Server", "jdk-httpserver");
            ex.sendResponseHeaders(r.status(), r.body().length);
            try (OutputStream o = ex.getResponseBody()) {
                o.write(r.body());
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> server.stop(0)));
        server.start();
    }
}
