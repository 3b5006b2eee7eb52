//! wrk's Lua scripting API, run on LuaJIT (the Lua wrk embeds, Lua 5.1 semantics) and
//! plugged into stampede's engine through its per-thread hooks.
//!
//! As in wrk, a script has three phases. *Setup*: one Lua state (the main one) loads
//! the script and calls `setup(thread)` once per worker thread, with a thread object
//! whose `addr`, `get`, `set` and `stop` reach that thread's own state. *Running*:
//! each worker thread has its own Lua state, which loads the script, runs
//! `init(args)` and then, per batch of requests, `request()`, per response
//! `response(status, headers, body)`, and before each batch `delay()` — each only if
//! the script defines it, so a script that defines none of them costs nothing per
//! request (its one fixed request is sent as prepared). *Done*: the main state's
//! `done(summary, latency, requests)` gets wrk's summary table and two statistics
//! objects.
//!
//! Errors carry the script's file and line as Lua reports them. An error while
//! loading or in `setup`/`init` stops before any load; one inside `request`,
//! `response` or `delay` ends the run (every thread), and [`Script::errors`] says
//! what happened, so the caller can report the run and the error both.
//!
//! A script is the user's own code, as in wrk: not a sandbox. It can read and write
//! files and loop; each state may allocate at most [`MAX_STATE_MEMORY`]. LuaJIT's
//! compiled code cannot be interrupted from outside, so a script that never returns is
//! the caller's to stop (`stampede wrk` ends the process a few seconds after the run
//! should have ended, or after Ctrl-C).

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use mlua::{
    AnyUserData, Function, Lua, MetaMethod, UserData, UserDataFields, UserDataMethods, Value,
    WeakLua,
};
use stampede_engine::hooks::{count_requests, Flow, Reply, ThreadHooks, ThreadHooksSource};
use stampede_engine::{value_at_percentile, Request};

const PRELUDE: &str = include_str!("wrk.lua");

/// What the script is told about the target, as wrk fills its `wrk` table.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The URL as given (`args[0]` of `init`).
    pub url: String,
    /// `http` or `https`.
    pub scheme: String,
    /// The host as written in the URL.
    pub host: String,
    /// The port as written in the URL (`nil` in the script when absent).
    pub port: Option<String>,
    /// Path and query (`/` when the URL has none).
    pub path: String,
    /// `-H` headers, in order.
    pub headers: Vec<(String, String)>,
    /// The starting `wrk.method`.
    pub method: String,
    /// The starting `wrk.body`.
    pub body: Option<Vec<u8>>,
}

/// What the script asks of the run, read after every thread's `init`.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The first thread's request (all of a batch, back to back): what the run sends
    /// when no script function builds requests.
    pub request: Request,
    /// How many requests one batch holds (wrk's pipelining by script).
    pub pipeline: usize,
    /// `request()` is defined: every batch is built by the script.
    pub dynamic: bool,
    /// `response()` is defined.
    pub responds: bool,
    /// `delay()` is defined.
    pub delays: bool,
    /// `done()` is defined.
    pub done: bool,
}

/// wrk's summary table for `done`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    /// Run duration in microseconds.
    pub duration_us: u64,
    /// Completed requests.
    pub requests: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Socket connect errors.
    pub connect: u64,
    /// Read errors.
    pub read: u64,
    /// Write errors.
    pub write: u64,
    /// Responses with a status above 399.
    pub status: u64,
    /// Timeouts.
    pub timeout: u64,
}

/// One thread's shared switches, seen from both the main state and the thread's.
#[derive(Debug)]
struct ThreadShared {
    stop: AtomicBool,
    running: AtomicBool,
    addr: Mutex<Option<SocketAddr>>,
}

/// A loaded script: the main state, every thread's state, and what they defined.
pub struct Script {
    path: String,
    main: Lua,
    /// Strong references: the thread objects in Lua hold weak ones.
    states: Vec<Lua>,
    slots: Mutex<Vec<Option<ThreadScript>>>,
    errors: Arc<Mutex<Vec<String>>>,
    plan: Plan,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("path", &self.path)
            .field("plan", &self.plan)
            .finish()
    }
}

