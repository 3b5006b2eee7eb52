//! One bench in progress: each target started, verified and measured scenario by
//! scenario (warm-ups, repetitions, capacity searches), every run stored as it ends,
//! and each target stopped.

use super::*;

/// One bench in progress: the plan, where results go, and what it has produced so far.
pub(super) struct Bench<'a> {
    pub(super) plan: &'a Plan,
    pub(super) store: &'a Store,
    pub(super) opts: &'a Options,
    pub(super) obs: &'a mut dyn Observer,
    pub(super) out: BenchOutcome,
    pub(super) env: Environment,
    /// Hosts this stampede was copied to (`[ssh] copy`).
    pub(super) copies: crate::remote::Copies,
    /// The journey of the scenario being measured: each run walks it afresh.
    pub(super) journey: Option<stampede_journey::run::JourneyRun>,
}

/// How a scenario on a target ended, for the scenarios after it.
pub(super) enum Next {
    /// Go on with the next scenario.
    Go,
    /// Stop this target: interrupted (`None`), or failed with this status.
    Stop(Option<String>),
}

impl Bench<'_> {
    /// Starts target `t`, runs every scenario on it, and stops it.
    pub(super) fn run_target(&mut self, t: &Target) -> Result<TargetStatus, BenchError> {
        self.obs
            .event(BenchEvent::TargetStarting { target: &t.name });
        let mut live = match bring_up(t, self.opts, &self.plan.remote, &mut self.copies) {
            Ok(l) => l,
            Err(failure) => {
                let (reason, live) = *failure;
                let s = failed(
                    &t.name,
                    format!("failed to start: {reason}"),
                    None,
                    live.as_ref(),
                );
                report_failure(self.obs, &s);
                if let Some(mut l) = live {
                    stop_live(t, &mut l);
                }
                return Ok(s);
            }
        };
        let port = live.ep.addr.port();
        let version = t.version.as_deref().and_then(|v| match &t.kind {
            TargetKind::Command { host: Some(h), .. } => {
                let exe = stampede_on(h, &self.plan.remote, &mut self.copies).ok()?;
                version_of(v, port, &exe, Some((&self.plan.remote, h)))
            }
            _ => version_of(v, port, &self.opts.stampede, None),
        });
        self.env.targets.insert(
            t.name.clone(),
            TargetEnv {
                version: version.clone(),
                command: match &t.kind {
                    TargetKind::Command { start, .. } => Some(start.clone()),
                    TargetKind::External { url } => Some(url.clone()),
                },
                cpus: t.cpus.clone(),
            },
        );
        self.obs.event(BenchEvent::TargetReady {
            target: &t.name,
            url: &live.url,
            version: version.as_deref(),
        });
        let mut status = None;
        for s in &self.plan.scenarios {
            if (self.opts.interrupted)() {
                break;
            }
            if let Next::Stop(st) = self.run_scenario(t, &mut live, s)? {
                status = st;
                break;
            }
        }
        let result = match status {
            Some(s) => {
                let st = failed(&t.name, s, version, Some(&live));
                report_failure(self.obs, &st);
                st
            }
            None => TargetStatus {
                name: t.name.clone(),
                ok: true,
                status: String::new(),
                version,
                stderr_tail: None,
            },
        };
        let stopped = stop_live(t, &mut live);
        Ok(TargetStatus {
            status: match (result.ok, stopped) {
                (true, Some(e)) => format!("stopped: {e}"),
                (true, None) => "external: not started or stopped".into(),
                _ => result.status.clone(),
            },
            ..result
        })
    }

    /// One scenario on a running target: verify its answers, then (unless that
    /// failed) prime, warm up and measure.
    pub(super) fn run_scenario(
        &mut self,
        t: &Target,
        live: &mut Live,
        s: &Scenario,
    ) -> Result<Next, BenchError> {
        let stop = |e: String| Ok(Next::Stop(Some(format!("scenario {}: {e}", s.name))));
        let url = scenario_url(&live.url, s);
        let target = match stampede_engine::Target::parse(&url) {
            Ok(x) => x,
            Err(e) => return stop(e.to_string()),
        };
        let (checks, script) = match checks_and_script(s, &live.url, &target) {
            Ok(x) => x,
            Err(e) => return stop(e.to_string()),
        };
        // An HTTP/2 scenario is verified and measured over HTTP/2; over TLS it offers h2
        // first, and ALPN may still choose HTTP/1.1.
        let mut ep = live.ep.clone();
        if s.http2 {
            ep.http2 = true;
            if let Some((c, _)) = ep.tls.as_mut() {
                let mut h2 = (**c).clone();
                h2.alpn_protocols = stampede_tls::alpn(true);
                *c = std::sync::Arc::new(h2);
            }
        }
        if let Some(j) = &s.journey {
            // Verified by its own checks, walked by a few users.
            let mut spec = match self.spec(s, target, &ep, script) {
                Ok(spec) => spec,
                Err(e) => return stop(e.to_string()),
            };
            if spec.load.shape.has_sessions() {
                // Each arriving user walks the journey once, for as many steps as
                // it takes.
                spec.load.session.calls = u32::MAX;
            }
            let run = stampede_journey::run::JourneyRun::new(
                j.clone(),
                &spec.target,
                spec.load.seed,
                spec.load.threads,
            );
            let failures = verify_journey(&spec, &run, s.timeout);
            let fatal = !failures.is_empty() && s.verify.on_failure == OnFailure::Fail;
            if self.record_verification(t, s, failures, fatal)? == Outcome::Fail {
                return Ok(Next::Go);
            }
            if let Some(st) = live.died() {
                return Ok(Next::Stop(Some(format!(
                    "died during verification of {}: {st}",
                    s.name
                ))));
            }
            self.journey = Some(run);
            let next = self.repetitions(t, s, live, &spec);
            self.journey = None;
            return next;
        }
        if s.ws.is_some() {
            // Verified by messages on one connection: an HTTP check has no answer to
            // an upgrade to read.
            let spec = match self.spec(s, target, &ep, script) {
                Ok(spec) => spec,
                Err(e) => return stop(e.to_string()),
            };
            let failures = verify_ws(&spec);
            let fatal = !failures.is_empty() && s.verify.on_failure == OnFailure::Fail;
            if self.record_verification(t, s, failures, fatal)? == Outcome::Fail {
                return Ok(Next::Go);
            }
            return self.repetitions(t, s, live, &spec);
        }
        let outcome = self.verify(t, s, &ep, &checks)?;
        if let Some(st) = live.died() {
            return Ok(Next::Stop(Some(format!(
                "died during verification of {}: {st}",
                s.name
            ))));
        }
        if outcome == Outcome::Fail {
            return Ok(Next::Go);
        }
        if self.plan.runs.primer {
            let _ = verify::fetch(&ep, &checks[0].request.bytes, s.timeout);
        }
        let spec = match self.spec(s, target, &ep, script) {
            Ok(spec) => spec,
            Err(e) => return stop(e.to_string()),
        };
        self.repetitions(t, s, live, &spec)
    }

    /// Verifies the scenario's answers (each on a fresh connection that the server
    /// closes after the response) and records the outcome.
    pub(super) fn verify(
        &mut self,
        t: &Target,
        s: &Scenario,
        ep: &verify::Endpoint,
        checks: &[Check<'_>],
    ) -> Result<Outcome, BenchError> {
        let (mut failures, mut fatal) = (Vec::new(), false);
        for c in checks {
            let outcome = verify::verify(ep, &c.request.bytes, c.verify, s.timeout);
            fatal |= !outcome.passed && c.verify.on_failure == OnFailure::Fail;
            failures.extend(outcome.failures.into_iter().map(|f| match &c.label {
                Some(l) => format!("{l}: {f}"),
                None => f,
            }));
        }
        self.record_verification(t, s, failures, fatal)
    }

    /// Stores and announces a scenario's verification: passed without failures,
    /// failed when one of them is `fatal`, a warning otherwise.
    pub(super) fn record_verification(
        &mut self,
        t: &Target,
        s: &Scenario,
        failures: Vec<String>,
        fatal: bool,
    ) -> Result<Outcome, BenchError> {
        let v = Verification {
            target: t.name.clone(),
            scenario: s.name.clone(),
            outcome: match (failures.is_empty(), fatal) {
                (true, _) => Outcome::Pass,
                (false, false) => Outcome::Warn,
                (false, true) => Outcome::Fail,
            },
            failures,
        };
        self.store.add_verification(self.out.bench_id, &v)?;
        self.obs.event(BenchEvent::Verified {
            target: &t.name,
            scenario: &s.name,
            outcome: &v,
        });
        let outcome = v.outcome;
        self.out.verifications.push(v);
        Ok(outcome)
    }

    /// The load a scenario puts on the target at `ep`.
    pub(super) fn spec(
        &self,
        s: &Scenario,
        target: stampede_engine::Target,
        ep: &verify::Endpoint,
        script: Vec<stampede_engine::Step>,
    ) -> Result<LoadSpec, SpecError> {
        let tls = ep.tls.as_ref().map(|(c, _)| c.clone());
        scenario_spec(self.plan, s, target, tls, script)
    }

    /// Warm-up runs, then measured ones, each stored the moment it ends along with
    /// the scenario's assertions checked on it.
    pub(super) fn repetitions(
        &mut self,
        t: &Target,
        s: &Scenario,
        live: &mut Live,
        spec: &LoadSpec,
    ) -> Result<Next, BenchError> {
        let runs = &self.plan.runs;
        let most = runs.most();
        // A search warms up before each of its steps instead.
        let warmups = if s.search.is_some() { 0 } else { runs.warmup };
        let mut warm = Vec::new();
        for i in 0..warmups + most {
            if (self.opts.interrupted)() {
                return Ok(Next::Stop(None));
            }
            let phase = if i < warmups {
                Phase::Warmup(i + 1, warmups)
            } else {
                Phase::Measured(i + 1 - warmups, most)
            };
            if i > 0 {
                sleep_unless_interrupted(runs.pause, self.opts);
            }
            let record = match (&s.search, phase) {
                (Some(search), Phase::Measured(k, n)) => {
                    self.search(spec, live, t, s, search, (k, n))
                }
                _ => self.measure(spec, live, t, &s.name, phase),
            };
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    let st = format!("{} run could not start: {e}", s.name);
                    return Ok(Next::Stop(Some(st)));
                }
            };
            if (self.opts.interrupted)() {
                // A run cut short measures nothing comparable: keep it out of the store.
                return Ok(Next::Stop(None));
            }
            if let Some(st) = live.died() {
                let when = match phase {
                    Phase::Warmup(k, _) => format!("warm-up {k}"),
                    Phase::Measured(k, _) | Phase::Step { run: k, .. } => format!("run {k}"),
                };
                let st = format!("died during {} {when}: {st}", s.name);
                return Ok(Next::Stop(Some(st)));
            }
            if let Phase::Warmup(..) = phase {
                warm.push(record.result);
                continue;
            }
            if let Phase::Measured(k, _) = phase {
                let record = RunRecord {
                    repetition: k,
                    ..record
                };
                self.store.add_run(self.out.bench_id, &record)?;
                for a in &s.asserts {
                    self.out.assertions.push(AssertionOutcome {
                        target: t.name.clone(),
                        scenario: s.name.clone(),
                        repetition: k,
                        checked: a.check(&record.result),
                    });
                }
                self.out.runs.push(record);
                if let Some(auto) = runs.auto {
                    if let Some(why) = self.enough(t, s, k, auto) {
                        let note = RunNote {
                            target: t.name.clone(),
                            scenario: s.name.clone(),
                            note: why,
                        };
                        self.store.add_note(self.out.bench_id, &note)?;
                        self.out.notes.push(note);
                        break;
                    }
                }
            }
        }
        if let Some(note) = self.warmup_note(t, s, &warm) {
            self.store.add_note(self.out.bench_id, &note)?;
            self.out.notes.push(note);
        }
        Ok(Next::Go)
    }

    /// The discarded warm-up runs set against the measured ones on the compared
    /// figure: a JIT or a cold cache shows as measured runs faster than the warm-up.
    pub(super) fn warmup_note(
        &self,
        t: &Target,
        s: &Scenario,
        warm: &[stampede_engine::RunResult],
    ) -> Option<RunNote> {
        use crate::summary::{samples, Metric};
        let runs = &self.out.runs;
        let metric = Metric::of_runs(runs.iter().filter(|r| r.scenario == s.name));
        let measured = samples(runs, &t.name, &s.name, metric);
        if warm.is_empty() || measured.is_empty() {
            return None;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let w = mean(&warm.iter().map(|r| metric.figure(r)).collect::<Vec<_>>());
        let m = mean(&measured);
        let (unit, show): (&str, fn(f64) -> String) = match metric {
            Metric::P99Ms => ("p99", |v| format!("{v:.2} ms")),
            _ => ("req/s", |v| format!("{v:.0}")),
        };
        let verdict = warmup_verdict(w, &measured, metric.higher_is_better());
        Some(RunNote {
            target: t.name.clone(),
            scenario: s.name.clone(),
            note: format!(
                "warm-up (discarded): {unit} {} against {} measured; {verdict}",
                show(w),
                show(m)
            ),
        })
    }

    /// One measured run that is a whole capacity search: each step warmed up and
    /// measured at its rate; the record kept is the highest passing step's (the last
    /// step's when none passed), carrying the search.
    pub(super) fn search(
        &mut self,
        spec: &LoadSpec,
        live: &mut Live,
        t: &Target,
        s: &Scenario,
        search: &crate::plan::Search,
        (run, runs): (u32, u32),
    ) -> Result<RunRecord, RunnerError> {
        let mut searched = search.spec();
        if self.journey.is_some() {
            searched.per = stampede_engine::capacity::Per::Journey;
        }
        let per = searched.per;
        let at = |rate: f64, length: Duration| {
            let mut sp = spec.clone();
            per.step(&mut sp, rate, length, search.gaps);
            sp
        };
        let mut step = 0;
        let (capacity, best) = stampede_engine::capacity::search(&searched, |rate| {
            step += 1;
            let phase = |warmup| Phase::Step {
                run,
                runs,
                step,
                rate: rate.round() as u64,
                per,
                warmup,
            };
            let check = |live: &mut Live| match live.died() {
                _ if (self.opts.interrupted)() => Err(RunnerError::Interrupted),
                Some(st) => Err(RunnerError::Died(st)),
                None => Ok(()),
            };
            if !search.warmup.is_zero() {
                self.measure(&at(rate, search.warmup), live, t, &s.name, phase(true))?;
                check(live)?;
            }
            let record = self.measure(&at(rate, search.step), live, t, &s.name, phase(false))?;
            check(live)?;
            Ok::<_, RunnerError>(record)
        })?;
        let mut record = best.ok_or(RunnerError::NoStep)?;
        self.obs.event(BenchEvent::Searched {
            target: &t.name,
            scenario: &s.name,
            run,
            capacity: &capacity,
        });
        record.result.capacity = Some(capacity);
        Ok(record)
    }

    /// With automatic repetitions, after measured run `k`: why this target × scenario
    /// has been measured enough, or `None` to measure again.
    pub(super) fn enough(
        &self,
        t: &Target,
        s: &Scenario,
        k: u32,
        auto: crate::plan::Auto,
    ) -> Option<String> {
        use crate::summary::{samples, Metric};
        let runs = &self.out.runs;
        let metric = Metric::of_runs(runs.iter().filter(|r| r.scenario == s.name));
        let figures = |name: &str| samples(runs, name, &s.name, metric);
        let baseline = self.plan.targets.first().map(|b| b.name.as_str());
        let base = baseline.filter(|&b| b != t.name).map(figures);
        let looks = auto.max - auto.min + 1;
        let why = if k < auto.min {
            None
        } else {
            crate::stats::settled(&figures(&t.name), base.as_deref(), auto.precision, looks)
        };
        match why {
            Some(w) => Some(format!("auto repetitions: stopped after {k} runs: {w}")),
            None if k >= auto.max => Some(format!(
                "auto repetitions: stopped at max_repetitions ({k}) unsettled: the interval is wider than ± {:.1} % and no difference from the baseline is shown",
                auto.precision * 100.0
            )),
            None => None,
        }
    }
}

