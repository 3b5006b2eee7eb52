//! Keeps a port's reuse-port group the server's own: a classic BPF program attached
//! to the group picks which of the server's sockets takes each connection or
//! datagram, so a socket another process adds to the group later (one that binds the
//! same address with `SO_REUSEPORT`, under the same user) is never chosen.
//!
//! The kernel runs the group's program for each new connection (TCP) or datagram
//! (UDP) and takes its result as an index into the group's sockets, in the order they
//! joined. The server's own sockets join first — every thread's, before it serves —
//! so indices below the server's count are its own, and each program ends with
//! `mod count`. TCP takes a random index (the default spreads by a hash, which is no
//! better on a handful of sockets); UDP must keep each client's datagrams on one
//! socket, so its index is the source address and port, read from the IP and UDP
//! headers (IPv4 without options, IPv6 without extension headers; anything else
//! loads nothing and takes index 0, still one of the server's).

use std::io;
use std::os::fd::AsFd;

use nix::sys::socket::{setsockopt, sockopt::AttachReusePortCbpf};

/// Classic BPF opcodes (linux/filter.h).
const LD_W_ABS: u16 = 0x20;
const LD_H_ABS: u16 = 0x28;
const TAX: u16 = 0x07;
const ADD_X: u16 = 0x0c;
const MOD_K: u16 = 0x94;
const RET_A: u16 = 0x16;
/// Where the ancillary loads begin, and the random number's.
const SKF_AD_OFF: u32 = (-0x1000i32) as u32;
const SKF_AD_RANDOM: u32 = 56;
/// Loads relative to the network (IP) header.
const SKF_NET_OFF: u32 = (-0x10_0000i32) as u32;

fn op(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// What a group carries, and so how its program picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// TCP listeners: any of them.
    Stream,
    /// UDP sockets of this family (`true`: IPv6): by the client's address and port.
    Datagram { v6: bool },
}

/// The program choosing among `count` sockets for `group`.
fn program(group: Group, count: u32) -> Vec<libc::sock_filter> {
    let count = count.max(1);
    match group {
        Group::Stream => vec![
            op(LD_W_ABS, SKF_AD_OFF.wrapping_add(SKF_AD_RANDOM)),
            op(MOD_K, count),
            op(RET_A, 0),
        ],
        Group::Datagram { v6 } => {
            // The source port (after the IP header) plus the source address's last
            // 32 bits.
            let (port, addr) = if v6 { (40, 20) } else { (20, 12) };
            vec![
                op(LD_H_ABS, SKF_NET_OFF.wrapping_add(port)),
                op(TAX, 0),
                op(LD_W_ABS, SKF_NET_OFF.wrapping_add(addr)),
                op(ADD_X, 0),
                op(MOD_K, count),
                op(RET_A, 0),
            ]
        }
    }
}

/// Attaches to the group `socket` belongs to a program that picks only among its
/// first `count` sockets (the server's own, which joined first).
pub(crate) fn own_group(socket: &impl AsFd, group: Group, count: usize) -> io::Result<()> {
    let count = u32::try_from(count).unwrap_or(u32::MAX);
    let mut filter = program(group, count);
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    setsockopt(socket, AttachReusePortCbpf, &prog).map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("cannot keep the port's reuse-port group to the server (SO_ATTACH_REUSEPORT_CBPF): {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_end_in_the_servers_count() {
        for g in [
            Group::Stream,
            Group::Datagram { v6: false },
            Group::Datagram { v6: true },
        ] {
            let p = program(g, 3);
            assert_eq!(p[p.len() - 2].code, MOD_K);
            assert_eq!(p[p.len() - 2].k, 3);
            assert_eq!(p.last().map(|o| o.code), Some(RET_A));
        }
        assert_eq!(program(Group::Stream, 0)[1].k, 1, "never mod 0");
    }
}
