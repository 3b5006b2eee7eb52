//! What a newcomer reads: colour only where it belongs, the help topics, and the
//! summary's figures written one way.

use std::process::Command;

use crate::common::recorder::text;

/// `stampede ARGS` with the environment's colour variables set as given (and the
/// others removed).
fn run_env(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stampede"));
    c.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn colour_is_forced_refused_or_left_out_of_pipes() {
    let srv = crate::common::srv();
    let url = srv.url("/status/503");
    let args = ["load", "-q", "-c", "2", "-n", "20", url.as_str()];
    // A pipe: no colour.
    let plain = run_env(&args, &[]);
    assert!(!text(&plain.stdout).contains('\x1b') && !text(&plain.stderr).contains('\x1b'));
    assert!(text(&plain.stderr).contains("WARNING: 20 of 20 responses were not 2xx"));
    // Forced: the warning and the limit's verdict are painted, the words unchanged.
    let forced = run_env(&args, &[("CLICOLOR_FORCE", "1")]);
    assert!(
        text(&forced.stderr).contains("\x1b[1;33mWARNING:\x1b[0m 20 of 20"),
        "{:?}",
        text(&forced.stderr)
    );
    // NO_COLOR wins over the force.
    let none = run_env(&args, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]);
    assert!(!text(&none.stdout).contains('\x1b') && !text(&none.stderr).contains('\x1b'));
    // A dialect's report stays as its tool prints it.
    let ab = run_env(&["ab", "-n", "5", url.as_str()], &[("CLICOLOR_FORCE", "1")]);
    assert!(!text(&ab.stdout).contains('\x1b'), "{}", text(&ab.stdout));
}

#[test]
fn help_topics_print_the_reference_pages() {
    let out = run_env(&["help", "topics"], &[]);
    assert!(out.status.success());
    let list = text(&out.stdout);
    for t in [
        "workloads",
        "dialects",
        "protocols",
        "outputs",
        "server",
        "distributed",
        "plans",
        "streaming",
        "websocket",
    ] {
        assert!(list.contains(&format!("  {t} ")), "{t} in {list}");
        let page = run_env(&["help", t], &[]);
        assert!(
            page.status.success() && text(&page.stdout).starts_with("# "),
            "{t}"
        );
    }
    assert!(text(&run_env(&["help", "http3"], &[]).stdout).contains("## HTTP/3"));
    // A subcommand's name still gives its flags.
    assert!(text(&run_env(&["help", "load"], &[]).stdout).contains("--connections"));
    assert!(text(&run_env(&["--help"], &[]).stdout).contains("stampede help topics"));
}

#[test]
fn the_summary_writes_figures_one_way() {
    let srv = crate::common::srv();
    let out = run_env(
        &["load", "-q", "-c", "2", "-n", "2000", &srv.url("/pong")],
        &[],
    );
    let o = text(&out.stdout);
    let requests = o.lines().find(|l| l.starts_with("  requests")).unwrap();
    // Thousands separated, the time with its unit.
    assert!(
        requests.starts_with("  requests    2,000 completed in "),
        "{o}"
    );
    let rate = requests
        .split(" = ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(rate.replace(',', "").parse::<u64>().is_ok(), "{o}");
    assert!(
        o.starts_with("GET ") && o.contains("2 connections, "),
        "{o}"
    );
    let limit = o.lines().find(|l| l.starts_with("  limit")).unwrap();
    // One short line; -v adds the reasons.
    assert!(!limit.contains("used ") && limit.len() < 110, "{limit}");
    let v = run_env(
        &[
            "load",
            "-q",
            "-v",
            "-c",
            "2",
            "-n",
            "2000",
            &srv.url("/pong"),
        ],
        &[],
    );
    let o = text(&v.stdout);
    let at = o.lines().position(|l| l.starts_with("  limit")).unwrap();
    assert!(
        o.lines()
            .nth(at + 1)
            .is_some_and(|l| l.starts_with("              ")),
        "{o}"
    );
}
