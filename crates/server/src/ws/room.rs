//! Broadcast rooms for `/ws/room?name=`: every message a member sends goes to every
//! member of its room, the sender included, whichever of the server's threads holds
//! each member's connection.
//!
//! The registry is shared by the event loops: each room's members by loop, and each
//! loop's inbox (a channel and the waker that rouses its poll). A loop publishes a
//! wake-up's messages once it has read them: the frames are made once and shared, its
//! own members are written at once, and each other loop holding members gets the
//! frames and the list of its members in its inbox, which it empties when woken. A
//! member is named by its loop, its slot and the slot's generation, so a slot reused
//! by a new connection is never written another's messages. Members join at the
//! upgrade and leave when their connection closes.
//!
//! An inbox holds at most [`MAX_INBOX`] bytes of frames: past it, a publish hands
//! the loop its members to close (1008) instead — once, until the loop has read its
//! inbox — as a member that does not read its own output is closed, so a thread
//! that falls behind cannot grow the others' memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use mio::Waker;

/// The longest room name, and the characters one may hold.
pub const MAX_NAME: usize = 64;

/// Whether `name` may name a room: 1 to 64 letters, digits, `.`, `_` or `-`.
pub fn valid_name(name: &[u8]) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The most bytes of frames waiting in one loop's inbox.
pub const MAX_INBOX: usize = 64 << 20;

/// Frames for some of one loop's connections: each `(slot, generation)` is written
/// `frames` (whole WebSocket frames, one message or several in order) — or, when
/// `overflow`, closed with 1008: its inbox was full.
pub struct Delivery {
    pub to: Vec<(usize, u32)>,
    pub frames: Arc<[u8]>,
    pub overflow: bool,
}

/// What an inbox holds, shared by the loops that fill it and the one that reads it.
#[derive(Default)]
pub struct Backlog {
    bytes: AtomicUsize,
    overflowing: AtomicBool,
}

impl Backlog {
    /// The loop took `d` from its inbox.
    pub fn took(&self, d: &Delivery) {
        if d.overflow {
            self.overflowing.store(false, Ordering::Relaxed);
        } else {
            self.bytes.fetch_sub(d.frames.len(), Ordering::Relaxed);
        }
    }
}

/// A loop's inbox: where other loops leave its members' messages.
struct Inbox {
    tx: Sender<Delivery>,
    waker: Arc<Waker>,
    backlog: Arc<Backlog>,
}

/// Connections of one loop, each as `(slot, generation)`.
type Members = Vec<(usize, u32)>;

#[derive(Default)]
struct Registry {
    /// Each room's members, by loop.
    rooms: HashMap<Box<[u8]>, Vec<Members>>,
    inboxes: Vec<Option<Inbox>>,
}

/// The server's rooms (see the module's description).
pub struct Rooms {
    inner: Mutex<Registry>,
    /// The most bytes an inbox holds ([`MAX_INBOX`]; less in tests).
    max_inbox: usize,
}

impl Default for Rooms {
    fn default() -> Rooms {
        Rooms::with_inbox_limit(MAX_INBOX)
    }
}

impl Rooms {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rooms whose inboxes hold at most `max_inbox` bytes each.
    pub fn with_inbox_limit(max_inbox: usize) -> Rooms {
        Rooms {
            inner: Mutex::default(),
            max_inbox,
        }
    }

    /// Loop `lp` takes deliveries on `tx`, roused by `waker`; it tells the backlog
    /// returned what it took.
    pub fn add_loop(&self, lp: usize, tx: Sender<Delivery>, waker: Arc<Waker>) -> Arc<Backlog> {
        let mut r = self.lock();
        if r.inboxes.len() <= lp {
            r.inboxes.resize_with(lp + 1, || None);
        }
        let backlog = Arc::new(Backlog::default());
        r.inboxes[lp] = Some(Inbox {
            tx,
            waker,
            backlog: backlog.clone(),
        });
        backlog
    }

    /// The connection in slot `ci` (generation `g`) of loop `lp` joins `room`.
    pub fn join(&self, room: &[u8], lp: usize, ci: usize, g: u32) {
        let mut r = self.lock();
        let by_loop = r.rooms.entry(room.into()).or_default();
        if by_loop.len() <= lp {
            by_loop.resize_with(lp + 1, Vec::new);
        }
        by_loop[lp].push((ci, g));
    }

    /// It leaves; an empty room is forgotten.
    pub fn leave(&self, room: &[u8], lp: usize, ci: usize, g: u32) {
        let mut r = self.lock();
        let Some(by_loop) = r.rooms.get_mut(room) else {
            return;
        };
        if let Some(m) = by_loop.get_mut(lp) {
            if let Some(i) = m.iter().position(|&x| x == (ci, g)) {
                m.swap_remove(i);
            }
        }
        if by_loop.iter().all(Vec::is_empty) {
            r.rooms.remove(room);
        }
    }

