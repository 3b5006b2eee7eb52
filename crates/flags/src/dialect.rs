//! The command lines of the dialects (`ab`, `wrk`, `httperf`, `h2load`, `oha`, `hey`)
//! beyond what clap parses: the original tool's flags that stampede refuses, each with
//! why and what to use instead; flags it accepts that change nothing here, said in the
//! run's output; unique prefixes of long options (httperf's getopt_long); Go's one-dash
//! long options (hey's); and clap's errors turned into messages that name the flag and
//! the accepted forms, never clap's generic "unexpected argument" with a tip to an
//! unrelated flag. `stampede help <dialect>` and `--help` print the dialect's flags
//! with its refusals.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};

use crate::FlagError;

/// A flag of the original tool that stampede does not take.
pub struct Refused {
    /// As written: `-w` or `--ciphers`.
    pub flag: &'static str,
    /// Why not.
    pub why: &'static str,
    /// The closest thing stampede offers.
    pub instead: &'static str,
}

/// A flag stampede accepts that changes nothing in its run.
pub struct Inert {
    /// The clap argument's id.
    pub id: &'static str,
    /// As written in the tool's help.
    pub flag: &'static str,
    /// Why it changes nothing.
    pub why: &'static str,
}

/// One dialect's command line.
pub struct Dialect {
    /// The tool's name: `h2load`.
    pub tool: &'static str,
    pub refused: &'static [Refused],
    pub inert: &'static [Inert],
    /// Long options may be shortened to a unique prefix (getopt_long).
    pub prefixes: bool,
    /// Long options are written with one dash, as Go's flag package reads them
    /// (`-disable-keepalive`); two dashes are taken too.
    pub go: bool,
}

impl Dialect {
    /// The dialect's clap command with its refusals after the flags.
    pub fn command<T: CommandFactory>(&self) -> Command {
        let mut after = String::new();
        if !self.refused.is_empty() {
            after += &format!(
                "Flags of {} refused here, and what to use instead:\n",
                self.tool
            );
            for r in self.refused {
                after += &format!("  {}: {}; {}\n", r.flag, r.why, r.instead);
            }
        }
        if !self.inert.is_empty() {
            after += "Accepted, changing nothing here (said in the run's output):\n";
            for i in self.inert {
                after += &format!("  {}: {}\n", i.flag, i.why);
            }
        }
        T::command()
            // Go's flag package keeps the last of a repeated flag.
            .args_override_self(self.go)
            .after_long_help(after.clone())
            .after_help(after)
    }

    /// The dialect's help, as `stampede help <dialect>` prints it.
    pub fn help<T: CommandFactory>(&self) -> String {
        self.command::<T>().render_long_help().to_string()
    }

    /// Parses `args` (after the dialect's name): prefixes expanded, refused flags named,
    /// clap's errors ours. Returns the arguments and the notes for inert flags given.
    pub fn parse<T: CommandFactory + FromArgMatches>(
        &self,
        args: &[String],
    ) -> Result<(T, Vec<String>), FlagError> {
        let cmd = self.command::<T>();
        if self.wants_help(&cmd, args) {
            return Err(FlagError::help(cmd.clone().render_long_help()));
        }
        let args = if self.prefixes {
            self.expand(&cmd, args)?
        } else if self.go {
            self.go_longs(&cmd, args)?
        } else {
            args.to_vec()
        };
        self.check(&cmd, &args)?;
        let argv = std::iter::once(format!("stampede {}", self.tool)).chain(args);
        let m: ArgMatches = cmd
            .clone()
            .try_get_matches_from(argv)
            .map_err(|e| self.clap_error(&cmd, e))?;
        let notes = (self.inert.iter())
            .filter(|i| m.value_source(i.id) == Some(clap::parser::ValueSource::CommandLine))
            .map(|i| format!("{}: {}", i.flag, i.why))
            .collect();
        let t = T::from_arg_matches(&m).map_err(|e| self.clap_error(&cmd, e))?;
        Ok((t, notes))
    }

