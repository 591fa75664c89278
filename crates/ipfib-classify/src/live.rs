//! `ipfib classify --interface IF`: live capture on Linux, through an
//! AF_PACKET socket with a TPACKET_V3 receive ring shared with the kernel.
//!
//! The ring is 64 blocks of 1 MiB. The kernel fills one block at a time
//! with as many frames as fit (each a `tpacket3_hdr`, then the frame at
//! `tp_mac`, the next header `tp_next_offset` on) and hands the block over
//! by setting its `block_status` to `TP_STATUS_USER` when it is full or
//! 50 ms after its first frame (`tp_retire_blk_tov`), whichever comes
//! first. We walk the blocks in ring order, give each frame to
//! [`Classifier::frame`](super::count::Classifier::frame), and hand the block back with `TP_STATUS_KERNEL`.
//! One `poll` per block the kernel has not yet retired, none per frame:
//! at a million packets a second that is about one system call per 1 MiB
//! of frames. When every block is ours the kernel drops, and counts it:
//! `PACKET_STATISTICS` at the end gives the packets seen and dropped.
//!
//! `block_status` is the only word both sides write. The kernel writes the
//! frames, then (after a write barrier) `TP_STATUS_USER`; we load it with
//! `Acquire`, so the frames we then read are the ones the kernel wrote.
//! We store `TP_STATUS_KERNEL` with `Release`, so all our reads of the
//! block happen before the kernel can see it free and write over it.
//!
//! `poll` waits at most 100 ms, and every wake-up with no block to read
//! tells the counter the time ([`Classifier::advance`](super::count::Classifier::advance), 200 ms behind the
//! clock so frames of a second still in a block the kernel has not
//! retired count in that second), so a window closes, its alerts and
//! `--windows` line go out, within about 300 ms of its end even when
//! traffic stops.
//!
//! All of this module's `unsafe` (system calls, the mapping, the shared
//! status word) is in `sys`; frames are read from the block as a byte
//! slice with bounds-checked indexing, so a header the kernel never
//! writes (a bad offset) ends the block's walk instead of reading out of
//! bounds.

use std::time::Duration;

/// What `--interface` asks for.
pub struct Options {
    pub interface: String,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many frames.
    pub count: Option<u64>,
}

/// Why a live capture stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum Stop {
    Count,
    Duration,
    Signal,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Count => "count",
            Stop::Duration => "duration",
            Stop::Signal => "signal",
        }
    }
}

/// A finished live capture.
#[derive(Clone, Debug)]
pub struct Stats {
    /// The link type the frames were decoded as (LINKTYPE_ value).
    pub link: u16,
    /// Packets the kernel saw on the interface for this socket, dropped
    /// ones included.
    pub kernel_packets: u64,
    /// Packets the kernel dropped because the ring was full.
    pub kernel_drops: u64,
    pub stopped_by: Stop,
}

#[cfg(not(target_os = "linux"))]
pub fn capture<C: crate::fan::Count + ?Sized>(_c: &mut C, opts: &Options) -> Result<Stats, String> {
    Err(format!(
        "--interface {}: live capture is only available on Linux (AF_PACKET); \
         capture with tcpdump and give the file to --pcap",
        opts.interface
    ))
}

#[cfg(target_os = "linux")]
pub use linux::capture;

#[cfg(target_os = "linux")]
mod linux {
    use super::sys::{self, Ring};
    use super::{Options, Stats, Stop};
    use crate::capture::{LINK_ETHERNET, LINK_RAW};
    use crate::fan::Count;
    use std::mem::{offset_of, size_of};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    /// Ring geometry: 64 blocks of 1 MiB (64 MiB: 460,000 frames of 60
    /// bytes, 144 bytes of ring each with header and alignment, before the
    /// kernel drops); `tp_frame_size` only sets the kernel's frame count.
    const BLOCK_SIZE: u32 = 1 << 20;
    const BLOCK_NR: u32 = 64;
    const FRAME_SIZE: u32 = 2048;
    /// A block is handed over at most this long after its first frame.
    const RETIRE_BLK_TOV_MS: u32 = 50;
    /// The longest wait for a block, so stops and windows are on time.
    const POLL_MS: u64 = 100;
    /// How far behind the clock windows are closed when idle.
    const GRACE_NS: u64 = 4 * RETIRE_BLK_TOV_MS as u64 * 1_000_000;