    /// Publishes `frames` from loop `lp` to `room`: every other loop's members go to
    /// its inbox (and it is woken); the members on `lp` itself are returned for it to
    /// write.
    pub fn publish(&self, room: &[u8], lp: usize, frames: &Arc<[u8]>) -> Vec<(usize, u32)> {
        let r = self.lock();
        let Some(by_loop) = r.rooms.get(room) else {
            return Vec::new();
        };
        let mut own = Vec::new();
        for (i, members) in by_loop.iter().enumerate() {
            if members.is_empty() {
                continue;
            }
            if i == lp {
                own = members.clone();
                continue;
            }
            if let Some(Some(inbox)) = r.inboxes.get(i) {
                let b = &inbox.backlog;
                let d = if b.bytes.load(Ordering::Relaxed) + frames.len() <= self.max_inbox {
                    b.bytes.fetch_add(frames.len(), Ordering::Relaxed);
                    Delivery {
                        to: members.clone(),
                        frames: frames.clone(),
                        overflow: false,
                    }
                } else if !b.overflowing.swap(true, Ordering::Relaxed) {
                    Delivery {
                        to: members.clone(),
                        frames: Arc::from(&[][..]),
                        overflow: true,
                    }
                } else {
                    // Its members are already to be closed.
                    continue;
                };
                // A loop that has stopped takes nothing: its members are gone too.
                if inbox.tx.send(d).is_ok() {
                    let _ = inbox.waker.wake();
                }
            }
        }
        own
    }

    /// The members of `room` (all loops).
    #[cfg(test)]
    fn members(&self, room: &[u8]) -> usize {
        self.lock()
            .rooms
            .get(room)
            .map_or(0, |b| b.iter().map(Vec::len).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_tokens() {
        assert!(valid_name(b"lobby") && valid_name(b"a.b_c-9"));
        assert!(!valid_name(b"") && !valid_name(b"a b") && !valid_name(b"caf\xc3\xa9"));
        assert!(valid_name(&[b'x'; 64]) && !valid_name(&[b'x'; 65]));
    }

    #[test]
    fn a_message_reaches_every_member_on_every_loop_once() {
        let rooms = Rooms::default();
        let poll = mio::Poll::new().unwrap();
        let (tx1, rx1) = std::sync::mpsc::channel();
        let waker = Arc::new(Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let backlog = rooms.add_loop(1, tx1, waker);
        rooms.join(b"r", 0, 3, 1);
        rooms.join(b"r", 0, 4, 7);
        rooms.join(b"r", 1, 3, 2);
        rooms.join(b"other", 1, 9, 1);
        assert_eq!(rooms.members(b"r"), 3);
        let frames: Arc<[u8]> = Arc::from(&b"\x81\x02hi"[..]);
        let own = rooms.publish(b"r", 0, &frames);
        assert_eq!(own, vec![(3, 1), (4, 7)]);
        let d = rx1.try_recv().unwrap();
        backlog.took(&d);
        assert!(!d.overflow);
        assert_eq!((d.to, &d.frames[..]), (vec![(3, 2)], &b"\x81\x02hi"[..]));
        assert!(rx1.try_recv().is_err(), "one delivery per loop");
        // Leaving: the slot's generation must match; an empty room goes.
        rooms.leave(b"r", 0, 4, 6);
        assert_eq!(rooms.members(b"r"), 3);
        for (lp, ci, g) in [(0, 3, 1), (0, 4, 7), (1, 3, 2)] {
            rooms.leave(b"r", lp, ci, g);
        }
        assert_eq!(rooms.members(b"r"), 0);
        assert!(rooms.publish(b"r", 1, &frames).is_empty());
        assert!(rx1.try_recv().is_err());
        assert_eq!(rooms.members(b"other"), 1);
    }

    #[test]
    fn a_full_inbox_hands_its_members_over_to_be_closed_once() {
        // An inbox of 10 bytes: the first 8-byte publish is queued, the second would
        // pass the limit and asks instead for the members to be closed, the third
        // sends nothing more until the loop has read its inbox.
        let rooms = Rooms::with_inbox_limit(10);
        let poll = mio::Poll::new().unwrap();
        let (tx1, rx1) = std::sync::mpsc::channel();
        let waker = Arc::new(Waker::new(poll.registry(), mio::Token(0)).unwrap());
        let backlog = rooms.add_loop(1, tx1, waker);
        rooms.join(b"r", 1, 5, 1);
        let frames: Arc<[u8]> = Arc::from(&b"12345678"[..]);
        for _ in 0..3 {
            rooms.publish(b"r", 0, &frames);
        }
        let got: Vec<Delivery> = rx1.try_iter().collect();
        assert_eq!(got.len(), 2);
        assert!(!got[0].overflow && got[0].frames.len() == 8);
        assert!(got[1].overflow && got[1].to == vec![(5, 1)]);
        for d in &got {
            backlog.took(d);
        }
        // Read: room again.
        rooms.publish(b"r", 0, &frames);
        let d = rx1.try_recv().unwrap();
        assert!(!d.overflow);
    }
}
