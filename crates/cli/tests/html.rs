//! HTML reports end to end: a run report from `stampede load --html`, a bench report
//! from `stampede bench --html` and `stampede report`, checked as files (self-contained,
//! every chart present) and, where Chromium is installed (required in CI), loaded in
//! headless Chromium: no console errors, and a screenshot with the charts drawn.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{chromium, HEADLESS};

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stampede-html-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Loads `page` in headless Chromium; returns (stderr, DOM as rendered) and writes a
/// screenshot to `png`.
fn render(browser: &str, page: &Path, png: &Path) -> (String, String) {
    let profile = tmp(&format!(
        "profile-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let base = [HEADLESS.as_slice(), &["--enable-logging=stderr", "--v=0"]].concat();
    let url = format!("file://{}", page.display());
    let dom = Command::new(browser)
        .args(&base)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    let shot = Command::new(browser)
        .args(&base)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--window-size=1200,2600")
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    (
        String::from_utf8_lossy(&dom.stderr).into_owned() + &String::from_utf8_lossy(&shot.stderr),
        String::from_utf8_lossy(&dom.stdout).into_owned(),
    )
}

fn p(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// Runs the binary and asserts that it succeeded.
fn stampede(args: &[&str]) {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<script"), "no script needed");
    for remote in ["http://", "https://"] {
        // The only URLs are the run's own target, shown as text.
        for (i, _) in html.match_indices(remote) {
            let before = &html[i.saturating_sub(6)..i];
            assert!(
                !before.contains("src=") && !before.contains("href="),
                "a remote resource at {i}"
            );
        }
    }
    assert!(html.contains("prefers-color-scheme:dark"));
    assert!(html.contains("name=\"viewport\""));
}

fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

#[test]
fn run_and_bench_reports_render_without_errors() {
    let srv = crate::common::srv();
    let addr = srv.addr();
    let dir = tmp("reports");

    // A run report: a fixed-rate run with some error pages, so every section has data.
    let run_html = dir.join("run.html");
    stampede(&[
        "load",
        &format!("http://{addr}/pong"),
        "--rate",
        "1000",
        "-d",
        "2500ms",
        "-c",
        "4",
        "-t",
        "1",
        "-q",
        "--html",
        p(&run_html),
    ]);
    let html = std::fs::read_to_string(&run_html).unwrap();
    check_self_contained(&html);
    for section in [
        "Requests per second",
        "Latency percentiles per second",
        "Errors per second",
        "Active connections",
        "Percentile spectrum",
        "Response-time distribution",
        "Gatling&#x27;s response-time ranges",
        "Environment",
        "Schedule",
    ] {
        assert!(
            html.contains(section) || html.contains(&section.replace("&#x27;", "'")),
            "{section}"
        );
    }
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 7);
    assert!(html.matches("<polyline").count() >= 7, "lines drawn");

    // A bench report, from the bench itself and again from the store.
    let plan = dir.join("p.toml");
    std::fs::write(
        &plan,
        "name = \"html\"\ndescription = \"Two configurations on one shared machine.\"\n[runs]\nwarmup = 0\nrepetitions = 2\npause = \"10ms\"\n[client]\nthreads = 1\n\
         [[target]]\nname = \"one\"\nstart = \"{stampede} serve --listen 127.0.0.1:{port} --threads 1\"\nready = \"/pong\"\n\
         [[target]]\nname = \"two\"\nstart = \"{stampede} serve --listen 127.0.0.1:{port} --threads 2\"\nready = \"/pong\"\n\
         [[scenario]]\nname = \"chat\"\npath = \"/chat\"\nrequests = 3000\nconnections = 4\n\
         [[scenario]]\nname = \"rate\"\npath = \"/pong\"\nrate = 400.0\nduration = \"500ms\"\nconnections = 2\n",
    )
    .unwrap();
    let db = dir.join("s.db");
    let bench_html = dir.join("bench.html");
    stampede(&[
        "bench",
        p(&plan),
        "--db",
        p(&db),
        "--report",
        p(&dir.join("r.md")),
        "--html",
        p(&bench_html),
        "-q",
    ]);
    let html = std::fs::read_to_string(&bench_html).unwrap();
    check_self_contained(&html);
    assert!(html.contains("Comparison") && html.contains("Latency spectra"));
    // What the plan says the comparison means, as the terminal says it.
    assert!(html.contains("<p class=\"note\">Two configurations on one shared machine.</p>"));
    // req/s bars, p99 bars, CPU, RSS, and one spectrum per scenario.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 6);
    let stored = dir.join("stored.html");
    stampede(&["report", "-o", p(&stored), "--db", p(&db)]);
    let again = std::fs::read_to_string(&stored).unwrap();
    assert_eq!(again.matches("<svg class=\"chart\"").count(), 6);
    assert!(again.contains("chat") && again.contains("two"));
    let one_run = dir.join("one.html");
    stampede(&["report", "--run", "1", "-o", p(&one_run), "--db", p(&db)]);
    assert!(std::fs::read_to_string(&one_run)
        .unwrap()
        .contains("one / chat run 1"));

    match chromium() {
        Some(browser) => {
            for (page, png) in [(&run_html, "run.png"), (&bench_html, "bench.png")] {
                let png = dir.join(png);
                let (stderr, dom) = render(browser, page, &png);
                assert!(console_errors(&stderr).is_empty(), "{stderr}");
                assert!(
                    dom.contains("<svg class=\"chart\""),
                    "the DOM holds the charts"
                );
                let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
                assert!(size > 20_000, "a screenshot with content, {size} bytes");
                if let Some(d) = std::env::var_os("STAMPEDE_SCREENSHOTS") {
                    std::fs::copy(
                        &png,
                        Path::new(&d).join(format!(
                            "report-{}",
                            png.file_name().unwrap().to_string_lossy()
                        )),
                    )
                    .unwrap();
                }
            }
        }
        None => crate::common::missing_peer("chromium (`apt-get install chromium`)"),
    }
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
