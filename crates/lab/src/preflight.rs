//! What a plan needs from this machine, checked before anything starts: each target
//! started here has its working directory, its start command's program can be found, and
//! every CPU a plan pins to is one this process may run on.
//!
//! Each scenario's load is also built and validated as a run would (against a
//! stand-in address), so that nothing a run would refuse waits until a target is up.
//!
//! The plan parser checks what a plan says; this checks what it assumes, so that
//! `stampede bench --check` catches a copied plan whose paths no longer hold instead of
//! every target failing to start one after another. Each finding names the plan file,
//! the line and the field, as a parse error does.

use std::path::{Path, PathBuf};

use crate::plan::{Plan, PlanError, TargetKind};

/// Every assumption of `plan` that does not hold here; `file` names the plan.
pub fn check(plan: &Plan, file: &str) -> Vec<PlanError> {
    let allowed = allowed_cpus();
    let mut found = Vec::new();
    let mut err = |line: usize, field: &str, message: String| {
        found.push(PlanError {
            file: file.to_string(),
            line,
            field: field.to_string(),
            message,
        })
    };
    let client_line = plan
        .source
        .lines()
        .position(|l| l.trim() == "[client]")
        .map_or(0, |i| i + 1);
    if let Some(c) = missing_cpu(&plan.client_cpus, &allowed) {
        err(client_line, "client.cpus", cpu_message(c, &allowed));
    }
    #[cfg(feature = "store")]
    for (line, message) in crate::runner::check_scenarios(plan) {
        err(line, "scenario", message);
    }
    for t in &plan.targets {
        let TargetKind::Command {
            start,
            env,
            cwd,
            host: None,
            ..
        } = &t.kind
        else {
            // Another host's paths and CPUs are its own; an external server has none.
            continue;
        };
        if let Some(c) = missing_cpu(&t.cpus, &allowed) {
            err(t.line, "target.cpus", cpu_message(c, &allowed));
        }
        if let Some(d) = cwd {
            if !d.is_dir() {
                err(
                    t.line,
                    "target.cwd",
                    format!(
                        "target {:?}: working directory {} does not exist (a relative cwd is taken from the plan's folder)",
                        t.name,
                        std::path::absolute(d).unwrap_or_else(|_| d.clone()).display()
                    ),
                );
                continue;
            }
        }
        let Some(program) = program(start) else {
            continue;
        };
        let path_var = env
            .get("PATH")
            .cloned()
            .or_else(|| std::env::var("PATH").ok())
            .unwrap_or_default();
        if find_program(&program, cwd.as_deref(), &path_var).is_none() {
            let where_ = if program.contains('/') {
                match cwd {
                    Some(d) => format!("relative to {}", d.display()),
                    None => "relative to the current directory".into(),
                }
            } else {
                "on PATH".into()
            };
            err(
                t.line,
                "target.start",
                format!(
                    "target {:?}: program {program:?} is not found {where_} (or is not executable)",
                    t.name
                ),
            );
        }
    }
    found
}

/// The program a shell command runs: its first word after variable assignments and
/// `exec`/`env`/`nohup`/`taskset`-style wrappers' own names are skipped; `None` when
/// the command starts with shell syntax this cannot follow (expansions, subshells,
/// redirections, builtins).
pub fn program(command: &str) -> Option<String> {
    let words = shell_words(command)?;
    let mut it = words.into_iter().peekable();
    while let Some(w) = it.peek() {
        let assignment = w.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        if assignment || w == "exec" {
            it.next();
        } else {
            break;
        }
    }
    let first = it.next()?;
    if first.contains('{') {
        // A placeholder ({stampede}, {port}) is filled in when the target starts.
        return None;
    }
    const BUILTINS: [&str; 12] = [
        "cd", ".", "source", "eval", "set", "export", "trap", "ulimit", "umask", "true", ":",
        "test",
    ];
    if BUILTINS.contains(&first.as_str()) || first.starts_with(['(', '{', '<', '>']) {
        return None;
    }
    Some(first)
}

