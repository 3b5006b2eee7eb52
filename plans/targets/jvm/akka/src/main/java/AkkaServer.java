// The reference endpoints (Endpoints.java, copied here by build.sh) on Akka-http's Java
// API: /backend, /quacker?i=, /biteq?i= as reference experiment 000 describes them, and
// the rest of the plans' endpoints. /biteq is answered from a Future on the actor
// system's dispatcher, as an Akka route hands work to another task.
// Usage: java -cp target/classes:target/lib/* AkkaServer PORT PNG

import akka.actor.ActorSystem;
import akka.http.javadsl.Http;
import akka.http.javadsl.model.ContentType;
import akka.http.javadsl.model.ContentTypes;
import akka.http.javadsl.model.HttpEntities;
import akka.http.javadsl.model.HttpResponse;
import akka.http.javadsl.model.MediaTypes;
import akka.http.javadsl.model.headers.ProductVersion;
import akka.http.javadsl.model.headers.Server;
import akka.http.javadsl.server.AllDirectives;
import akka.http.javadsl.server.Route;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

public final class AkkaServer extends AllDirectives {
    private final Endpoints endpoints;

    AkkaServer(Endpoints endpoints) {
        this.endpoints = endpoints;
    }

    private static HttpResponse response(Endpoints.Reply r) {
        ContentType type = switch (r.type()) {
            case "application/json" -> ContentTypes.APPLICATION_JSON;
            case "image/png" -> ContentTypes.create(MediaTypes.IMAGE_PNG);
            default -> ContentTypes.TEXT_PLAIN_UTF8;
        };
        return HttpResponse.create().withStatus(r.status()).withEntity(HttpEntities.create(type, r.body()));
    }

    Route routes(ActorSystem system) {
        return respondWithHeader(Server.create(ProductVersion.create("akka-http", "10.2.10")), () ->
            extractUri(uri -> {
                String path = uri.path();
                String query = uri.rawQueryString().orElse(null);
                if (path.equals("/biteq")) {
                    return completeWithFuture(CompletableFuture.supplyAsync(
                        () -> response(endpoints.answer(path, query)), system.dispatcher()));
                }
                return complete(response(endpoints.answer(path, query)));
            }));
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        ActorSystem system = ActorSystem.create("target");
        AkkaServer s = new AkkaServer(new Endpoints(Path.of(args[1]), "akka-http server"));
        Http.get(system).newServerAt("127.0.0.1", port).bind(s.routes(system));
        Runtime.getRuntime().addShutdownHook(new Thread(system::terminate));
    }
}