pub(super) fn report_failure(obs: &mut dyn Observer, s: &TargetStatus) {
    let mut reason = s.status.clone();
    if let Some(tail) = &s.stderr_tail {
        let lines: Vec<&str> = tail.lines().collect();
        let from = lines.len().saturating_sub(5);
        reason += &format!("\n  stderr: {}", lines[from..].join("\n          "));
    }
    obs.event(BenchEvent::TargetFailed {
        target: &s.name,
        reason: &reason,
    });
}

/// Stops a started target; returns how it ended.
pub(super) fn stop_live(t: &Target, live: &mut Live) -> Option<String> {
    let grace = match &t.kind {
        TargetKind::Command { stop_grace, .. } => *stop_grace,
        TargetKind::External { .. } => Duration::ZERO,
    };
    live.process
        .as_mut()
        .map(|p| stopped_words(&p.stop(grace).status))
}

/// How a target ended when the lab stopped it (SIGTERM to its process group, then
/// SIGKILL after its stop grace), in words beside the raw status: `exited 130`,
/// `killed by signal 15` and `exited 0` all mean it stopped when asked.
pub(super) fn stopped_words(status: &str) -> String {
    let words = match status {
        "exited 0" => "shut down cleanly when asked",
        "exited 130" | "exited 143" => "ended on the stop signal (the usual code for one)",
        "killed by signal 15" => "ended by SIGTERM, which it does not catch: a normal stop",
        "killed by signal 9" => "killed: it had not stopped within its stop grace",
        s if s.starts_with("exited ") => "the exit code it chose when asked to stop",
        _ => return status.to_string(),
    };
    format!("{status} ({words})")
}

