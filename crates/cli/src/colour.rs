//! Colour for stampede's own words on a terminal: warnings and failures, PASS and
//! FAIL, an interrupted run, the limit's verdict and a bench's faster or slower. None
//! when the stream is not a terminal, when `NO_COLOR` is set (to anything but the
//! empty string), `CLICOLOR` is `0` or `TERM` is `dumb`; `CLICOLOR_FORCE` (to anything
//! but `0`) forces it even into a pipe. The dialects' reports stay as their tools print them; only
//! stampede's summary, its messages on standard error and its bench tables are
//! painted, a whole word at a time, so that the text read without colour is the same.

use std::io::IsTerminal;

/// Which stream a text goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

/// Whether text for `stream` is painted, from the environment and the stream.
pub fn enabled(stream: Stream) -> bool {
    let var = |k: &str| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned());
    decide(
        var("NO_COLOR").as_deref(),
        var("CLICOLOR_FORCE").as_deref(),
        var("CLICOLOR").as_deref(),
        var("TERM").as_deref(),
        match stream {
            Stream::Out => std::io::stdout().is_terminal(),
            Stream::Err => std::io::stderr().is_terminal(),
        },
    )
}

/// The rule, apart from the process: `NO_COLOR` wins, then `CLICOLOR_FORCE`, then
/// `CLICOLOR=0` turns it off, then a terminal that is not `dumb`.
fn decide(
    no_color: Option<&str>,
    force: Option<&str>,
    clicolor: Option<&str>,
    term: Option<&str>,
    tty: bool,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    if clicolor == Some("0") {
        return false;
    }
    tty && term != Some("dumb")
}

const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[1;33m";
const GREEN: &str = "\x1b[32m";
const RESET: &str = "\x1b[0m";

/// The words painted, and how.
const WORDS: [(&str, &str); 10] = [
    ("WARNING:", YELLOW),
    ("FAIL", RED),
    ("PASS", GREEN),
    ("! INTERRUPTED", RED),
    ("client-bound", YELLOW),
    ("network-bound", YELLOW),
    ("server-bound", GREEN),
    ("slower", RED),
    ("faster", GREEN),
    ("interrupted:", RED),
];

/// `text` with its words painted, when `stream` takes colour.
pub fn paint(text: &str, stream: Stream) -> String {
    if enabled(stream) {
        painted(text)
    } else {
        text.to_string()
    }
}

/// `text` with every whole occurrence of the [`WORDS`] painted.
fn painted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for (w, c) in WORDS {
            if let Some(after) = rest.strip_prefix(w) {
                let before_ok = out
                    .chars()
                    .next_back()
                    .is_none_or(|ch| !ch.is_alphanumeric());
                let after_ok = after.chars().next().is_none_or(|ch| !ch.is_alphanumeric());
                if before_ok && after_ok {
                    out.push_str(c);
                    out.push_str(w);
                    out.push_str(RESET);
                    rest = after;
                    continue 'scan;
                }
            }
        }
        let ch = rest.chars().next().expect("not empty");
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_decides_in_order() {
        assert!(
            !decide(Some("1"), Some("1"), None, None, true),
            "NO_COLOR wins"
        );
        assert!(
            decide(Some(""), None, None, Some("xterm"), true),
            "an empty NO_COLOR is unset"
        );
        assert!(
            decide(None, Some("1"), None, None, false),
            "forced into a pipe"
        );
        assert!(!decide(None, Some("0"), None, None, false));
        assert!(!decide(None, None, None, Some("dumb"), true));
        assert!(decide(None, None, None, Some("xterm-256color"), true));
        assert!(!decide(None, None, None, None, false));
        assert!(
            !decide(None, None, Some("0"), Some("xterm"), true),
            "CLICOLOR=0"
        );
        assert!(decide(None, None, Some("1"), Some("xterm"), true));
        assert!(
            decide(None, Some("1"), Some("0"), None, false),
            "forced over CLICOLOR=0"
        );
    }

    #[test]
    fn whole_words_are_painted_and_the_text_is_unchanged() {
        let t =
            "  limit       client-bound: x\nstampede: WARNING: 3 failed\nPASS p99 < 5ms\nPASSED\n";
        let p = painted(t);
        assert!(p.contains("\x1b[1;33mclient-bound\x1b[0m"), "{p:?}");
        assert!(p.contains("\x1b[1;33mWARNING:\x1b[0m"), "{p:?}");
        assert!(p.contains("\x1b[32mPASS\x1b[0m p99"), "{p:?}");
        assert!(
            p.contains("\nPASSED\n"),
            "a longer word is left alone: {p:?}"
        );
        let plain = p
            .replace(RED, "")
            .replace(YELLOW, "")
            .replace(GREEN, "")
            .replace(RESET, "");
        assert_eq!(plain, t);
    }
}