/// The message of a Lua error, without mlua's traceback: Lua's own text already
/// names the file and line.
fn message(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        other => other.to_string(),
    };
    match text.find("\nstack traceback:") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// A value's type as Lua names it (`type(v)`; integers are numbers).
fn lua_type(v: &Value) -> &'static str {
    match v {
        Value::Integer(_) | Value::Number(_) => "number",
        other => other.type_name(),
    }
}

/// Why a script cannot be loaded, or its `done` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// Lua raised an error: running the file itself (`stage` `None`), or in one of its
    /// functions (`setup`, `init`, `request`, `done`). The message names the file and
    /// line where Lua knows them.
    #[error("{message}{}", stage.map_or(String::new(), |s| format!(" (in {s})")))]
    Lua {
        /// The function that raised it.
        stage: Option<&'static str>,
        /// Lua's message.
        message: String,
    },
    /// The Lua state could not be set up (its memory limit, the `wrk` table).
    #[error("{0}")]
    State(String),
    /// `request()` returned something other than a string.
    #[error("{function} returned {found} where wrk expects the request as a string")]
    NotString {
        /// The function.
        function: &'static str,
        /// The Lua type it returned.
        found: &'static str,
    },
    /// The request the script builds is not whole HTTP/1.1 requests.
    #[error("{path}: the script's request is not valid HTTP/1.1: {source}")]
    Request {
        /// The script's file.
        path: String,
        /// What is wrong with the request.
        source: stampede_engine::RequestsError,
    },
    /// A thread's own request holds another number of requests than the first's.
    #[error("{path}: thread {thread}'s request does not hold {pipeline} whole request(s) as the first thread's does")]
    ThreadRequest {
        /// The script's file.
        path: String,
        /// The thread, from 1.
        thread: usize,
        /// The first thread's count.
        pipeline: usize,
    },
    /// Loaded for no thread at all.
    #[error("a script needs at least one thread")]
    NoThread,
}

impl ScriptError {
    /// Whether the message already begins with the script's file (Lua's own errors
    /// name it with the line).
    pub fn names(&self, path: &str) -> bool {
        match self {
            ScriptError::Lua { message, .. } => message.starts_with(path),
            ScriptError::Request { .. } | ScriptError::ThreadRequest { .. } => true,
            _ => false,
        }
    }
}

/// Lua's error `e`, raised in `stage` (`None`: running the file).
fn raised(stage: Option<&'static str>) -> impl Fn(mlua::Error) -> ScriptError {
    move |e| ScriptError::Lua {
        stage,
        message: message(&e),
    }
}

/// Reads a Lua string result as bytes, or says what came back instead.
fn bytes_of(v: Value, function: &'static str) -> Result<Vec<u8>, ScriptError> {
    match v {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        other => Err(ScriptError::NotString {
            function,
            found: lua_type(&other),
        }),
    }
}

