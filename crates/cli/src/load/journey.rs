//! `load`'s journeys: `--journey FILE` (steps whose requests are templates over each
//! user's variables) and `--feeder FILE` (one request whose URL, headers and body
//! take each row's columns), each read, checked and put on the spec as its hooks.

use stampede_engine::LoadSpec;
use stampede_journey::feeder::Feeder;
use stampede_journey::journey::{Exhausted, Journey};
use stampede_journey::run::JourneyRun;

use super::args::LoadArgs;
use crate::common::{self, Exit};

/// `--journey FILE`: the journey read and checked, its hooks on the spec.
pub(super) fn journey(
    a: &LoadArgs,
    spec: &mut LoadSpec,
    servers: usize,
) -> Result<Option<JourneyRun>, Exit> {
    let Some(path) = &a.journey else {
        return Ok(None);
    };
    let refuse = |why: &str| Err(Exit::usage(format!("--journey {path}: {why}")));
    if spec.load.shape.has_sessions() {
        // --inject's users each walk the journey once, on a connection of their own,
        // for as many steps as it takes.
        spec.load.session.calls = u32::MAX;
    }
    if a.save_spec.is_some() {
        return refuse(
            "a saved spec carries requests built once; a journey's are made as each user walks it",
        );
    }
    if servers > 0 {
        return refuse("a journey runs against one server");
    }
    if spec.proxy.is_some() && !spec.target.tls {
        return refuse(
            "a journey's requests go through a proxy's tunnel only; use an https:// URL",
        );
    }
    let j = Journey::read_file(path).map_err(|e| Exit::usage(e.to_string()))?;
    let run = JourneyRun::new(j, &spec.target, spec.load.seed, spec.load.threads);
    spec.hooks = Some(run.hooks());
    Ok(Some(run))
}

/// A URL's origin (`http://host:port`) and the rest (its path and query, `/` when
/// none).
pub(super) fn split_origin(url: &str) -> (&str, &str) {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find(['/', '?']) {
        Some(i) => (&url[..after + i], &url[after + i..]),
        None => (url, "/"),
    }
}

/// `--feeder FILE`: each request a journey of one step whose URL path, -H values and
/// body are templates over the feeder's columns, its hooks on the spec.
pub(super) fn feeder(
    a: &LoadArgs,
    spec: &mut LoadSpec,
    servers: usize,
) -> Result<Option<JourneyRun>, Exit> {
    let Some(file) = &a.feeder else {
        return Ok(None);
    };
    let refuse = |why: &str| Err(Exit::usage(format!("--feeder {file}: {why}")));
    if spec.load.shape.has_sessions() {
        // --inject's users each send one request, with a row of their own.
        spec.load.session.calls = u32::MAX;
    }
    if a.save_spec.is_some() {
        return refuse(
            "a saved spec carries requests built once; these are rendered as they are sent",
        );
    }
    if servers > 0 {
        return refuse("the rows feed one server");
    }
    if spec.proxy.is_some() && !spec.target.tls {
        return refuse("rendered requests go through a proxy's tunnel only; use an https:// URL");
    }
    let url = a.url.as_deref().unwrap_or("/");
    let path = match split_origin(url).1 {
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    let headers = (a.headers.iter())
        .map(|h| common::header_arg(h))
        .collect::<Result<Vec<_>, _>>()?;
    let body = match &a.body_file {
        Some(p) => Some(String::from_utf8(common::read_body(p)?).map_err(|_| {
            Exit::usage(format!(
                "--body-file {p}: not UTF-8; with --feeder the body is a template, which is text"
            ))
        })?),
        None => None,
    };
    let rows = Feeder::read_file(file).map_err(|e| Exit::usage(format!("--feeder: {e}")))?;
    let method = a.method.to_ascii_uppercase();
    let j = Journey::single(
        &method,
        &path,
        &headers,
        body.as_deref(),
        Some((rows, a.feeder_order, Exhausted::Stop)),
        ["URL", "-H", "--body-file"],
    )
    .map_err(|e| Exit::usage(e.to_string()))?;
    let run = JourneyRun::new(j, &spec.target, spec.load.seed, spec.load.threads);
    spec.hooks = Some(run.hooks());
    Ok(Some(run))
}
