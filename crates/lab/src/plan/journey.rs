//! A `[[scenario]]` that walks a journey (`journey = "shop.toml"`): the file read and
//! checked with the plan, relative to the plan's directory, and the scenario keys
//! that describe a single request refused beside it (the journey's steps are the
//! requests).

use super::*;

/// The journey a scenario names, read and checked; `None` when it names none.
pub(super) fn journey_plan(
    cx: &Ctx,
    s: &RawScenario,
    name: &str,
) -> Result<Option<stampede_journey::journey::Journey>, PlanError> {
    let Some(file) = &s.journey else {
        return Ok(None);
    };
    let here = file.span().start;
    let refused = [
        (s.path.is_some(), "scenario.path", "each step has its url"),
        (
            s.method.is_some(),
            "scenario.method",
            "each step has its method",
        ),
        (s.body.is_some(), "scenario.body", "each step has its body"),
        (
            !s.headers.is_empty(),
            "scenario.headers",
            "each step has its headers",
        ),
        (
            s.steps.is_some(),
            "scenario.steps",
            "the journey's steps are the requests",
        ),
        (
            s.ws.is_some(),
            "scenario.ws",
            "a journey's steps are HTTP requests",
        ),
        (
            s.stream.is_some() || s.openai.is_some() || s.event_timeout.is_some(),
            "scenario.stream",
            "a step's answer is read whole for its captures and checks",
        ),
        (
            s.style.as_ref().is_some_and(|x| x.get_ref() == "ab"),
            "scenario.style",
            "a journey's requests are made from its templates",
        ),
        (
            s.pipeline.is_some() || s.streams.is_some(),
            "scenario.pipeline",
            "each user has one request in flight",
        ),
        (
            s.calls.is_some() || s.burst.is_some() || s.think.is_some(),
            "scenario.calls",
            "a user walks the journey's steps, with the think times it gives",
        ),
        (
            s.verify.as_ref().is_some_and(RawVerify::checks_http),
            "scenario.verify",
            "a journey is verified by its own checks (only on_failure applies)",
        ),
    ];
    refuse_beside(cx, (here, name, "journey"), &refused)?;
    // Relative to the plan, wherever bench runs.
    let path = std::path::Path::new(file.get_ref());
    let path = match std::path::Path::new(cx.file).parent() {
        Some(base) if path.is_relative() => base.join(path),
        _ => path.to_path_buf(),
    };
    let j = stampede_journey::journey::Journey::read_file(&path.to_string_lossy())
        .map_err(|e| cx.err(here, "scenario.journey", e.to_string()))?;
    Ok(Some(j))
}