impl Script {
    /// Loads `source` (read from `path`) for `threads` worker threads: the main state,
    /// then for each thread its own state, `setup(thread)` in the main one and
    /// `init(args)` in the thread's. `args` are the arguments after `--`; threads
    /// connect to `addr` unless `setup` sets `thread.addr`.
    ///
    /// Long on purpose: wrk's order of events at start (each thread's state, `setup`,
    /// `init`, the first request counted), one step after another.
    pub fn load(
        path: &str,
        source: &str,
        target: &Target,
        args: &[String],
        threads: usize,
        addr: Option<SocketAddr>,
    ) -> Result<Script, ScriptError> {
        let main = state(path, source, target)?;
        let errors = Arc::new(Mutex::new(Vec::new()));
        let mut states = Vec::with_capacity(threads);
        let mut shared = Vec::with_capacity(threads);
        let setup: Option<Function> = main.globals().get("setup").ok();
        for _ in 0..threads {
            let lua = state(path, source, target)?;
            let sh = Arc::new(ThreadShared {
                stop: AtomicBool::new(false),
                running: AtomicBool::new(false),
                addr: Mutex::new(addr),
            });
            let handle = ThreadObject {
                lua: lua.weak(),
                shared: sh.clone(),
            };
            let wrk: mlua::Table = lua.globals().get("wrk").map_err(raised(None))?;
            wrk.set("thread", handle.clone()).map_err(raised(None))?;
            if let Some(setup) = &setup {
                setup.call::<()>(handle).map_err(raised(Some("setup")))?;
            }
            let init: Function = wrk.get("init").map_err(raised(None))?;
            let list = lua.create_table().map_err(raised(None))?;
            list.raw_set(0, target.url.as_str()).map_err(raised(None))?;
            for (i, a) in args.iter().enumerate() {
                list.raw_set(i + 1, a.as_str()).map_err(raised(None))?;
            }
            init.call::<()>(list).map_err(raised(Some("init")))?;
            states.push(lua);
            shared.push(sh);
        }
        let first = states.first().ok_or(ScriptError::NoThread)?;
        let is_fn = |lua: &Lua, name: &str| {
            matches!(lua.globals().get::<Value>(name), Ok(Value::Function(_)))
        };
        let dynamic = is_fn(first, "request");
        let responds = is_fn(first, "response");
        let delays = is_fn(first, "delay");
        let done = is_fn(&main, "done");
        // As wrk: the first thread's request is built once to count its requests.
        let request_fn = |lua: &Lua| -> Result<Function, ScriptError> {
            if is_fn(lua, "request") {
                lua.globals().get("request").map_err(raised(None))
            } else {
                let wrk: mlua::Table = lua.globals().get("wrk").map_err(raised(None))?;
                wrk.get("request").map_err(raised(None))
            }
        };
        let fixed_of = |lua: &Lua| -> Result<Vec<u8>, ScriptError> {
            let f = request_fn(lua)?;
            let v = f.call::<Value>(()).map_err(raised(Some("request")))?;
            bytes_of(v, "request()")
        };
        let bytes = fixed_of(first)?;
        let pipeline = count_requests(&bytes).map_err(|source| ScriptError::Request {
            path: path.to_string(),
            source,
        })?;
        let method = bytes
            .split(|&b| b == b' ')
            .next()
            .map(|m| String::from_utf8_lossy(m).to_ascii_uppercase())
            .unwrap_or_default();
        let plan = Plan {
            request: Request {
                method,
                bytes: bytes.clone(),
            },
            pipeline,
            dynamic,
            responds,
            delays,
            done,
        };
        let mut slots = Vec::with_capacity(threads);
        for (i, (lua, sh)) in states.iter().zip(&shared).enumerate() {
            let globals = lua.globals();
            let func = |name: &str| match globals.get::<Value>(name) {
                Ok(Value::Function(f)) => Some(f),
                _ => None,
            };
            // A thread whose fixed request differs from the first thread's (init
            // built it from thread-specific values) sends its own, copied per batch.
            let fixed = if dynamic || i == 0 {
                None
            } else {
                let own = fixed_of(lua)?;
                if count_requests(&own) != Ok(pipeline) {
                    return Err(ScriptError::ThreadRequest {
                        path: path.to_string(),
                        thread: i + 1,
                        pipeline,
                    });
                }
                (!same_request(&own, &bytes)).then_some(own)
            };
            slots.push(Some(ThreadScript {
                request: if dynamic { func("request") } else { None },
                response: func("response"),
                delay: func("delay"),
                fixed,
                shared: sh.clone(),
                errors: errors.clone(),
                lua: lua.clone(),
            }));
        }
        Ok(Script {
            path: path.to_string(),
            main,
            states,
            slots: Mutex::new(slots),
            errors,
            plan,
        })
    }

    /// What the script asks of the run.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The errors raised while the run was going (in `request`, `response` or
    /// `delay`); the run stopped at the first.
    pub fn errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Calls `done(summary, latency, requests)` in the main state, if the script
    /// defines it: `latency` in microseconds, `rates` the per-thread requests per
    /// second, one sample per thread and second.
    pub fn done(
        &self,
        summary: &Summary,
        latency: &Histogram<u64>,
        rates: &[f64],
    ) -> Result<(), ScriptError> {
        if !self.plan.done {
            return Ok(());
        }
        let lua = &self.main;
        let run = || -> mlua::Result<()> {
            let s = lua.create_table()?;
            s.set("duration", summary.duration_us)?;
            s.set("requests", summary.requests)?;
            s.set("bytes", summary.bytes)?;
            let e = lua.create_table()?;
            e.set("connect", summary.connect)?;
            e.set("read", summary.read)?;
            e.set("write", summary.write)?;
            e.set("status", summary.status)?;
            e.set("timeout", summary.timeout)?;
            s.set("errors", e)?;
            let mut rate_hist = Histogram::<u64>::new(3).expect("3 significant digits");
            for r in rates {
                rate_hist.record(r.round().max(0.0) as u64).ok();
            }
            let done: Function = lua.globals().get("done")?;
            done.call::<()>((s, Stats::of(latency), Stats::of(&rate_hist)))
        };
        run().map_err(raised(Some("done")))
    }

