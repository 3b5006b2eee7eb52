//! httperf's session log (`--wsesslog=N,X,F`): the file that says what each session
//! requests, read into the engine's session steps.
//!
//! The format is httperf's: `#` starts a comment line; lines of only whitespace end a
//! session (several in a row end one); every other line is a URI with optional
//! `method=M`, `contents=BODY` (quoted with `'` or `"`, `\n` for a newline) and
//! `think=SECONDS`. A line that starts with whitespace belongs to the burst that
//! follows the line before it: after a line's response, its indented lines go out
//! together, pipelined, and the think time (the line's own `think=`, else X) comes
//! after the last of them. Sessions take the file's sessions in turn.

use std::time::Duration;

use crate::InputError;

use stampede_engine::{Request, Step};

/// One call of a session log, before it is built into a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub uri: String,
    pub method: String,
    pub body: Option<Vec<u8>>,
    /// Think time after this call's group (its line and the indented lines after it).
    pub think: Option<Duration>,
    /// An indented line: sent in the burst after the line before it.
    pub burst: bool,
    /// The file's line, for messages.
    pub line: usize,
}

/// Reads a session log: the sessions, each a list of calls. `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Vec<Vec<Call>>, InputError> {
    let mut sessions: Vec<Vec<Call>> = Vec::new();
    let mut current: Vec<Call> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.starts_with('#') {
            continue;
        }
        if raw.trim().is_empty() {
            if !current.is_empty() {
                sessions.push(std::mem::take(&mut current));
            }
            continue;
        }
        let burst = raw.starts_with(|c: char| c.is_whitespace());
        if burst && current.is_empty() {
            return Err(InputError::at(
                file,
                line,
                "an indented line belongs to the burst after the line before it, but it begins a session",
            ));
        }
        current.push(call(raw.trim(), burst, line).map_err(|e| InputError::at(file, line, e))?);
    }
    if !current.is_empty() {
        sessions.push(current);
    }
    if sessions.is_empty() {
        return Err(InputError::of(
            file,
            "no sessions (every line is blank or a comment)",
        ));
    }
    Ok(sessions)
}

/// One line: the URI, then `name=value` fields; what is wrong with it, said.
fn call(text: &str, burst: bool, line: usize) -> Result<Call, Wrong> {
    let (uri, mut rest) = text.split_at(text.find(char::is_whitespace).unwrap_or(text.len()));
    let mut c = Call {
        uri: uri.to_string(),
        method: "GET".into(),
        body: None,
        think: None,
        burst,
        line,
    };
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(c);
        }
        let eq = rest
            .find('=')
            .ok_or_else(|| Wrong(format!("{rest:?}: expected method=, contents= or think=")))?;
        let name = &rest[..eq];
        let (value, after) =
            value(&rest[eq + 1..]).map_err(|q| Wrong(format!("{name}: no closing {q}")))?;
        match name {
            "method" if !value.is_empty() => c.method = value,
            "contents" => c.body = Some(value.into_bytes()),
            "think" => {
                let s: f64 = value
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| Wrong(format!("think: {value:?} is not a number of seconds")))?;
                c.think = Some(Duration::from_secs_f64(s));
            }
            "method" => return Err(Wrong("method: empty".into())),
            other => {
                return Err(Wrong(format!(
                    "{other:?} is not a field of a session log line; write method=, contents= or think="
                )))
            }
        }
        rest = after;
    }
}

/// What is wrong with a line, said.
#[derive(Debug)]
struct Wrong(String);

impl std::fmt::Display for Wrong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A field's value: quoted (`'…'` or `"…"`, with `\n` and `\\` escapes) or up to the
/// next whitespace. Returns it and what follows; a quoted value without its closing
/// quote is refused with the quote.
fn value(s: &str) -> Result<(String, &str), char> {
    let Some(q) = s.chars().next().filter(|c| *c == '\'' || *c == '"') else {
        let end = s.find(char::is_whitespace).unwrap_or(s.len());
        return Ok((s[..end].to_string(), &s[end..]));
    };
    let mut out = String::new();
    let mut chars = s[1..].char_indices();
    while let Some((i, ch)) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, 't')) => out.push('\t'),
                Some((_, other)) => out.push(other),
                None => break,
            },
            c if c == q => return Ok((out, &s[1 + i + 1..])),
            c => out.push(c),
        }
    }
    Err(q)
}