    /// Every flag clap knows, as written (`-n`, `--requests`), with whether it takes a
    /// value.
    fn flags(cmd: &Command) -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for a in cmd.get_arguments().filter(|a| !a.is_positional()) {
            let takes = a.get_action().takes_values();
            if let Some(s) = a.get_short() {
                out.push((format!("-{s}"), takes));
            }
            for s in a.get_short_and_visible_aliases().into_iter().flatten() {
                out.push((format!("-{s}"), takes));
            }
            if let Some(l) = a.get_long() {
                out.push((format!("--{l}"), takes));
            }
            for l in a.get_all_aliases().into_iter().flatten() {
                out.push((format!("--{l}"), takes));
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Long options shortened to a unique prefix of a known or refused one, written
    /// out; an ambiguous prefix is an error naming the candidates.
    fn expand(&self, cmd: &Command, args: &[String]) -> Result<Vec<String>, FlagError> {
        let mut longs: Vec<String> = (Self::flags(cmd).into_iter())
            .map(|(f, _)| f)
            .filter(|f| f.starts_with("--"))
            .collect();
        longs.extend(
            (self.refused.iter())
                .filter(|r| r.flag.starts_with("--"))
                .map(|r| r.flag.to_string()),
        );
        longs.sort();
        longs.dedup();
        let mut out = Vec::with_capacity(args.len());
        let mut rest = false;
        for a in args {
            if rest || a == "--" || !a.starts_with("--") {
                rest |= a == "--";
                out.push(a.clone());
                continue;
            }
            let (name, value) = match a.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (a.as_str(), None),
            };
            if longs.iter().any(|l| l == name) {
                out.push(a.clone());
                continue;
            }
            let found: Vec<&String> = longs.iter().filter(|l| l.starts_with(name)).collect();
            match found.as_slice() {
                [one] => out.push(match value {
                    Some(v) => format!("{one}={v}"),
                    None => one.to_string(),
                }),
                [] => out.push(a.clone()),
                many => {
                    let names: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
                    return Err(FlagError::usage(format!(
                        "{name}: ambiguous, the start of {}; write more of it",
                        names.join(", ")
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Go's one-dash long options written with two, for clap: `-rate=5/s` is
    /// `--rate=5/s`. A one-dash word that is no flag is refused by name, as Go's flag
    /// package does, rather than read as a short flag with its value attached.
    fn go_longs(&self, cmd: &Command, args: &[String]) -> Result<Vec<String>, FlagError> {
        let flags = Self::flags(cmd);
        let long = |name: &str| {
            flags
                .iter()
                .find(|(f, _)| f.strip_prefix("--") == Some(name))
        };
        let refused =
            |name: &str| (self.refused.iter()).any(|r| r.flag.trim_start_matches('-') == name);
        let mut out = Vec::with_capacity(args.len());
        let mut value_next = false;
        let mut rest = false;
        for a in args {
            if std::mem::take(&mut value_next) && !rest {
                // Go takes the next word as the value whatever it starts with
                // (`-q -1`); joined, clap takes it too.
                if a.starts_with('-') {
                    let flag = out.pop().unwrap_or_default();
                    out.push(format!("{flag}={a}"));
                } else {
                    out.push(a.clone());
                }
                continue;
            }
            if rest || a == "-" || !a.starts_with('-') {
                out.push(a.clone());
                continue;
            }
            if a == "--" {
                rest = true;
                out.push(a.clone());
                continue;
            }
            let bare = a.strip_prefix("--").unwrap_or(&a[1..]);
            let (name, value) = match bare.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (bare, None),
            };
            if let Some((f, takes)) = long(name) {
                value_next = *takes && value.is_none();
                out.push(match value {
                    Some(v) => format!("{f}={v}"),
                    None => f.clone(),
                });
            } else if name.chars().count() == 1 || refused(name) {
                let takes = flags.iter().any(|(f, t)| f == &format!("-{name}") && *t);
                value_next = takes && value.is_none();
                out.push(a.clone());
            } else {
                return Err(FlagError::usage(self.unknown(cmd, &format!("--{name}"))));
            }
        }
        Ok(out)
    }

    /// The words of `args` that stand where a flag may: the values of flags that
    /// take one are skipped, and everything after `--`.
    fn flag_words<'a>(cmd: &Command, args: &'a [String]) -> Vec<&'a String> {
        let flags = Self::flags(cmd);
        let takes = |f: &str| flags.iter().any(|(g, t)| g == f && *t);
        let mut out = Vec::new();
        let mut skip = false;
        for a in args {
            if std::mem::take(&mut skip) {
                continue;
            }
            if a == "--" {
                break;
            }
            out.push(a);
            skip = a.starts_with('-') && !a.contains('=') && takes(a);
        }
        out
    }

    /// Whether `args` ask for the help: `--help` where a flag may stand (not as a
    /// flag's value, not after `--`), or Go's `-help` in a Go dialect — every tool's
    /// way, whatever its own short flags mean (`-h` is ab's and wrk's help, but
    /// hey's and ab's `-h` are taken).
    fn wants_help(&self, cmd: &Command, args: &[String]) -> bool {
        (Self::flag_words(cmd, args).into_iter())
            .any(|a| a == "--help" || (self.go && a == "-help"))
    }

    /// The first refused flag in `args`, as an error saying why and what instead.
    /// Values of flags that take one are skipped, as is everything after `--`.
    fn check(&self, cmd: &Command, args: &[String]) -> Result<(), FlagError> {
        for a in Self::flag_words(cmd, args) {
            if !a.starts_with('-') || a == "-" {
                continue;
            }
            let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
            let refused = self.refused.iter().find(|r| {
                if self.go {
                    name.trim_start_matches('-') == r.flag.trim_start_matches('-')
                } else if r.flag.starts_with("--") {
                    name == r.flag
                } else {
                    !a.starts_with("--") && a.starts_with(r.flag)
                }
            });
            if let Some(r) = refused {
                return Err(FlagError::usage(format!(
                    "{}: {} (as {} has it) is not supported: {}; {}",
                    r.flag, r.flag, self.tool, r.why, r.instead
                )));
            }
        }
        Ok(())
    }

    /// clap's error as a message naming the flag: an unknown flag gets the closest
    /// accepted one and the list; others keep clap's wording without its usage block.
    fn clap_error(&self, cmd: &Command, e: clap::Error) -> FlagError {
        match e.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                return FlagError::help(e.render());
            }
            ErrorKind::UnknownArgument => {
                if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
                    return FlagError::usage(self.unknown(cmd, arg));
                }
            }
            _ => {}
        }
        let text = e.render().to_string();
        // clap's text up to its usage block, on one line.
        let first = (text.lines())
            .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let first = first.trim_start_matches("error: ");
        FlagError::usage(format!(
            "{first} (stampede {}; `stampede help {}` lists its flags)",
            self.tool, self.tool
        ))
    }

    fn unknown(&self, cmd: &Command, arg: &str) -> String {
        let tool = self.tool;
        if !arg.starts_with('-') {
            return format!(
                "{arg:?}: one argument too many for stampede {tool} (a flag's value written apart from it, or a second URL?); `stampede help {tool}` lists its flags"
            );
        }
        let name = arg.split_once('=').map_or(arg, |(n, _)| n);
        let known: Vec<String> = Self::flags(cmd).into_iter().map(|(f, _)| f).collect();
        let long = name.starts_with("--");
        let closest = (known.iter())
            .filter(|f| f.starts_with("--") == long)
            .map(|f| (distance(f, name), f))
            .min()
            .filter(|(d, f)| *d <= 2.max(f.len() / 3))
            .map(|(_, f)| format!("; did you mean {f}?"))
            .unwrap_or_default();
        let shown: Vec<&str> = if self.go {
            // Go's flags: every one, long ones as written there, with one dash.
            (known.iter())
                .map(|f| {
                    if f.starts_with("--") {
                        &f[1..]
                    } else {
                        f.as_str()
                    }
                })
                .collect()
        } else {
            (known.iter())
                .filter(|f| !f.starts_with("--") || !known.contains(&format!("-{}", &f[2..3])))
                .map(String::as_str)
                .collect()
        };
        let (name, closest) = match self.go {
            true => (
                name.strip_prefix('-').unwrap_or(name),
                closest.replace("did you mean --", "did you mean -"),
            ),
            false => (name, closest),
        };
        format!(
            "{name}: not a flag of {tool}{closest} Accepted: {} (`stampede help {tool}` says what each does)",
            shown.join(" ")
        )
    }
}

/// Levenshtein distance between two short strings.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Args {
        #[arg(short = 'n', long = "num-conns")]
        conns: Option<u64>,
        #[arg(long = "num-calls")]
        calls: Option<u64>,
        #[arg(long = "hog")]
        hog: bool,
        url: Option<String>,
    }

