// The reference endpoints as a servlet, for Tomcat (Jakarta Servlet API), the server
// experiment 000 set against Akka-http.

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.file.Path;

public final class PlanServlet extends HttpServlet {
    private Endpoints endpoints;

    @Override
    public void init() throws ServletException {
        try {
            endpoints = new Endpoints(
                    Path.of(getServletContext().getRealPath("/WEB-INF/FiringGeometry.png")), "tomcat servlet");
        } catch (IOException e) {
            throw new ServletException(e);
        }
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
        Endpoints.Reply r = endpoints.answer(req.getRequestURI(), req.getQueryString());
        res.setStatus(r.status());
        res.setContentType(r.type());
        res.setHeader("Server", "tomcat");
        res.setContentLength(r.body().length);
        res.getOutputStream().write(r.body());
    }
}
