//! How the reference server ends a WebSocket connection, over a real socket on
//! 127.0.0.1:0: its close goes out, its side of the TCP connection is shut, and what
//! the client still sends is read and dropped until the client closes its own side —
//! so no reset meets the client's last frames and destroys the close it has not read
//! — or until the linger's bound passes.

use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stampede_server::{Config, Running};
use stampede_wire::ws::{self, Event, Reader, ReaderOptions};

use crate::common::settle;
use crate::ws_room::member;
use stampede_wire::clock::Clock;

fn server() -> Running {
    Running::local(Config {
        threads: 1,
        ..Config::default()
    })
    .unwrap()
}

/// The frames of `got`, read as a client reads them: the close's code, if one came.
fn close_code(got: &[u8]) -> Option<Option<u16>> {
    let mut r = Reader::new(ReaderOptions {
        peer_is_client: false,
        max_message: 1 << 20,
        keep: false,
    });
    let mut close = None;
    r.feed(got, &mut |e| {
        if let Event::Close { code, .. } = e {
            close = Some(code);
        }
    })
    .unwrap();
    close
}

/// Sends masked 1 KiB messages on `s`, 256 of them and then until `stop` is set (at
/// most 100,000), as a client that has not yet read the server's close does: how many
/// went, or the error that stopped them.
fn keep_sending(
    mut s: std::net::TcpStream,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<std::io::Result<u64>> {
    std::thread::spawn(move || {
        let mut frame = Vec::new();
        ws::frame(
            &mut frame,
            (true, false),
            ws::TEXT,
            &[b'x'; 1024],
            Some([1, 2, 3, 4]),
        );
        let mut sent = 0;
        while sent < 256 || (!stop.load(Ordering::Acquire) && sent < 100_000) {
            s.write_all(&frame)?;
            sent += 1;
        }
        Ok(sent)
    })
}

/// Reads `s` to its end: what came, or the error that ended it and what came before.
fn read_to_end(s: &mut std::net::TcpStream, mut got: Vec<u8>) -> Result<Vec<u8>, String> {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("{e} after {} bytes", got.len())),
        }
    }
}

#[test]
fn the_servers_close_ends_cleanly_while_the_client_still_sends() {
    let srv = server();
    let (mut s, early) = member(&srv, "/ws/echo");
    // An unmasked frame breaks a client's rules: the server closes with 1002 …
    let mut bad = Vec::new();
    ws::frame(&mut bad, (true, false), ws::TEXT, b"unmasked", None);
    s.write_all(&bad).unwrap();
    // … while the client goes on sending until it has read the close.
    let stop = Arc::new(AtomicBool::new(false));
    let sender = keep_sending(s.try_clone().unwrap(), stop.clone());
    // The close comes, then the end of the server's side: no reset.
    let got = read_to_end(&mut s, early);
    stop.store(true, Ordering::Release);
    let got = got.unwrap();
    assert_eq!(close_code(&got), Some(Some(ws::PROTOCOL_ERROR)));
    // Everything the client sent after the close was taken (read and dropped).
    let sent = sender
        .join()
        .unwrap()
        .expect("the client's frames met no reset");
    assert!(sent > 0);
    s.shutdown(std::net::Shutdown::Write).unwrap();
}

#[test]
fn a_client_that_never_closes_is_let_go_within_the_linger() {
    // In simulated time: the linger's bound (2 s) is met by moving the server's clock.
    let clock = Clock::manual();
    let srv = Running::local(Config {
        threads: 1,
        clock: clock.clone(),
        ..Config::default()
    })
    .unwrap();
    let (mut s, early) = member(&srv, "/ws/echo");
    // The client closes; the server answers and shuts its side …
    let mut close = Vec::new();
    ws::close(&mut close, Some(ws::NORMAL), "bye", Some([9, 9, 9, 9]));
    s.write_all(&close).unwrap();
    let got = read_to_end(&mut s, early).unwrap();
    assert_eq!(close_code(&got), Some(Some(ws::NORMAL)));
    // … and the client keeps its own open. 1.5 s on, the server still reads and drops
    // what it sends (a closed socket would answer the first write with a reset, which
    // the next meets) …
    let empty = b"\x81\x80\x00\x00\x00\x00";
    // Each write goes at once (no small write waits behind an unanswered one).
    s.set_nodelay(true).unwrap();
    clock.advance(Duration::from_millis(1500));
    settle(&srv);
    for _ in 0..3 {
        s.write_all(empty).expect("open within the linger");
        settle(&srv);
    }
    // … and past the bound it has closed the socket: a write meets the reset.
    clock.advance(Duration::from_millis(1000));
    settle(&srv);
    let failed = (0..3)
        .find_map(|_| s.write_all(empty).err())
        .expect("still open past the linger");
    assert!(
        matches!(
            failed.kind(),
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe
        ),
        "{failed}"
    );
}

/// Push clients that never read: each connection holds at most its cap of waiting
/// answers, and past the server's budget for them, connections are closed rather
/// than held — the memory they take is bounded whatever the clients do.
#[test]
fn clients_that_never_read_are_held_to_a_budget() {
    let clock = Clock::manual();
    let srv = Running::local(Config {
        threads: 1,
        output_budget: 4 << 20,
        clock: clock.clone(),
        ..Config::default()
    })
    .unwrap();
    let mut clients: Vec<std::net::TcpStream> = (0..8)
        .map(|_| member(&srv, "/ws/push?interval_ms=1&size=1048576").0)
        .collect();
    // In simulated time: each millisecond the clock moves, every client is due a
    // mebibyte; 64 of them fill every socket's buffers and the server's own …
    for _ in 0..64 {
        clock.advance(Duration::from_millis(1));
        settle(&srv);
    }
    // … and the lingers of the connections closed against the budget run out.
    clock.advance(Duration::from_millis(2500));
    settle(&srv);
    let mut closed = 0;
    for s in &mut clients {
        // With the clock still, a kept client is sent nothing more once it has read
        // what waited: half a second without a byte says so.
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0usize;
        loop {
            match s.read(&mut buf) {
                Ok(0) => {
                    closed += 1;
                    break;
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                    closed += 1;
                    break;
                }
                Err(_) => break,
            }
            // Still pushing well past what any buffer held: this one was kept.
            if got > 48 << 20 {
                break;
            }
        }
    }
    assert!(
        closed >= 4,
        "{closed} of 8 closed: 8 MiB and more waited against a budget of 4"
    );
    assert!(
        closed < 8,
        "every client closed: the budget has room for some"
    );
    drop(clients);
    srv.stop().unwrap();
}
