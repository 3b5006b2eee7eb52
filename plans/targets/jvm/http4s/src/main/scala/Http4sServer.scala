// The http4s target of reference experiment 004: one plaintext endpoint (and /pong for
// readiness) on http4s's Ember server, as an HttpApp. Ember is the server http4s 0.23
// maintains (Blaze, the experiment's, left the core project).
// Usage: java -cp target/classes:target/lib/* Http4sServer PORT

import cats.effect.{ExitCode, IO, IOApp}
import com.comcast.ip4s.{Host, Port}
import org.http4s.{HttpApp, HttpRoutes}
import org.http4s.dsl.io._
import org.http4s.ember.server.EmberServerBuilder
import org.http4s.headers.Server
import org.http4s.ProductId

object Http4sServer extends IOApp {
  private val routes = HttpRoutes.of[IO] {
    case GET -> Root / "plaintext" => Ok("Hello, World!")
    case GET -> Root / "pong" => Ok("PONG")
  }

  private val app: HttpApp[IO] =
    HttpApp[IO](req => routes.orNotFound.run(req).map(_.putHeaders(Server(ProductId("http4s", Some("0.23"))))))

  def run(args: List[String]): IO[ExitCode] =
    EmberServerBuilder
      .default[IO]
      .withHost(Host.fromString("127.0.0.1").get)
      .withPort(Port.fromInt(args.head.toInt).get)
      .withHttpApp(app)
      .withMaxConnections(100000)
      .build
      .useForever
      .as(ExitCode.Success)
}