/// Splits a command into words with sh's quoting; `None` when a word holds an
/// expansion (`$`, a backquote) whose value only the shell knows.
fn shell_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => cur.extend(chars.next()),
                        c => cur.push(c),
                    }
                }
            }
            '$' | '`' => return None,
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            ';' | '&' | '|' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                }
                // Only the first simple command is looked at.
                return Some(words);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// Where `program` resolves: a path (relative to `cwd`) or a name on `path_var`;
/// `None` when there is no executable file there.
pub fn find_program(program: &str, cwd: Option<&Path>, path_var: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = match cwd {
            Some(d) if Path::new(program).is_relative() => d.join(program),
            _ => PathBuf::from(program),
        };
        return executable(&p).then_some(p);
    }
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| executable(p))
}

pub use stampede_engine::process::allowed_cpus;

fn missing_cpu(cpus: &[usize], allowed: &[usize]) -> Option<usize> {
    if allowed.is_empty() {
        return None;
    }
    cpus.iter().copied().find(|c| !allowed.contains(c))
}

fn cpu_message(cpu: usize, allowed: &[usize]) -> String {
    let list: Vec<String> = allowed.iter().map(usize::to_string).collect();
    format!(
        "CPU {cpu} is not one this machine lets stampede use (allowed: {})",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_start_command() {
        let cases = [
            ("nginx -c conf -g 'daemon off;'", Some("nginx")),
            ("PORT={port} exec ./server --x", Some("./server")),
            ("'/opt/my app/bin' {port}", Some("/opt/my app/bin")),
            ("node server.js; echo done", Some("node")),
            ("$HOME/bin/x", None),
            ("cd app && ./run", None),
            ("\"$JAVA\" -jar x.jar", None),
            ("(cd x; ./y)", None),
            ("exec {stampede} serve --listen 127.0.0.1:{port}", None),
        ];
        for (cmd, want) in cases {
            assert_eq!(program(cmd).as_deref(), want, "{cmd}");
        }
    }

    #[test]
    fn programs_are_found_on_path_or_relative_to_cwd() {
        let dir = std::env::temp_dir().join(format!("stampede-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("srv");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.join("plain"), "").unwrap();
        let path = format!("/nonexistent:{}", dir.display());
        assert_eq!(find_program("srv", None, &path), Some(exe.clone()));
        assert_eq!(
            find_program("./srv", Some(&dir), ""),
            Some(dir.join("./srv"))
        );
        assert_eq!(find_program("./plain", Some(&dir), ""), None);
        assert_eq!(find_program("nope", None, &path), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_plan_s_missing_directory_program_and_cpus_are_named() {
        let dir =
            std::env::temp_dir().join(format!("stampede-preflight-plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = "[client]\ncpus = [100000]\n\
            [[target]]\nname = \"a\"\nstart = \"sh -c 'exit 0' {port}\"\ncwd = \"missing\"\n\
            [[target]]\nname = \"b\"\nstart = \"./not-here {port}\"\n\
            [[target]]\nname = \"c\"\nstart = \"no-such-program-anywhere {port}\"\ncpus = [99999]\n\
            [[target]]\nname = \"d\"\nstart = \"sh -c 'sleep 1' {port}\"\n\
            [[scenario]]\nname = \"s\"\nrequests = 1\n";
        let file = dir.join("plan.toml");
        std::fs::write(&file, src).unwrap();
        let plan = Plan::load(&file).unwrap();
        let found = check(&plan, "plan.toml");
        let got: Vec<(usize, &str)> = found.iter().map(|e| (e.line, e.field.as_str())).collect();
        assert_eq!(
            got,
            [
                (1, "client.cpus"),
                (3, "target.cwd"),
                (7, "target.start"),
                (10, "target.cpus"),
                (10, "target.start"),
            ],
            "{found:#?}"
        );
        assert!(found[1].message.contains("missing"), "{}", found[1]);
        assert!(found[2].message.contains("./not-here"), "{}", found[2]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
