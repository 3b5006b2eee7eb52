//! `stampede completions SHELL` and `stampede man [SUBCOMMAND]`: shell completions and
//! man pages made from the same command definitions the parser uses. The dialects
//! (`ab`, `wrk`, `httperf`, `h2load`, `oha`, `hey`, `vegeta`'s commands, `vllm bench
//! serve`) take their arguments unparsed when run, so that their own rules apply; here
//! each is given its own flag table, so that their flags complete and their pages list
//! them (vegeta's page lists each of its commands' options).

use clap::CommandFactory;

use crate::common::Exit;
use crate::console::out_data;

/// The whole command line: stampede's own subcommands, and each dialect with its flags.
pub fn full_command() -> clap::Command {
    let mut cmd = crate::Cli::command();
    let dialects = [
        (
            "ab",
            stampede_flags::ab::DIALECT.command::<stampede_flags::ab::AbArgs>(),
        ),
        (
            "wrk",
            stampede_flags::wrk::DIALECT.command::<stampede_flags::wrk::WrkArgs>(),
        ),
        (
            "httperf",
            stampede_flags::httperf::DIALECT.command::<stampede_flags::httperf::HttperfArgs>(),
        ),
        (
            "h2load",
            stampede_flags::h2load::DIALECT.command::<stampede_flags::h2load::H2loadArgs>(),
        ),
        (
            "oha",
            stampede_flags::oha::DIALECT.command::<stampede_flags::oha::OhaArgs>(),
        ),
        (
            "hey",
            stampede_flags::hey::DIALECT.command::<stampede_flags::hey::HeyArgs>(),
        ),
        (
            "ghz",
            stampede_flags::ghz::DIALECT.command::<stampede_flags::ghz::GhzArgs>(),
        ),
    ];
    for (name, own) in dialects {
        cmd = cmd.mut_subcommand(name, |old| {
            let about = old.get_about().cloned();
            let mut own = own.name(name).bin_name(format!("stampede {name}"));
            if let Some(a) = about {
                own = own.about(a);
            }
            own
        });
    }
    cmd = cmd.mut_subcommand("vegeta", |old| {
        let mut vegeta = clap::Command::new("vegeta")
            .subcommand(
                stampede_flags::vegeta::ATTACK
                    .command::<stampede_flags::vegeta::AttackArgs>()
                    .name("attack")
                    .bin_name("stampede vegeta attack"),
            )
            .subcommand(
                stampede_flags::vegeta::REPORT
                    .command::<stampede_flags::vegeta::ReportArgs>()
                    .name("report")
                    .bin_name("stampede vegeta report"),
            )
            .subcommand(
                stampede_flags::vegeta::ENCODE
                    .command::<stampede_flags::vegeta::EncodeArgs>()
                    .name("encode")
                    .bin_name("stampede vegeta encode"),
            )
            .subcommand(
                stampede_flags::vegeta::PLOT
                    .command::<stampede_flags::vegeta::PlotArgs>()
                    .name("plot")
                    .bin_name("stampede vegeta plot"),
            );
        if let Some(a) = old.get_about() {
            vegeta = vegeta.about(a.clone());
        }
        vegeta
    });
    let serve = stampede_flags::vllm::DIALECT
        .command::<stampede_flags::vllm::VllmArgs>()
        .name("serve")
        .bin_name("stampede vllm bench serve");
    let profile = stampede_flags::aiperf::DIALECT
        .command::<stampede_flags::aiperf::AiperfArgs>()
        .name("profile")
        .bin_name("stampede aiperf profile");
    let grun = stampede_flags::guidellm::DIALECT
        .command::<stampede_flags::guidellm::GuidellmArgs>()
        .name("run")
        .bin_name("stampede guidellm run");
    cmd = cmd.mut_subcommand("guidellm", |old| {
        let mut g = clap::Command::new("guidellm").subcommand(grun);
        if let Some(a) = old.get_about() {
            g = g.about(a.clone());
        }
        g
    });
    cmd = cmd.mut_subcommand("aiperf", |old| {
        let mut aiperf = clap::Command::new("aiperf").subcommand(profile);
        if let Some(a) = old.get_about() {
            aiperf = aiperf.about(a.clone());
        }
        aiperf
    });
    cmd.mut_subcommand("vllm", |old| {
        let mut vllm = clap::Command::new("vllm").subcommand(
            clap::Command::new("bench")
                .about("vLLM's benchmarks: `serve` is the one offered")
                .subcommand(serve),
        );
        if let Some(a) = old.get_about() {
            vllm = vllm.about(a.clone());
        }
        vllm
    })
}