/// The sessions as engine steps: `build` makes each call's request; `think` is the
/// think time of groups without their own.
pub fn steps<E>(
    sessions: &[Vec<Call>],
    think: Duration,
    mut build: impl FnMut(&Call) -> Result<Request, E>,
) -> Result<Vec<Step>, E> {
    let mut steps = Vec::new();
    for calls in sessions {
        // The think time of the group the current line began.
        let mut group_think = think;
        for (k, c) in calls.iter().enumerate() {
            if !c.burst {
                group_think = c.think.unwrap_or(think);
            }
            let mut step = Step::new(build(c)?, Duration::ZERO);
            // An indented line after an indented one is in the same burst; the first
            // indented line after a plain one opens the burst.
            step.follows = c.burst && k > 0 && calls[k - 1].burst;
            step.new_session = k == 0;
            steps.push(step);
            // The group ends where the next line is not indented: its think time
            // goes on its last step.
            if calls.get(k + 1).is_none_or(|n| !n.burst) {
                steps.last_mut().expect("just pushed").pause = group_think;
            }
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of httperf's manual page.
    const EXAMPLE: &str = "# session 1 definition (this is a comment)
/foo.html think=2.0
     /pict1.gif
     /pict2.gif
/foo2.html method=POST contents='Post data'
     /pict3.gif
     /pict4.gif

# session 2 definition
/foo3.html method=POST contents=\"Multiline\\ndata\"
/foo4.html method=HEAD
";

    #[test]
    fn the_manuals_example_reads_as_httperf_describes_it() {
        let s = parse(EXAMPLE, "f").unwrap();
        assert_eq!(s.len(), 2);
        let uris: Vec<&str> = s[0].iter().map(|c| c.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "/foo.html",
                "/pict1.gif",
                "/pict2.gif",
                "/foo2.html",
                "/pict3.gif",
                "/pict4.gif"
            ]
        );
        assert_eq!(s[0][0].think, Some(Duration::from_secs(2)));
        assert_eq!(
            (s[0][3].method.as_str(), s[0][3].body.as_deref()),
            ("POST", Some(&b"Post data"[..]))
        );
        assert_eq!(s[1][0].body.as_deref(), Some(&b"Multiline\ndata"[..]));
        assert_eq!(s[1][1].method, "HEAD");

        let req = |c: &Call| {
            stampede_engine::RequestBuilder::new(&c.method, &c.uri)
                .header("Host", "x")
                .build()
                .map_err(|e| e.to_string())
        };
        let st = steps(&s, Duration::from_millis(500), req).unwrap();
        let shape: Vec<(bool, bool, u64)> = st
            .iter()
            .map(|s| (s.new_session, s.follows, s.pause.as_millis() as u64))
            .collect();
        assert_eq!(
            shape,
            [
                // /foo.html alone; then /pict1 and /pict2 pipelined; 2 s after them.
                (true, false, 0),
                (false, false, 0),
                (false, true, 2000),
                // /foo2.html, then its burst; the default think after it.
                (false, false, 0),
                (false, false, 0),
                (false, true, 500),
                // Session 2: two calls, the default think between.
                (true, false, 500),
                (false, false, 500),
            ]
        );
    }

    #[test]
    fn bad_lines_name_the_file_line_and_field() {
        for (text, wanted) in [
            ("  /a\n", "f:1: an indented line"),
            ("/a think=soon\n", "f:1: think: \"soon\" is not a number"),
            ("/a\n/b colour=red\n", "f:2: \"colour\" is not a field"),
            ("/a contents='open\n", "f:1: contents: no closing '"),
            ("/a method=\n", "f:1: method: empty"),
            ("# only\n\n", "f: no sessions"),
        ] {
            let e = parse(text, "f").unwrap_err().to_string();
            assert!(e.starts_with(wanted), "{text:?}: {e}");
        }
        // Several blank lines make no empty session.
        assert_eq!(parse("/a\n\n\n\n/b\n", "f").unwrap().len(), 2);
    }
}