    /// The script's file, as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many thread states were made (one per worker thread).
    pub fn threads(&self) -> usize {
        self.states.len()
    }
}

impl ThreadHooksSource for Script {
    fn thread(&self, index: usize) -> Box<dyn ThreadHooks> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let t = slots
            .get_mut(index)
            .and_then(Option::take)
            .expect("one script thread per worker, each taken once");
        t.shared.running.store(true, Ordering::Relaxed);
        Box::new(t)
    }
}

/// Whether two fixed requests differ only in header order: wrk.format writes the
/// headers in `pairs` order, which each Lua state may walk differently.
fn same_request(a: &[u8], b: &[u8]) -> bool {
    let lines = |x: &[u8]| {
        let mut v: Vec<Vec<u8>> = x.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
        v.sort_unstable();
        v
    };
    a.len() == b.len() && (a == b || lines(a) == lines(b))
}

/// The most memory one Lua state (the main one, or a thread's) may allocate; an
/// allocation past it is a Lua error ("not enough memory") that ends the run as any
/// script error does.
pub const MAX_STATE_MEMORY: usize = 1 << 30;

/// A new Lua state with the `wrk` table filled in for `target` and the script run.
fn state(path: &str, source: &str, target: &Target) -> Result<Lua, ScriptError> {
    let lua = Lua::new();
    lua.set_memory_limit(MAX_STATE_MEMORY)
        .map_err(|e| ScriptError::State(format!("the Lua state's memory limit: {e}")))?;
    let fill = || -> mlua::Result<()> {
        let wrk: mlua::Table = lua.load(PRELUDE).set_name("=wrk").call(())?;
        wrk.set("scheme", target.scheme.as_str())?;
        wrk.set("host", target.host.as_str())?;
        wrk.set("port", target.port.as_deref())?;
        wrk.set("path", target.path.as_str())?;
        wrk.set("method", target.method.as_str())?;
        if let Some(b) = &target.body {
            wrk.set("body", lua.create_string(b)?)?;
        }
        let headers: mlua::Table = wrk.get("headers")?;
        for (n, v) in &target.headers {
            headers.set(n.as_str(), v.as_str())?;
        }
        wrk.set("lookup", lua.create_function(lookup)?)?;
        wrk.set(
            "connect",
            lua.create_function(|_, a: AnyUserData| {
                let addr = a.borrow::<Addr>()?.0;
                Ok(TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
            })?,
        )?;
        lua.globals().set("wrk", wrk)?;
        Ok(())
    };
    fill().map_err(|e| ScriptError::State(format!("the wrk table: {}", message(&e))))?;
    lua.load(source)
        .set_name(format!("@{path}"))
        .exec()
        .map_err(raised(None))?;
    Ok(lua)
}

/// `wrk.lookup(host, service)`: every address of the pair, as getaddrinfo gives them.
fn lookup(lua: &Lua, (host, service): (String, Value)) -> mlua::Result<mlua::Table> {
    let port: u16 = match &service {
        Value::Integer(n) => u16::try_from(*n).ok(),
        Value::Number(n) => Some(*n as u16),
        Value::String(s) => {
            let s = s.to_string_lossy();
            match s.as_str() {
                "http" => Some(80),
                "https" => Some(443),
                other => other.parse().ok(),
            }
        }
        Value::Nil => Some(80),
        _ => None,
    }
    .ok_or_else(|| {
        mlua::Error::RuntimeError(format!(
            "wrk.lookup: unknown service {service:?}; give a port number, \"http\" or \"https\""
        ))
    })?;
    let addrs = (host.as_str(), port).to_socket_addrs().map_err(|e| {
        mlua::Error::RuntimeError(format!("wrk.lookup: unable to resolve {host}:{port}: {e}"))
    })?;
    let t = lua.create_table()?;
    for (i, a) in addrs.enumerate() {
        t.raw_set(i + 1, Addr(a))?;
    }
    Ok(t)
}

/// A socket address in Lua (`wrk.lookup`'s entries, `thread.addr`).
#[derive(Debug, Clone, Copy)]
struct Addr(SocketAddr);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // wrk prints host and service as getnameinfo gives them: "127.0.0.1:8080".
        methods.add_meta_method(MetaMethod::ToString, |_, a, ()| {
            Ok(format!("{}:{}", a.0.ip(), a.0.port()))
        });
    }
}

