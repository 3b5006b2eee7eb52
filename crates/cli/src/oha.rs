//! `stampede oha`'s run and report: oha's text, JSON or CSV report, `--dump-urls`;
//! its flags are [`stampede_flags::oha`]'s.

use stampede_engine::{LoadSpec, Run};
use stampede_report::{oha_csv, oha_json, oha_report, OhaInfo};

use crate::common::{self, Exit, ProgressOptions};
use crate::contract::{self, Tool};
use stampede_flags::oha::*;
use stampede_inputs::randurl;

pub fn main(args: &[String]) -> Result<(), Exit> {
    let (a, _) = DIALECT.parse::<OhaArgs>(args)?;
    if let Some(n) = a.dump_urls {
        return dump_urls(&a, n);
    }
    contract::run::<Oha>(args)
}

/// `--dump-urls N`: N URLs drawn from the pattern, one per line, and no run.
fn dump_urls(a: &OhaArgs, n: u64) -> Result<(), Exit> {
    let (true, Some(url)) = (a.rand_regex_url, &a.url) else {
        return Err(Exit::usage(
            "--dump-urls shows URLs drawn by --rand-regex-url; add --rand-regex-url and a pattern",
        ));
    };
    if n > 1_000_000 {
        return Err(Exit::usage(format!(
            "--dump-urls {n}: at most 1000000 are shown"
        )));
    }
    let p = randurl::UrlPattern::parse(url, a.max_repeat)?;
    let mut rng = stampede_engine::arrivals::Rng::new(0);
    // Written as drawn, 64 KiB at a time: a million long paths are never held at once.
    let mut o = String::with_capacity(64 << 10);
    for _ in 0..n {
        o.push_str(&p.origin);
        o.push_str(&p.draw(&mut rng));
        o.push('\n');
        if o.len() >= 64 << 10 {
            common::out(&o);
            o.clear();
        }
    }
    common::out(&o);
    Ok(())
}

impl Tool for Oha {
    type State = Self::Info;

    fn execute(a: &OhaArgs, spec: LoadSpec, _info: &mut OhaInfo) -> Result<Run, Exit> {
        if a.latency_correction && a.qps.is_none() {
            eprintln!(
                "stampede oha: --latency-correction: without -q no request waits for its turn, so latencies run from the send, as in oha"
            );
        }
        if a.parallel > 1 && !spec.load.protocol.http2 && spec.load.protocol.http3.is_none() {
            eprintln!(
                "stampede oha: -p {}: parallel requests are HTTP/2's (and HTTP/3's) streams; this run speaks HTTP/1.1, one request at a time per connection",
                a.parallel
            );
        }
        common::execute(
            spec,
            ProgressOptions {
                quiet: a.no_tui,
                ..Default::default()
            },
        )
    }

    fn report(a: &OhaArgs, run: &mut Run, info: &mut OhaInfo) -> Result<(), Exit> {
        let text = match format(a) {
            OutputFormat::Text => oha_report(&run.result, info),
            OutputFormat::Json => oha_json(&run.result, info),
            OutputFormat::Csv => oha_csv(run.requests.as_deref().unwrap_or_default()),
            OutputFormat::Quiet => return Ok(()),
        };
        match &a.output {
            Some(path) => common::write_file(path, &text),
            None => {
                common::out(&text);
                Ok(())
            }
        }
    }
}