    const D: Dialect = Dialect {
        tool: "tool",
        refused: &[
            Refused {
                flag: "--wlog",
                why: "no logs",
                instead: "use --num-calls",
            },
            Refused {
                flag: "-w",
                why: "no HTML",
                instead: "use --json",
            },
        ],
        inert: &[Inert {
            id: "hog",
            flag: "--hog",
            why: "ports are never short",
        }],
        prefixes: true,
        go: false,
    };

    fn parse(args: &[&str]) -> Result<(Args, Vec<String>), FlagError> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        D.parse::<Args>(&args)
    }

    #[test]
    fn prefixes_refusals_notes_and_unknown_flags() {
        let (a, notes) = parse(&["--num-co=5", "--num-ca", "7", "--ho", "u"]).unwrap();
        assert_eq!((a.conns, a.calls, a.hog), (Some(5), Some(7), true));
        assert_eq!(notes, ["--hog: ports are never short"]);
        let e = parse(&["--num=5"]).unwrap_err();
        assert!(
            e.message.contains("ambiguous") && e.message.contains("--num-calls, --num-conns"),
            "{}",
            e.message
        );
        let e = parse(&["--wl", "x"]).unwrap_err();
        assert!(
            e.message.starts_with("--wlog: ") && e.message.contains("use --num-calls"),
            "{}",
            e.message
        );
        let e = parse(&["-w", "u"]).unwrap_err();
        assert!(
            e.message.starts_with("-w: ") && e.message.contains("no HTML"),
            "{}",
            e.message
        );
        let e = parse(&["--num-colls", "3"]).unwrap_err();
        assert!(
            e.message
                .starts_with("--num-colls: not a flag of tool; did you mean --num-calls?"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("Accepted: ") && e.message.contains("--hog"),
            "{}",
            e.message
        );
        let e = parse(&["u", "v"]).unwrap_err();
        assert!(
            e.message.starts_with("\"v\": one argument too many"),
            "{}",
            e.message
        );
        let e = parse(&["-n", "x"]).unwrap_err();
        assert!(
            e.message.contains("'--num-conns") && !e.message.contains("Usage"),
            "{}",
            e.message
        );
        assert!(D
            .help::<Args>()
            .contains("--wlog: no logs; use --num-calls"));
    }
}