/// The `thread` object of `setup` and `wrk.thread`.
#[derive(Clone)]
struct ThreadObject {
    lua: WeakLua,
    shared: Arc<ThreadShared>,
}

impl ThreadObject {
    fn state(&self) -> mlua::Result<Lua> {
        self.lua
            .try_upgrade()
            .ok_or_else(|| mlua::Error::RuntimeError("the thread's state has ended".into()))
    }
}

impl UserData for ThreadObject {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, t| {
            Ok(t.shared
                .addr
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .map(Addr))
        });
        fields.add_field_method_set("addr", |_, t, v: Value| match &v {
            Value::UserData(u) if u.is::<Addr>() => {
                let a = u.borrow::<Addr>()?.0;
                *t.shared.addr.lock().unwrap_or_else(|e| e.into_inner()) = Some(a);
                Ok(())
            }
            other => Err(mlua::Error::RuntimeError(format!(
                "cannot set '{}' as thread.addr; use an address from wrk.lookup",
                lua_type(other)
            ))),
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get", |lua, t, name: String| {
            let v: Value = t.state()?.globals().get(name)?;
            transfer(&v, lua, 0)
        });
        methods.add_method("set", |lua, t, (name, v): (String, Value)| {
            let _ = lua;
            let dst = t.state()?;
            let copied = transfer(&v, &dst, 0)?;
            dst.globals().set(name, copied)
        });
        methods.add_method("stop", |_, t, ()| {
            if !t.shared.running.load(Ordering::Relaxed) {
                return Err(mlua::Error::RuntimeError(
                    "thread:stop() can only be called while the thread is running (from request, response or delay)".into(),
                ));
            }
            t.shared.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
    }
}

/// Copies a value into another Lua state: only booleans, nil, numbers, strings and
/// tables of them cross, as in wrk.
fn transfer(v: &Value, dst: &Lua, depth: usize) -> mlua::Result<Value> {
    if depth > 64 {
        return Err(mlua::Error::RuntimeError(
            "cannot transfer a table nested more than 64 deep (a cycle?)".into(),
        ));
    }
    Ok(match v {
        Value::Nil => Value::Nil,
        Value::Boolean(b) => Value::Boolean(*b),
        Value::Integer(i) => Value::Integer(*i),
        Value::Number(n) => Value::Number(*n),
        Value::String(s) => Value::String(dst.create_string(s.as_bytes())?),
        Value::Table(t) => {
            let out = dst.create_table()?;
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                out.raw_set(transfer(&k, dst, depth + 1)?, transfer(&v, dst, depth + 1)?)?;
            }
            Value::Table(out)
        }
        other => {
            return Err(mlua::Error::RuntimeError(format!(
                "cannot transfer '{}' to thread",
                lua_type(other)
            )))
        }
    })
}

/// wrk's statistics object: `min`, `max`, `mean`, `stdev`, `percentile(p)`,
/// `s(i)` for the i-th distinct value and its count, and `#s` for how many there are.
struct Stats {
    min: f64,
    max: f64,
    mean: f64,
    stdev: f64,
    hist: Histogram<u64>,
    distinct: Vec<(u64, u64)>,
}

impl Stats {
    fn of(h: &Histogram<u64>) -> Stats {
        let n = h.len();
        Stats {
            min: if n == 0 { 0.0 } else { h.min() as f64 },
            max: if n == 0 { 0.0 } else { h.max() as f64 },
            mean: if n == 0 { 0.0 } else { h.mean() },
            stdev: if n == 0 { 0.0 } else { h.stdev() },
            distinct: h
                .iter_recorded()
                .map(|v| {
                    (
                        h.highest_equivalent(v.value_iterated_to()),
                        v.count_at_value(),
                    )
                })
                .collect(),
            hist: h.clone(),
        }
    }
}