/// `stampede completions SHELL`: the completion script on standard output.
pub fn completions(shell: clap_complete::Shell) -> Result<(), Exit> {
    let mut cmd = full_command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "stampede", &mut out);
    out_data(&String::from_utf8_lossy(&out));
    Ok(())
}

/// `stampede man [SUBCOMMAND]`: the page in roff on standard output (`stampede man
/// load | man -l -` shows it); without one, stampede's own page.
pub fn man(sub: Option<&str>) -> Result<(), Exit> {
    out_data(&page(sub)?);
    Ok(())
}

/// `stampede man --dir DIR`: every page written into DIR as `stampede.1` and
/// `stampede-SUBCOMMAND.1`.
pub fn man_dir(dir: &std::path::Path) -> Result<(), Exit> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Exit::fail(format!("man --dir {}: {e}", dir.display())))?;
    let cmd = full_command();
    let subs = (cmd.get_subcommands())
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help");
    let mut written = 0;
    for sub in std::iter::once(None).chain(subs.map(Some)) {
        let name = match &sub {
            Some(s) => format!("stampede-{s}.1"),
            None => "stampede.1".to_string(),
        };
        let path = dir.join(&name);
        std::fs::write(&path, page(sub.as_deref())?)
            .map_err(|e| Exit::fail(format!("man --dir: {}: {e}", path.display())))?;
        written += 1;
    }
    eprintln!("stampede: {written} man pages written to {}", dir.display());
    Ok(())
}

/// The roff of a subcommand's page, or of stampede's own.
fn page(sub: Option<&str>) -> Result<String, Exit> {
    let cmd = full_command();
    let page = match sub {
        None => cmd,
        Some(name) => {
            let Some(found) = cmd.find_subcommand(name) else {
                let names: Vec<&str> = (cmd.get_subcommands())
                    .map(|c| c.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                return Err(Exit::usage(format!(
                    "man: {name:?} is not a subcommand; one of {}",
                    names.join(", ")
                )));
            };
            // vLLM's page is its one benchmark's: `vllm bench serve`; AIPerf's,
            // `aiperf profile`'s.
            let own = (found.find_subcommand("bench"))
                .and_then(|b| b.find_subcommand("serve"))
                .or_else(|| found.find_subcommand("profile"))
                .or_else(|| found.find_subcommand("run"))
                .unwrap_or(found);
            own.clone().name(format!("stampede-{name}"))
        }
    };
    let mut out = Vec::new();
    let fail = |e: std::io::Error| Exit::fail(format!("man: {e}"));
    clap_mangen::Man::new(page.clone())
        .render(&mut out)
        .map_err(fail)?;
    // A pipeline of commands (vegeta's): each command's options on the same page.
    if sub.is_some() {
        for c in page.get_subcommands().filter(|c| c.get_name() != "help") {
            let mut section = Vec::new();
            clap_mangen::Man::new(c.clone())
                .render_options_section(&mut section)
                .map_err(fail)?;
            let heading = format!(".SH \"{} OPTIONS\"", c.get_name().to_uppercase());
            out.extend(
                String::from_utf8_lossy(&section)
                    .replacen(".SH OPTIONS", &heading, 1)
                    .bytes(),
            );
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}