pub(super) fn sleep_unless_interrupted(d: Duration, opts: &Options) {
    let end = Instant::now() + d;
    while Instant::now() < end && !(opts.interrupted)() {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
}

impl Bench<'_> {
    /// One run of `spec` for target and scenario `names`: the engine on the client
    /// CPUs, the target's tree sampled alongside.
    pub(super) fn measure(
        &mut self,
        spec: &LoadSpec,
        live: &Live,
        t: &Target,
        scenario: &str,
        phase: Phase,
    ) -> Result<RunRecord, RunnerError> {
        let target = t.name.as_str();
        // A journey's run counts its own users: a fresh walk of it each time.
        let journey = self.journey.as_ref().map(|j| j.fresh());
        let walked;
        let spec = match &journey {
            Some(j) => {
                let mut sp = spec.clone();
                sp.hooks = Some(j.hooks());
                walked = sp;
                &walked
            }
            None => spec,
        };
        let (plan, opts, obs) = (self.plan, self.opts, &mut *self.obs);
        let control = Arc::new(Control::default());
        obs.event(BenchEvent::RunStarted {
            target,
            scenario,
            phase,
            control: &control,
        });
        let sampler = live.process.as_ref().map(process::Sampler::start);
        let cpu0 = stampede_engine::process::self_cpu().total();
        let result = if plan.remote.hosts.is_empty() {
            std::thread::scope(|scope| {
                let runner = {
                    let control = control.clone();
                    let cpus = plan.client_cpus.clone();
                    scope.spawn(move || {
                        // Worker threads inherit this thread's affinity.
                        if !cpus.is_empty() {
                            process::set_affinity(0, &cpus);
                        }
                        // A search's step changes the rate: each run is planned
                        // (checked) as it starts.
                        let checked = spec.clone().plan()?;
                        Ok::<_, RunnerError>(stampede_engine::run(&checked, control)?)
                    })
                };
                while !runner.is_finished() {
                    if (opts.interrupted)() {
                        control.stop();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                runner
                    .join()
                    .unwrap_or(Err(stampede_engine::RunError::WorkerPanicked.into()))
            })
            .map(|r| r.result)
        } else {
            measure_on_hosts(&plan.remote, &mut self.copies, spec, t)
        };
        // The client's CPU is this process's only when it generated the load.
        let client_cpu = plan
            .remote
            .hosts
            .is_empty()
            .then(|| stampede_engine::process::self_cpu().total() - cpu0);
        let usage = sampler.zip(live.process.as_ref()).map(|(s, p)| s.finish(p));
        let mut result = result?;
        if let Some(j) = &journey {
            j.annotate(&mut result);
        }
        if let (Some(u), Some(limit)) = (usage, result.limit.as_mut()) {
            let cores = if t.cpus.is_empty() {
                // A remote target's cores are not known here.
                live.process
                    .as_ref()
                    .filter(|p| !p.is_remote())
                    .map_or(0.0, |_| stampede_engine::limit::cores_allowed_machine())
            } else {
                t.cpus.len() as f64
            };
            limit.target = Some(stampede_engine::limit::TargetLoad {
                busy_cores: (u.user_s + u.sys_s) / u.wall_s.max(1e-3),
                cores,
                busiest_thread: u.busiest_thread,
            });
            result.rejudge_limit();
        }
        obs.event(BenchEvent::RunFinished {
            target,
            scenario,
            phase,
            rps: result.throughput_rps,
            failed: result.requests.failed,
            non_2xx: result.non_2xx(),
        });
        Ok(RunRecord {
            target: target.to_string(),
            scenario: scenario.to_string(),
            repetition: 0,
            result,
            target_cpu_user_s: usage.map(|u| u.user_s),
            target_cpu_sys_s: usage.map(|u| u.sys_s),
            target_peak_rss_kb: usage.map(|u| u.peak_rss_kb),
            client_cpu_s: client_cpu,
        })
    }
}