    // Where the kernel's headers keep what we read, from the structs as
    // the libc crate declares them (`if_packet.h`).
    const BLK_HDR: usize = offset_of!(libc::tpacket_block_desc, hdr);
    const BLK_NUM_PKTS: usize = BLK_HDR + offset_of!(libc::tpacket_hdr_v1, num_pkts);
    const BLK_FIRST_PKT: usize = BLK_HDR + offset_of!(libc::tpacket_hdr_v1, offset_to_first_pkt);
    const TP_NEXT_OFFSET: usize = offset_of!(libc::tpacket3_hdr, tp_next_offset);
    const TP_SEC: usize = offset_of!(libc::tpacket3_hdr, tp_sec);
    const TP_NSEC: usize = offset_of!(libc::tpacket3_hdr, tp_nsec);
    const TP_SNAPLEN: usize = offset_of!(libc::tpacket3_hdr, tp_snaplen);
    const TP_LEN: usize = offset_of!(libc::tpacket3_hdr, tp_len);
    const TP_STATUS: usize = offset_of!(libc::tpacket3_hdr, tp_status);
    const TP_MAC: usize = offset_of!(libc::tpacket3_hdr, tp_mac);
    /// The `sockaddr_ll` the kernel writes after the header (at
    /// TPACKET_ALIGN(sizeof(tpacket3_hdr))), and its `sll_pkttype` byte.
    const SLL_PKTTYPE: usize = size_of::<libc::tpacket3_hdr>().div_ceil(libc::TPACKET_ALIGNMENT)
        * libc::TPACKET_ALIGNMENT
        + offset_of!(libc::sockaddr_ll, sll_pkttype);

    /// How the interface's frames start, from its ARPHRD_ type.
    struct Link {
        linktype: u16,
        /// Loopback: every packet passes twice, out and back in; count
        /// it once.
        skip_outgoing: bool,
    }

    fn link_of(interface: &str, arphrd: u16) -> Result<Link, String> {
        const ARPHRD_PPP: u16 = 512;
        const ARPHRD_RAWIP: u16 = 519;
        let (linktype, skip_outgoing) = match arphrd {
            libc::ARPHRD_ETHER => (LINK_ETHERNET, false),
            // Loopback frames carry a zeroed Ethernet header.
            libc::ARPHRD_LOOPBACK => (LINK_ETHERNET, true),
            // tun, WireGuard, PPP, raw-IP modems: the frame is the IP packet.
            libc::ARPHRD_NONE | ARPHRD_PPP | ARPHRD_RAWIP => (LINK_RAW, false),
            t => {
                return Err(format!(
                    "{interface}: link type ARPHRD {t} is not supported \
                     (Ethernet, loopback and raw IP interfaces are)"
                ))
            }
        };
        Ok(Link {
            linktype,
            skip_outgoing,
        })
    }