impl UserData for Stats {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("min", |_, s| Ok(s.min));
        fields.add_field_method_get("max", |_, s| Ok(s.max));
        fields.add_field_method_get("mean", |_, s| Ok(s.mean));
        fields.add_field_method_get("stdev", |_, s| Ok(s.stdev));
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("percentile", |_, s, p: f64| {
            if s.hist.is_empty() {
                return Ok(0.0);
            }
            Ok(value_at_percentile(&s.hist, p.clamp(0.0, 100.0)) as f64)
        });
        methods.add_meta_method(MetaMethod::Call, |_, s, i: i64| {
            let (v, c) = usize::try_from(i - 1)
                .ok()
                .and_then(|i| s.distinct.get(i).copied())
                .unwrap_or((0, 0));
            Ok((v as f64, c as f64))
        });
        methods.add_meta_method(MetaMethod::Len, |_, s, ()| Ok(s.distinct.len()));
    }
}

/// One worker thread's script, handed to its worker.
struct ThreadScript {
    lua: Lua,
    /// The script's `request`, when it builds every batch.
    request: Option<Function>,
    response: Option<Function>,
    delay: Option<Function>,
    /// This thread's fixed request, when it differs from the run's.
    fixed: Option<Vec<u8>>,
    shared: Arc<ThreadShared>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl ThreadScript {
    /// Notes an error and asks the whole run to stop.
    fn fail(&self, what: &str, e: String) -> Flow {
        let mut g = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        g.push(format!("{e} (in {what})"));
        Flow::StopRun
    }

    /// After a hook: the thread goes on unless the script stopped it.
    fn flow(&self) -> Flow {
        if self.shared.stop.load(Ordering::Relaxed) {
            Flow::StopThread
        } else {
            Flow::Go
        }
    }
}

impl ThreadHooks for ThreadScript {
    fn builds_requests(&self) -> bool {
        self.request.is_some() || self.fixed.is_some()
    }

    fn wants_responses(&self) -> bool {
        self.response.is_some()
    }

    fn has_delay(&self) -> bool {
        self.delay.is_some()
    }

    fn address(&self) -> Option<SocketAddr> {
        *self.shared.addr.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn request(&mut self, _conn: usize, out: &mut Vec<u8>) -> Flow {
        if let Some(f) = &self.fixed {
            out.extend_from_slice(f);
            return Flow::Go;
        }
        let Some(f) = &self.request else {
            return Flow::Go;
        };
        match f.call::<Value>(()) {
            Ok(Value::String(s)) => out.extend_from_slice(&s.as_bytes()),
            Ok(other) => {
                return self.fail(
                    "request",
                    format!(
                        "request() returned {} where wrk expects the request as a string",
                        lua_type(&other)
                    ),
                )
            }
            Err(e) => return self.fail("request", message(&e)),
        }
        self.flow()
    }

    fn response(&mut self, reply: &Reply) -> Flow {
        let Some(f) = &self.response else {
            return Flow::Go;
        };
        let call = || -> mlua::Result<()> {
            let t = self
                .lua
                .create_table_with_capacity(0, reply.headers.len())?;
            for (n, v) in reply.headers.iter() {
                t.raw_set(n, v)?;
            }
            f.call::<()>((reply.status, t, self.lua.create_string(reply.body)?))
        };
        match call() {
            Ok(()) => self.flow(),
            Err(e) => self.fail("response", message(&e)),
        }
    }

    fn delay(&mut self, _conn: usize) -> (Duration, Flow) {
        let Some(f) = &self.delay else {
            return (Duration::ZERO, Flow::Go);
        };
        match f.call::<Value>(()) {
            Ok(v) => {
                let ms = match v {
                    Value::Integer(i) => i as f64,
                    Value::Number(n) => n,
                    _ => 0.0,
                };
                let ms = if ms.is_finite() { ms.max(0.0) } else { 0.0 };
                (Duration::from_micros((ms * 1e3) as u64), self.flow())
            }
            Err(e) => (Duration::ZERO, self.fail("delay", message(&e))),
        }
    }
}

#[cfg(test)]
mod tests;
