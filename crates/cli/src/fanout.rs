//! What `stampede ssh` and `stampede k8s` share beyond the segments' commands
//! (`stampede_lab::fanout`): the merged result printed as the command's own tool
//! prints it.

use stampede_engine::RunResult;

use crate::common::Exit;
use crate::contract::report_merged;
use crate::merge::Report;

/// The report the merged result is printed as, for the dialects whose report a
/// result alone gives (the others are printed by [`print_report`] from their
/// command line).
pub fn report_of(command: &[String]) -> Report {
    match command.first().map(String::as_str) {
        Some("ab") => Report::Ab,
        Some("wrk") => Report::Wrk,
        Some("httperf") => Report::Httperf,
        Some("h2load") => Report::H2load,
        _ => Report::Text,
    }
}

/// Prints the merged result: as `format` asks, else as the command's tool reports
/// (oha's, hey's and ghz's reports and vLLM's with its saved JSON, read with the
/// command line each segment ran; `vegeta report`'s text for `vegeta attack`).
pub fn print_report(command: &[String], format: Option<Report>, r: &RunResult) -> Result<(), Exit> {
    let rest = |n: usize| command.get(n..).unwrap_or_default();
    match (format, command.first().map(String::as_str)) {
        (Some(f), _) => crate::merge::print(r, f),
        (None, Some("oha")) => report_merged::<stampede_flags::oha::Oha>(rest(1), r.clone()),
        (None, Some("hey")) => report_merged::<stampede_flags::hey::Hey>(rest(1), r.clone()),
        (None, Some("ghz")) => report_merged::<stampede_flags::ghz::Ghz>(rest(1), r.clone()),
        (None, Some("vllm")) => report_merged::<stampede_flags::vllm::Vllm>(rest(3), r.clone()),
        (None, Some("vegeta")) => {
            crate::console::out(&stampede_report::vegeta::vegeta_text(r));
            Ok(())
        }
        (None, _) => crate::merge::print(r, report_of(command)),
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