    fn now_ns() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    fn u32_at(b: &[u8], at: usize) -> Option<u32> {
        let v = b.get(at..at.checked_add(4)?)?;
        Some(u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
    }

    fn u16_at(b: &[u8], at: usize) -> Option<u16> {
        let v = b.get(at..at.checked_add(2)?)?;
        Some(u16::from_ne_bytes([v[0], v[1]]))
    }

    /// Count the frames of one block, at most `budget` of them; how many
    /// were counted.
    fn walk_block<C: Count + ?Sized>(c: &mut C, link: &Link, block: &[u8], budget: u64) -> u64 {
        let (Some(num), Some(first)) = (u32_at(block, BLK_NUM_PKTS), u32_at(block, BLK_FIRST_PKT))
        else {
            return 0;
        };
        // `at` stays below the block's length (1 MiB), so the header
        // offsets added to it cannot overflow.
        let mut at = first as usize;
        let mut counted = 0;
        for _ in 0..num {
            if counted == budget || at >= block.len() {
                break;
            }
            let (Some(sec), Some(nsec), Some(snap), Some(len), Some(status), Some(mac)) = (
                u32_at(block, at + TP_SEC),
                u32_at(block, at + TP_NSEC),
                u32_at(block, at + TP_SNAPLEN),
                u32_at(block, at + TP_LEN),
                u32_at(block, at + TP_STATUS),
                u16_at(block, at + TP_MAC),
            ) else {
                break;
            };
            let start = at + mac as usize;
            let Some(data) = block.get(start..start.saturating_add(snap as usize)) else {
                break;
            };
            let outgoing = block.get(at + SLL_PKTTYPE) == Some(&libc::PACKET_OUTGOING);
            if !(link.skip_outgoing && outgoing) {
                // The kernel hands over 802.1Q frames untagged, the tag
                // in the header: count the 4 bytes the wire carried.
                let tag = if status & libc::TP_STATUS_VLAN_VALID != 0 {
                    4
                } else {
                    0
                };
                let ts = u64::from(sec) * 1_000_000_000 + u64::from(nsec);
                c.frame(ts, len.saturating_add(tag), link.linktype, data);
                counted += 1;
            }
            match u32_at(block, at + TP_NEXT_OFFSET) {
                Some(0) | None => break,
                Some(next) => at = at.saturating_add(next as usize),
            }
        }
        counted
    }

    pub fn capture<C: Count + ?Sized>(c: &mut C, opts: &Options) -> Result<Stats, String> {
        let name = &opts.interface;
        let mut ring = Ring::open(
            name,
            sys::RingSize {
                block_size: BLOCK_SIZE,
                block_nr: BLOCK_NR,
                frame_size: FRAME_SIZE,
                retire_blk_tov_ms: RETIRE_BLK_TOV_MS,
            },
        )?;
        let link = link_of(name, ring.arphrd)?;
        let signals = sys::StopSignals::install()?;
        eprintln!(
            "ipfib: capturing on {name} (AF_PACKET, TPACKET_V3 ring of {BLOCK_NR} x {} MiB); \
             stop with Ctrl-C",
            BLOCK_SIZE >> 20
        );
        // Past what `Instant` holds: no deadline.
        let deadline = opts.duration.and_then(|d| Instant::now().checked_add(d));
        let limit = opts.count.unwrap_or(u64::MAX);
        let mut counted = 0u64;
        let mut next = 0usize;
        let stopped_by = loop {
            if counted >= limit {
                break Stop::Count;
            }
            if signals.raised() {
                break Stop::Signal;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                break Stop::Duration;
            }
            if let Some(block) = ring.user_block(next) {
                counted += walk_block(c, &link, block, limit - counted);
                ring.release(next);
                next = (next + 1) % BLOCK_NR as usize;
                continue;
            }
            c.advance(now_ns().saturating_sub(GRACE_NS));
            let wait = deadline.map_or(Duration::from_millis(POLL_MS), |d| {
                d.saturating_duration_since(now)
                    .min(Duration::from_millis(POLL_MS))
            });
            if let Err(e) = ring.poll(wait) {
                return Err(format!("{name}: {e}"));
            }
        };
        drop(signals);
        let (kernel_packets, kernel_drops) =
            ring.statistics().map_err(|e| format!("{name}: {e}"))?;
        Ok(Stats {
            link: link.linktype,
            kernel_packets,
            kernel_drops,
            stopped_by,
        })
    }
}

/// The system calls, the shared mapping and the signal handler: every
/// `unsafe` of the live capture.
#[cfg(target_os = "linux")]
mod sys {
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::ptr::NonNull;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::Duration;

