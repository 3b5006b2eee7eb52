//! `stampede load --dashboard` end to end in headless Chromium (required in CI), driven
//! over the DevTools protocol on a pipe: the page connects while the run goes, its
//! cards and charts change from second to second, and at the end it shows the final
//! report; no console errors or exceptions along the way.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use crate::common::{chromium, HEADLESS};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_stampede");

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the two-element array.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    (fds[0], fds[1])
}

/// A promise of the live page's next second after `LAST`: `[second, live charts, lines
/// drawn]` once the page shows a later second, or `null` after a second without one.
const NEXT_SECOND: &str = "new Promise(function(done){\
  var o;\
  function check(){var c=document.querySelector('[data-second]');\
    if(!c||+c.dataset.second<=LAST)return false;\
    if(o)o.disconnect();\
    done([+c.dataset.second,document.querySelectorAll('#live svg.chart').length,\
      document.querySelectorAll('#live polyline').length]);return true}\
  if(check())return;\
  o=new MutationObserver(check);\
  o.observe(document.documentElement,{subtree:true,childList:true,attributes:true,characterData:true});\
  setTimeout(function(){o.disconnect();done(null)},1000)})";

/// Headless Chromium with the DevTools protocol on fds 3 (commands in) and 4 (replies
/// and events out), one JSON message per NUL-terminated record.
struct Browser {
    child: Child,
    to: File,
    from: Receiver<Value>,
    next: u64,
    /// Events seen so far (console calls, exceptions, log entries).
    events: Vec<Value>,
    session: Option<String>,
    profile: std::path::PathBuf,
}

impl Browser {
    fn start(binary: &str) -> Browser {
        let (cmd_r, cmd_w) = pipe();
        let (ev_r, ev_w) = pipe();
        let profile =
            std::env::temp_dir().join(format!("stampede-dash-profile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&profile);
        let mut c = Command::new(binary);
        c.args(HEADLESS)
            .arg("--remote-debugging-pipe")
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: the closure only calls dup2, which is async-signal-safe, between
        // fork and exec.
        unsafe {
            c.pre_exec(move || {
                // dup2 clears close-on-exec on the copies; the originals go at exec.
                if libc::dup2(cmd_r, 3) < 0 || libc::dup2(ev_w, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = c.spawn().expect("chromium starts");
        // SAFETY: the child's ends of the pipes, which this process no longer uses.
        unsafe {
            libc::close(cmd_r);
            libc::close(ev_w);
        }
        let (tx, rx) = channel();
        // SAFETY: the pipe's read end, owned by nothing else from here on.
        let mut reader = BufReader::new(unsafe { File::from_raw_fd(ev_r) });
        std::thread::spawn(move || loop {
            let mut msg = Vec::new();
            match reader.read_until(0, &mut msg) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    msg.pop();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Browser {
            child,
            // SAFETY: the pipe's write end, owned by nothing else from here on.
            to: unsafe { File::from_raw_fd(cmd_w) },
            from: rx,
            next: 0,
            events: Vec::new(),
            session: None,
            profile,
        }
    }

    /// Sends a command and waits (at most 20 s) for its reply.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .from
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to {method}"));
            if v["id"] == json!(id) {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return v["result"].clone();
            }
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
    }

    /// Evaluates a JavaScript expression in the page; returns its value.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    /// What `expr`, a promise, resolves to.
    fn wait_for(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
        );
        r["result"]["value"].clone()
    }

    /// Console errors, uncaught exceptions and error log entries seen so far.
    fn errors(&mut self) -> Vec<Value> {
        while let Ok(v) = self.from.try_recv() {
            if v.get("method").is_some() {
                self.events.push(v);
            }
        }
        self.events
            .iter()
            .filter(|e| match e["method"].as_str().unwrap_or("") {
                "Runtime.exceptionThrown" => true,
                "Runtime.consoleAPICalled" => e["params"]["type"] == "error",
                "Log.entryAdded" => e["params"]["entry"]["level"] == "error",
                _ => false,
            })
            .cloned()
            .collect()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// With STAMPEDE_SCREENSHOTS=DIR, saves the page as DIR/dashboard.png.
fn screenshot(b: &mut Browser) {
    use base64::Engine as _;
    let Some(dir) = std::env::var_os("STAMPEDE_SCREENSHOTS") else {
        return;
    };
    b.call(
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 1200, "height": 880, "deviceScaleFactor": 1, "mobile": false}),
    );
    let shot = b.call("Page.captureScreenshot", json!({"format": "png"}));
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    std::fs::write(std::path::Path::new(&dir).join("dashboard.png"), png).unwrap();
}

#[test]
fn the_dashboard_updates_live_and_ends_on_the_report() {
    let Some(binary) = chromium() else {
        return crate::common::missing_peer("chromium (`apt-get install chromium`)");
    };
    let srv = crate::common::srv();
    let addr = srv.addr();

    // The browser is up and attached before the run starts, so a slow browser start
    // (a cold machine takes seconds) does not eat the run's seconds to be watched.
    let mut b = Browser::start(binary);
    let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
    let attached = b.call(
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    );
    b.session = Some(attached["sessionId"].as_str().unwrap().to_string());
    b.call("Runtime.enable", json!({}));
    b.call("Log.enable", json!({}));
    b.call("Page.enable", json!({}));

    // A fixed-rate run: bounded in time and count.
    let mut run = Command::new(BIN)
        .args([
            "load",
            &format!("http://{addr}/pong"),
            "--rate",
            "2000",
            "-d",
            "6s",
            "-c",
            "4",
            "-t",
            "1",
            "-q",
            "--dashboard=127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(run.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("stampede: live dashboard at ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();

    b.call("Page.navigate", json!({"url": url}));

    // While the run goes: the second shown advances and the charts hold lines. The
    // page is watched as a viewer sees it: each change of the second shown, as the
    // page makes it (a mutation observer), or nothing within a second.
    let mut seen: Vec<Vec<u64>> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && run.try_wait().unwrap().is_none() {
        let last = seen.last().map_or(-1, |r| r[0] as i64);
        let v = b.wait_for(&NEXT_SECOND.replace("LAST", &last.to_string()));
        if let Some(a) = v.as_array() {
            seen.push(a.iter().map(|x| x.as_u64().unwrap()).collect());
            if seen.len() == 4 {
                screenshot(&mut b);
            }
        }
    }
    let status = run.wait().unwrap();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{status}: {rest}");
    let seconds: Vec<u64> = seen.iter().map(|r| r[0]).collect();
    assert!(
        seconds.len() >= 3 && seconds.windows(2).all(|w| w[0] < w[1]),
        "the page advanced second by second: {seen:?}"
    );
    assert!(seen.iter().all(|r| r[1] == 4), "four live charts: {seen:?}");
    assert!(seen.last().unwrap()[2] >= 4, "lines drawn: {seen:?}");

    // After the run: the page is the final report.
    let title = crate::common::eventually("the final report", Duration::from_secs(5), || {
        let title = b.eval("document.title");
        title
            .as_str()
            .is_some_and(|t| !t.starts_with("live:"))
            .then_some(title)
    });
    assert_eq!(title, json!(format!("GET http://{addr}/pong")));
    assert_eq!(
        b.eval("document.querySelectorAll('svg.chart').length"),
        json!(7)
    );
    assert_eq!(b.eval("!!document.querySelector('script')"), json!(false));
    let errors = b.errors();
    assert!(errors.is_empty(), "{errors:#?}");
    drop(b);
    drop(srv);
}
