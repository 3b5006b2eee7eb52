//! What `stampede ssh` and `stampede k8s` share beyond the segments' commands
//! (`stampede_lab::fanout`): the report the merged result is printed as.

use crate::merge::Report;

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

    #[test]
    fn the_merged_result_is_reported_as_the_command_reports() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(report_of(&words("h2load x")), Report::H2load);
        assert_eq!(report_of(&words("wrk -R 1 x")), Report::Wrk);
        assert_eq!(report_of(&words("load x")), Report::Text);
    }
}