    /// `tpacket_req3`'s geometry.
    pub struct RingSize {
        pub block_size: u32,
        pub block_nr: u32,
        pub frame_size: u32,
        pub retire_blk_tov_ms: u32,
    }

    /// An AF_PACKET socket bound to one interface and its mapped RX ring.
    pub struct Ring {
        fd: OwnedFd,
        map: NonNull<u8>,
        block_size: usize,
        block_nr: usize,
        /// The interface's ARPHRD_ type.
        pub arphrd: u16,
    }

    /// `block_status` within a block (in the tpacket_hdr_v1 that follows
    /// tpacket_block_desc's version and offset_to_priv).
    const BLOCK_STATUS: usize = std::mem::offset_of!(libc::tpacket_block_desc, hdr)
        + std::mem::offset_of!(libc::tpacket_hdr_v1, block_status);

    fn setsockopt<T>(
        fd: &OwnedFd,
        level: libc::c_int,
        name: libc::c_int,
        value: &T,
    ) -> io::Result<()> {
        // SAFETY: `value` is a live, initialised `T` and the length passed
        // is its size, so the kernel reads only its bytes; `fd` is an open
        // socket owned by the caller for the call's duration.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                level,
                name,
                (value as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    impl Ring {
        pub fn open(interface: &str, size: RingSize) -> Result<Ring, String> {
            let no_such = || format!("{interface}: no such interface");
            if interface.is_empty() || interface.len() >= libc::IFNAMSIZ {
                return Err(no_such());
            }
            let cname = CString::new(interface).map_err(|_| no_such())?;
            // SAFETY: `cname` is a NUL-terminated string that outlives the
            // call; if_nametoindex only reads it.
            let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
            if ifindex == 0 {
                return Err(no_such());
            }
            // Protocol 0: the socket receives nothing until it is bound to
            // the interface below, so no other interface's frame gets in.
            // SAFETY: plain system call with constant arguments.
            let raw =
                unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
            if raw < 0 {
                let e = io::Error::last_os_error();
                return Err(match e.raw_os_error() {
                    Some(libc::EPERM) | Some(libc::EACCES) => {
                        "AF_PACKET needs root (CAP_NET_RAW)".to_string()
                    }
                    _ => format!("socket(AF_PACKET): {e}"),
                });
            }
            // SAFETY: `raw` is a socket just opened and owned by nobody
            // else; OwnedFd closes it once.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let version = libc::tpacket_versions::TPACKET_V3 as libc::c_int;
            setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &version)
                .map_err(|e| format!("{interface}: PACKET_VERSION TPACKET_V3: {e}"))?;
            let req = libc::tpacket_req3 {
                tp_block_size: size.block_size,
                tp_block_nr: size.block_nr,
                tp_frame_size: size.frame_size,
                tp_frame_nr: size.block_size / size.frame_size * size.block_nr,
                tp_retire_blk_tov: size.retire_blk_tov_ms,
                tp_sizeof_priv: 0,
                tp_feature_req_word: 0,
            };
            setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req).map_err(|e| {
                format!(
                    "{interface}: PACKET_RX_RING of {} x {} bytes: {e}",
                    size.block_nr, size.block_size
                )
            })?;
            let block_size = size.block_size as usize;
            let block_nr = size.block_nr as usize;
            let len = block_size * block_nr;
            // SAFETY: maps the ring the kernel just allocated for this
            // socket (offset 0, the length it was given); the result is
            // checked for MAP_FAILED before use.
            let map = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    // Populated now, so the first lap of the ring takes
                    // no page faults while traffic is coming in.
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if map == libc::MAP_FAILED {
                return Err(format!(
                    "{interface}: mmap of the {len}-byte ring: {}",
                    io::Error::last_os_error()
                ));
            }
            let Some(map) = NonNull::new(map.cast::<u8>()) else {
                return Err(format!("{interface}: mmap returned no address"));
            };
            // From here on Drop unmaps.
            let mut ring = Ring {
                fd,
                map,
                block_size,
                block_nr,
                arphrd: 0,
            };
            // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
            let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            sll.sll_ifindex = ifindex as libc::c_int;
            let sll_len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `sll` is an initialised sockaddr_ll and `sll_len` its
            // size; the socket is open.
            let r = unsafe {
                libc::bind(
                    ring.fd.as_raw_fd(),
                    (&sll as *const libc::sockaddr_ll).cast(),
                    sll_len,
                )
            };
            if r != 0 {
                let e = io::Error::last_os_error();
                return Err(match e.raw_os_error() {
                    Some(libc::ENODEV) => no_such(),
                    _ => format!("{interface}: bind: {e}"),
                });
            }
            // The bound address names the device's hardware type.
            // SAFETY: as above, all-zero is a valid sockaddr_ll.
            let mut bound: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut bound_len = sll_len;
            // SAFETY: `bound` is writable for `bound_len` bytes, the
            // length the kernel writes at most, and `bound_len` is a live
            // socklen_t it updates.
            let r = unsafe {
                libc::getsockname(
                    ring.fd.as_raw_fd(),
                    (&mut bound as *mut libc::sockaddr_ll).cast(),
                    &mut bound_len,
                )
            };
            if r != 0 {
                return Err(format!(
                    "{interface}: getsockname: {}",
                    io::Error::last_os_error()
                ));
            }
            ring.arphrd = bound.sll_hatype;
            // Promiscuous while the socket is open (the kernel undoes it
            // when the socket closes): a mirror port's frames are not
            // addressed to this host.
            let mreq = libc::packet_mreq {
                mr_ifindex: ifindex as libc::c_int,
                mr_type: libc::PACKET_MR_PROMISC as u16,
                mr_alen: 0,
                mr_address: [0; 8],
            };
            setsockopt(
                &ring.fd,
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                &mreq,
            )
            .map_err(|e| format!("{interface}: promiscuous mode: {e}"))?;
            Ok(ring)
        }

        fn status(&self, block: usize) -> &AtomicU32 {
            debug_assert!(block < self.block_nr);
            // SAFETY: `block < block_nr` (callers take it modulo the ring),
            // so the word lies inside the mapping, which lives as long as
            // `self`; blocks start at multiples of the page-sized block
            // size, so it is 4-byte aligned. The kernel accesses it
            // concurrently, which is why it is only ever read and written
            // as an atomic here.
            unsafe {
                AtomicU32::from_ptr(
                    self.map
                        .as_ptr()
                        .add(block * self.block_size + BLOCK_STATUS)
                        .cast::<u32>(),
                )
            }
        }

        /// Block `block`'s bytes when the kernel has handed it over
        /// (`TP_STATUS_USER`), else `None`.
        pub fn user_block(&self, block: usize) -> Option<&[u8]> {
            let block = block % self.block_nr;
            // Acquire: pairs with the kernel's write barrier before it sets
            // TP_STATUS_USER, so the frames read below are complete.
            if self.status(block).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return None;
            }
            // SAFETY: the block lies inside the mapping (block < block_nr)
            // and the mapping outlives the borrow of `self`. With the
            // status TP_STATUS_USER the kernel does not write the block
            // until `release`, which takes `&mut self` and so cannot run
            // while this slice is alive.
            Some(unsafe {
                std::slice::from_raw_parts(
                    self.map.as_ptr().add(block * self.block_size),
                    self.block_size,
                )
            })
        }

