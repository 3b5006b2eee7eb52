// The reference experiments' endpoints for the JVM targets (the JDK's built-in server
// and the Tomcat servlet), with the same bodies and sizes as `stampede serve` and the
// other peers: /pong, /backend, /chat, /plaintext, /json, /quacker?i=, /biteq?i=,
// /perf (an 84-byte-ish JSON body whose length varies with its counter) and the
// 50,991-byte PNG.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

public final class Endpoints {
    /** What a request is answered with. */
    public record Reply(int status, String type, byte[] body) {}

    private static final Pattern ID = Pattern.compile("^[A-Za-z0-9]{14}$");
    private final AtomicLong perf = new AtomicLong();
    private final byte[] png;
    private final String name;

    /** `png`: the PNG file; `name`: said in /perf's message. */
    public Endpoints(Path png, String name) throws java.io.IOException {
        this.png = Files.readAllBytes(png);
        this.name = name;
    }

    private static Reply text(int status, String s) {
        return new Reply(status, "text/plain", s.getBytes(StandardCharsets.UTF_8));
    }

    private static Reply json(String s) {
        return new Reply(200, "application/json", s.getBytes(StandardCharsets.UTF_8));
    }

    private static String param(String query, String key) {
        if (query == null) return null;
        for (String kv : query.split("&")) {
            int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(key)) return kv.substring(eq + 1);
        }
        return null;
    }

    /** The answer to GET `path` with `query` (null when none). */
    public Reply answer(String path, String query) {
        switch (path) {
            case "/pong": return text(200, "PONG");
            case "/backend": return text(200, "Hello from the backend service!");
            case "/chat": return json("{\"message\":\"Hello from the server\"}");
            case "/plaintext": return text(200, "Hello, World!");
            case "/json": return json("{\"message\":\"Hello, World!\"}");
            case "/perf":
                return json("{\"endpoint\":\"perf\",\"thread\":0,\"request\":" + perf.incrementAndGet()
                        + ",\"message\":\"" + name + "\"}");
            case "/FiringGeometry.png": return new Reply(200, "image/png", png);
            case "/quacker":
            case "/biteq": {
                String id = param(query, "i");
                if (id == null) return text(400, "missing i");
                if (!ID.matcher(id).matches()) return text(404, "unknown id");
                if (path.equals("/quacker")) return json("{\"id\":\"" + id + "\",\"n\":59}");
                return text(200, id + ":" + sha1(id).substring(0, 12));
            }
            default: return text(404, "not found");
        }
    }

    private static String sha1(String s) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-1").digest(s.getBytes(StandardCharsets.UTF_8));
            StringBuilder b = new StringBuilder();
            for (byte x : d) b.append(String.format("%02x", x));
            return b.toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
