//! The provided buffer ring a ring's multishot receives fill: the entries the kernel
//! takes buffers from, the buffers themselves, and giving them back once read.

use std::alloc::Layout;
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::{types, IoUring};

use crate::{BUFFERS, BUFFER_SIZE, GROUP};

/// The provided buffer ring: its entries (shared with the kernel) and the buffers.
pub(crate) struct Buffers {
    ring: *mut types::BufRingEntry,
    data: *mut u8,
    tail: u16,
    /// Whether the kernel may still use them (then they are leaked, never freed).
    pub(crate) leak: bool,
}

impl Buffers {
    fn layouts() -> (Layout, Layout) {
        let ring = Layout::from_size_align(
            usize::from(BUFFERS) * std::mem::size_of::<types::BufRingEntry>(),
            4096,
        )
        .expect("a page-aligned layout");
        let data = Layout::from_size_align(usize::from(BUFFERS) * BUFFER_SIZE, 4096)
            .expect("a page-aligned layout");
        (ring, data)
    }

    pub(crate) fn new(ring: &IoUring) -> io::Result<Buffers> {
        let (rl, dl) = Buffers::layouts();
        // SAFETY: both layouts have a non-zero size.
        let (entries, data) = unsafe { (std::alloc::alloc_zeroed(rl), std::alloc::alloc(dl)) };
        if entries.is_null() || data.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let mut b = Buffers {
            ring: entries.cast(),
            data,
            tail: 0,
            leak: false,
        };
        // SAFETY: the entries are page-aligned, zeroed, `BUFFERS` long, and stay
        // allocated until the ring is gone (this value is dropped after it).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(entries as u64, BUFFERS, GROUP, 0)?
        };
        for bid in 0..BUFFERS {
            b.give_back(bid);
        }
        b.publish();
        Ok(b)
    }

    /// Puts buffer `bid` back in the ring (seen by the kernel at [`Buffers::publish`]).
    pub(crate) fn give_back(&mut self, bid: u16) {
        let i = usize::from(self.tail & (BUFFERS - 1));
        // SAFETY: `i` < BUFFERS: an entry of the ring; the kernel reads entries only
        // up to the published tail, and this one is past it until `publish`.
        let e = unsafe { &mut *self.ring.add(i) };
        // SAFETY: `bid` < BUFFERS, so the buffer lies within `data`.
        e.set_addr(unsafe { self.data.add(usize::from(bid) * BUFFER_SIZE) } as u64);
        e.set_len(BUFFER_SIZE as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Lets the kernel see the buffers given back.
    pub(crate) fn publish(&mut self) {
        // SAFETY: `ring` is the first entry of the registered ring; its tail field is
        // a u16 the kernel reads, written here with release order as the ABI asks.
        unsafe {
            let tail = types::BufRingEntry::tail(self.ring).cast_mut();
            (*tail.cast::<AtomicU16>()).store(self.tail, Ordering::Release);
        }
    }

    /// The first `len` bytes of buffer `bid`, which the kernel has filled and handed back.
    pub(crate) fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let bid = usize::from(bid) % usize::from(BUFFERS);
        // SAFETY: the buffer lies within `data`; the kernel is done with it (its
        // completion was reaped) until it is given back.
        unsafe {
            std::slice::from_raw_parts(self.data.add(bid * BUFFER_SIZE), len.min(BUFFER_SIZE))
        }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        if self.leak {
            return;
        }
        let (rl, dl) = Buffers::layouts();
        // SAFETY: allocated with these layouts in `new`; the ring that could use them
        // is gone and no operation is in flight (`leak` is false).
        unsafe {
            std::alloc::dealloc(self.ring.cast(), rl);
            std::alloc::dealloc(self.data, dl);
        }
    }
}