        /// Hand block `block` back to the kernel.
        pub fn release(&mut self, block: usize) {
            let block = block % self.block_nr;
            // Release: every read of the block happens before the kernel
            // can see it free and write over it.
            self.status(block)
                .store(libc::TP_STATUS_KERNEL, Ordering::Release);
        }

        /// Wait until a block may be ready or `timeout` passes. A signal
        /// ends the wait early (the caller checks its flag); a socket
        /// error (the interface went away) is returned.
        pub fn poll(&self, timeout: Duration) -> io::Result<()> {
            let mut p = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
            // SAFETY: one live, initialised pollfd, count 1.
            let r = unsafe { libc::poll(&mut p, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted {
                    Ok(())
                } else {
                    Err(e)
                };
            }
            if p.revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
                let mut err: libc::c_int = 0;
                let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
                // SAFETY: `err` is a writable c_int and `len` its size.
                let r = unsafe {
                    libc::getsockopt(
                        self.fd.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_ERROR,
                        (&mut err as *mut libc::c_int).cast(),
                        &mut len,
                    )
                };
                if r == 0 && err != 0 {
                    return Err(io::Error::from_raw_os_error(err));
                }
            }
            Ok(())
        }

        /// The kernel's counters since the socket opened: (packets seen,
        /// dropped included; packets dropped for want of a free block).
        pub fn statistics(&self) -> io::Result<(u64, u64)> {
            let mut st = libc::tpacket_stats_v3 {
                tp_packets: 0,
                tp_drops: 0,
                tp_freeze_q_cnt: 0,
            };
            let mut len = std::mem::size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
            // SAFETY: `st` is a writable tpacket_stats_v3 and `len` its
            // size, the most the kernel writes for a TPACKET_V3 socket.
            let r = unsafe {
                libc::getsockopt(
                    self.fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    libc::PACKET_STATISTICS,
                    (&mut st as *mut libc::tpacket_stats_v3).cast(),
                    &mut len,
                )
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok((u64::from(st.tp_packets), u64::from(st.tp_drops)))
        }
    }

