//! Arrival stamps through the ring: a socket asked to stamp arrivals
//! (`SO_TIMESTAMPNS`) is received with a multishot `recvmsg` instead of a `recv`, and
//! each buffer the kernel fills then holds a header, the control messages (the
//! stamp of the last segment received, as `recvmsg(2)` gives it) and the payload.
//! What the open model needs to read a response late — after a nap — and still time
//! it by when it came.

use std::time::Duration;

use io_uring::types::RecvMsgOut;

use crate::CONTROL;

/// The header every stamped receive is armed with: no name, [`CONTROL`] bytes of
/// control messages (the pointers are unused: the kernel places both in the
/// provided buffer).
pub(crate) fn header() -> libc::msghdr {
    // SAFETY: an all-zero msghdr is valid (null pointers, zero lengths).
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_controllen = CONTROL as _;
    h
}

/// A stamped receive's buffer: its payload (empty at the end of the stream) and
/// the arrival stamp among its control messages, if any; `None` when the buffer is
/// not laid out as asked.
pub(crate) fn parse<'b>(
    buf: &'b [u8],
    header: &libc::msghdr,
) -> Option<(&'b [u8], Option<Duration>)> {
    let out = RecvMsgOut::parse(buf, header).ok()?;
    let payload = out.payload_data();
    if out.is_payload_truncated() || payload.len() != out.incoming_payload_len() as usize {
        return None;
    }
    // The same bytes, borrowed from the buffer rather than from `out`.
    let at = payload.as_ptr() as usize - buf.as_ptr() as usize;
    Some((&buf[at..at + payload.len()], stamp(out.control_data())))
}

/// The `SCM_TIMESTAMPNS` message's time among control messages laid out as
/// `recvmsg(2)` lays them out.
fn stamp(control: &[u8]) -> Option<Duration> {
    let head = std::mem::size_of::<libc::cmsghdr>();
    let align = std::mem::size_of::<usize>();
    let mut at = 0;
    let mut found = None;
    while at + head <= control.len() {
        // SAFETY: `head` bytes from `at` lie within the slice (checked above);
        // `read_unaligned` copies them out whatever their alignment.
        let h: libc::cmsghdr = unsafe {
            control
                .as_ptr()
                .add(at)
                .cast::<libc::cmsghdr>()
                .read_unaligned()
        };
        // size_t with glibc, socklen_t with other C libraries.
        #[allow(clippy::unnecessary_cast)]
        let len = h.cmsg_len as usize;
        if len < head || at + len > control.len() {
            break;
        }
        let data = head.next_multiple_of(align);
        if h.cmsg_level == libc::SOL_SOCKET
            && h.cmsg_type == libc::SCM_TIMESTAMPNS
            && len >= data + std::mem::size_of::<libc::timespec>()
        {
            // SAFETY: the timespec lies within this message (checked just above),
            // itself within the slice.
            let ts: libc::timespec = unsafe {
                control
                    .as_ptr()
                    .add(at + data)
                    .cast::<libc::timespec>()
                    .read_unaligned()
            };
            if ts.tv_sec > 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                found = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
        }
        at += len.next_multiple_of(align);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A control buffer holding one message of `level`/`kind` with `ts` as its data.
    fn message(level: i32, kind: i32, ts: libc::timespec) -> Vec<u8> {
        let head = std::mem::size_of::<libc::cmsghdr>();
        let len = head + std::mem::size_of::<libc::timespec>();
        let mut b = vec![0u8; CONTROL];
        // SAFETY: the buffer holds a header and a timespec past it.
        unsafe {
            let h = b.as_mut_ptr().cast::<libc::cmsghdr>();
            let mut c: libc::cmsghdr = std::mem::zeroed();
            c.cmsg_len = len as _;
            c.cmsg_level = level;
            c.cmsg_type = kind;
            h.write_unaligned(c);
            b.as_mut_ptr()
                .add(head)
                .cast::<libc::timespec>()
                .write_unaligned(ts);
        }
        b
    }

    #[test]
    fn the_stamp_is_read_from_its_message_and_nothing_else_is_taken_for_one() {
        let ts = libc::timespec {
            tv_sec: 1_700_000_000,
            tv_nsec: 123_456_789,
        };
        let b = message(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, ts);
        assert_eq!(stamp(&b), Some(Duration::new(1_700_000_000, 123_456_789)));
        // Another message, a short one, a length past the buffer, nothing at all.
        assert_eq!(
            stamp(&message(libc::SOL_SOCKET, libc::SCM_RIGHTS, ts)),
            None
        );
        assert_eq!(stamp(&b[..20]), None);
        let mut long = b.clone();
        long[0] = 200;
        assert_eq!(stamp(&long), None);
        assert_eq!(stamp(&[]), None);
        // A nonsensical time is no stamp.
        let bad = libc::timespec {
            tv_sec: 5,
            tv_nsec: 2_000_000_000,
        };
        assert_eq!(
            stamp(&message(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, bad)),
            None
        );
    }
}
