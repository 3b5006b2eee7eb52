//! What `stampede ssh` and `stampede k8s` share: the stampede command each segment
//! runs (`load` or a dialect, given its segment, the shared start and `--json -`), and
//! the report of the merged result in that command's own form.

use crate::common::Exit;
use crate::merge::Report;

/// The subcommands a segment may run: each writes its result as JSON on standard
/// output with `--json -` (its report then goes to standard error).
pub const COMMANDS: [&str; 5] = ["load", "ab", "wrk", "httperf", "h2load"];

/// Flags each segment is given and the user must leave out.
const GIVEN: [&str; 3] = ["--segment", "--start-at", "--json"];

/// Checks the command after `--`; `each` names what runs a segment ("host", "pod").
pub fn check(command: &[String], each: &str) -> Result<(), Exit> {
    let Some(sub) = command.first() else {
        return Err(Exit::usage(
            "give the stampede command after --, without `stampede`: -- load URL …",
        ));
    };
    if !COMMANDS.contains(&sub.as_str()) {
        return Err(Exit::usage(format!(
            "after --: {sub:?} is not one of {}; give the command without `stampede`",
            COMMANDS.join(", ")
        )));
    }
    for taken in GIVEN {
        if command
            .iter()
            .any(|x| x == taken || x.starts_with(&format!("{taken}=")))
        {
            return Err(Exit::usage(format!(
                "after --: leave out {taken}; each {each} is given its own"
            )));
        }
    }
    Ok(())
}

/// The command with its segment (`K/N`, or `env:NAME/N`) and the shared start (Unix
/// seconds) added, its result as JSON on standard output.
pub fn segment_command(command: &[String], segment: &str, start_at: f64) -> Vec<String> {
    let mut words = command.to_vec();
    if words[0] == "load" {
        // No live lines: what a pod logs is its result.
        words.insert(1, "-q".into());
    }
    words.extend([
        "--segment".into(),
        segment.into(),
        "--start-at".into(),
        format!("{start_at:.3}"),
        "--json".into(),
        "-".into(),
    ]);
    words
}

/// The report the merged result is printed as: the command's own.
pub fn report_of(command: &[String]) -> Report {
    match command.first().map(String::as_str) {
        Some("ab") => Report::Ab,
        Some("wrk") => Report::Wrk,
        Some("httperf") => Report::Httperf,
        Some("h2load") => Report::H2load,
        _ => Report::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn commands_are_checked_and_given_their_segment() {
        assert!(check(&words("load http://h/"), "host").is_ok());
        assert!(check(&words("wrk -R 100 http://h/"), "host").is_ok());
        let e = check(&words("serve"), "pod").unwrap_err();
        assert!(e.message.contains("not one of load, ab"), "{}", e.message);
        let e = check(&words("ab --json=x http://h/"), "pod").unwrap_err();
        assert!(
            e.message.contains("leave out --json; each pod"),
            "{}",
            e.message
        );
        assert_eq!(
            segment_command(&words("load http://h/"), "2/4", 1.5).join(" "),
            "load -q http://h/ --segment 2/4 --start-at 1.500 --json -"
        );
        assert_eq!(
            segment_command(&words("wrk http://h/"), "env:I/4", 1.0).join(" "),
            "wrk http://h/ --segment env:I/4 --start-at 1.000 --json -"
        );
        assert_eq!(report_of(&words("h2load x")), Report::H2load);
        assert_eq!(report_of(&words("load x")), Report::Text);
    }
}