    impl Drop for Ring {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly the mapping made in `open`; no slice
            // of it outlives `self` (they borrow it). The socket closes
            // after, with the OwnedFd.
            unsafe {
                libc::munmap(self.map.as_ptr().cast(), self.block_size * self.block_nr);
            }
        }
    }

    /// Set by SIGINT or SIGTERM while a capture runs.
    static STOP: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_stop(_signal: libc::c_int) {
        // A lock-free atomic store: async-signal-safe.
        STOP.store(true, Ordering::Relaxed);
    }

    /// SIGINT and SIGTERM set a flag instead of killing the process, so the
    /// capture stops and reports; a second one kills (SA_RESETHAND). The
    /// previous actions are restored on drop.
    pub struct StopSignals {
        old: Vec<(libc::c_int, libc::sigaction)>,
    }

    impl StopSignals {
        pub fn install() -> Result<StopSignals, String> {
            STOP.store(false, Ordering::Relaxed);
            let mut s = StopSignals { old: Vec::new() };
            for sig in [libc::SIGINT, libc::SIGTERM] {
                // SAFETY: sigaction is plain data; all-zero is a valid value
                // (empty mask, no flags) that the fields below complete.
                let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
                act.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
                act.sa_flags = libc::SA_RESETHAND;
                // SAFETY: as above.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                // SAFETY: both pointers are to live sigaction values; the
                // handler only stores to an atomic, which is
                // async-signal-safe.
                if unsafe { libc::sigaction(sig, &act, &mut old) } != 0 {
                    return Err(format!(
                        "installing the signal handler: {}",
                        io::Error::last_os_error()
                    ));
                }
                s.old.push((sig, old));
            }
            Ok(s)
        }

        pub fn raised(&self) -> bool {
            STOP.load(Ordering::Relaxed)
        }
    }

    impl Drop for StopSignals {
        fn drop(&mut self) {
            for (sig, old) in &self.old {
                // SAFETY: restores the action sigaction returned for `sig`.
                unsafe {
                    libc::sigaction(*sig, old, std::ptr::null_mut());
                }
            }
        }
    }
}
