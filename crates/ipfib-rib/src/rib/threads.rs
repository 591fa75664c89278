//! The RIB's two threads: the FIB thread, which keeps the prefix-id FIB
//! in step with the prefixes that have routes and publishes it, and the
//! sweeper, which removes the routes of peers that went down and gives
//! memory back.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipfib::fib::Fib;
use ipfib::prefix::AnyPrefix;

use super::{lock, Inner, Rib, Routes};

/// What the FIB thread is told.
pub(super) enum FibEvent {
    /// Make the FIB agree with `routes[id]` (present iff it has entries).
    Check(AnyPrefix, u32),
    /// Publish everything so far, then answer.
    Sync(Sender<()>),
    /// Check every prefix (after a bulk load, see `Rib::bulk`).
    Rescan,
}

impl Rib {
    /// Wait until every prefix change made before this call is visible to
    /// longest-prefix lookups (tests, `--mrt` bootstrap).
    pub fn sync(&self) {
        let (tx, rx) = mpsc::channel();
        self.send_fib(FibEvent::Sync(tx));
        let _ = rx.recv_timeout(Duration::from_secs(60));
    }

    /// Remove the entries of every peer that is down and not yet swept;
    /// (peers swept, routes removed). The sweeper thread calls this after
    /// each Peer Down.
    // Hidden: not API; tests and benchmarks call it to sweep now rather
    // than wait for the thread.
    #[doc(hidden)]
    pub fn sweep(&self) -> (usize, u64) {
        sweep(&self.inner, &|ev| self.send_fib(ev))
    }
}

/// How long the FIB thread sleeps between drains while changes flow: a
/// writer's send then finds the thread asleep and wakes nobody (a wake-up
/// per new prefix would cost writers a system call each).
const FIB_POLL: Duration = Duration::from_micros(250);
/// Idle drains before the FIB thread blocks on its channel again.
const FIB_IDLE_ROUNDS: u32 = 8;

/// The FIB thread: applies prefix-set changes, publishes at most every
/// `max_delay` (plus one poll), answers `Sync`.
pub(super) fn fib_thread(inner: Arc<Inner>, shared: Arc<Mutex<Fib<u32>>>, rx: Receiver<FibEvent>) {
    let mut waiting: Vec<Sender<()>> = Vec::new();
    let mut idle_rounds = FIB_IDLE_ROUNDS;
    loop {
        let mut batch = Vec::new();
        let pending = lock(&shared).pending();
        if idle_rounds >= FIB_IDLE_ROUNDS && pending == 0 {
            // Nothing flowing: block until the next change.
            match rx.recv() {
                Ok(ev) => push_event(&inner, ev, &mut batch, &mut waiting),
                Err(_) => return,
            }
        } else {
            std::thread::sleep(FIB_POLL);
        }
        loop {
            match rx.try_recv() {
                Ok(ev) => push_event(&inner, ev, &mut batch, &mut waiting),
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        }
        idle_rounds = if batch.is_empty() && waiting.is_empty() {
            idle_rounds.saturating_add(1)
        } else {
            0
        };
        // Held for the batch and its publication; ordered walks wait.
        let mut fib = lock(&shared);
        for (p, id) in batch {
            let Some(cur) = inner.slot(id).and_then(|s| s.load_full()) else {
                // Freed: its prefix left the FIB when it was.
                continue;
            };
            if cur.prefix != p {
                // Freed and recycled: the same.
                continue;
            }
            // Errors (a failed publication) leave changes pending; the
            // next publication retries them.
            if !cur.is_empty() {
                let _ = fib.insert(p, cur.tag);
            } else if inner.free_prefix(p, id, &cur) {
                // Removed after the slot emptied: a writer that adds the
                // prefix again gets a new id, whose event comes after
                // this one, so the FIB never loses the new mapping.
                let _ = fib.remove(&p);
            } else if inner.ids.pin().get(&p) == Some(&id) {
                // Not freed (a route arrived since, or the id is just
                // allocated): the slot's next change sends its own event;
                // until then the FIB follows the slot.
                let _ = fib.remove(&p);
            }
        }
        if !waiting.is_empty() {
            if fib.flush().is_ok() {
                for tx in waiting.drain(..) {
                    let _ = tx.send(());
                }
            }
        } else {
            let _ = fib.publish_if_due();
        }
        let c = &inner.counters;
        let published = fib.stats().publications;
        if c.fib_publications.swap(published, Ordering::Relaxed) != published {
            c.fib_bytes
                .store(fib.footprint_bytes() as u64, Ordering::Relaxed);
        }
    }
}

fn push_event(
    inner: &Inner,
    ev: FibEvent,
    batch: &mut Vec<(AnyPrefix, u32)>,
    waiting: &mut Vec<Sender<()>>,
) {
    match ev {
        FibEvent::Check(p, id) => batch.push((p, id)),
        FibEvent::Sync(tx) => waiting.push(tx),
        FibEvent::Rescan => {
            let n = inner.next_id.load(Ordering::Acquire);
            for id in 0..n {
                if let Some(r) = inner.slot(id).and_then(|s| s.load_full()) {
                    batch.push((r.prefix, id));
                }
            }
        }
    }
}

/// How often the sweeper wakes without a Peer Down: to free peers it
/// swept and to give free heap back to the OS.
const SWEEP_PERIOD: Duration = Duration::from_secs(1);

/// The sweeper: after each Peer Down, drops the dead peers' entries (one
/// walk of the prefixes for every peer that went down since the last walk),
/// tells the FIB thread about prefixes it left empty and frees the peers;
/// every [`SWEEP_PERIOD`], gives free heap memory back to the OS when
/// enough was freed since the last time.
pub(super) fn sweeper_thread(inner: Arc<Inner>, rx: Receiver<()>, fib_tx: Sender<FibEvent>) {
    lower_priority();
    let mut trim = crate::heap::Trimmer::default();
    loop {
        match rx.recv_timeout(SWEEP_PERIOD) {
            Ok(()) => while rx.try_recv().is_ok() {},
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        sweep(&inner, &|ev| {
            let _ = fib_tx.send(ev);
        });
        let freed = inner.counters.prefixes_freed.load(Ordering::Relaxed)
            + inner.counters.peers_freed.load(Ordering::Relaxed)
            + inner.attrs.purged() / crate::heap::PURGED_PER_FREE;
        if trim.due(freed) {
            inner.counters.heap_trims.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The sweeper runs at a low priority (nice 10, about a tenth of a core's
/// share against normal threads): on a busy machine a peer's memory comes
/// back later, but readers and the sessions' writers keep most of their
/// CPU time. Not the lowest priority (19): there a busy machine can starve
/// it for minutes, and the memory of downed peers with it.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions; setpriority only changes this
    // thread's nice value (PRIO_PROCESS with a thread id applies to that
    // thread on Linux) and reports failure through its return value,
    // which is ignored: the sweeper then runs at normal priority.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

fn sweep(inner: &Inner, send: &dyn Fn(FibEvent)) -> (usize, u64) {
    let _one_at_a_time = inner.sweeping.lock().unwrap_or_else(|e| e.into_inner());
    let dead: Vec<u32> = inner
        .peers
        .all()
        .filter(|p| !p.is_up() && !p.swept.load(Ordering::Acquire))
        .map(|p| p.id)
        .collect();
    if dead.is_empty() {
        // A sweep running beside another (the public call beside the
        // thread) may find the peers swept and not yet freed.
        for p in inner.peers.all() {
            if !p.is_up() && p.swept.load(Ordering::Acquire) && inner.peers.free(p.id) {
                inner.counters.peers_freed.fetch_add(1, Ordering::Relaxed);
            }
        }
        return (0, 0);
    }
    let mut dead = dead;
    dead.sort_unstable();
    let is_target = |peer: u32| dead.binary_search(&peer).is_ok();
    let mut removed = 0u64;
    let n = inner.next_id.load(Ordering::Acquire);
    for id in 0..n {
        let Some(slot) = inner.slot(id) else { continue };
        let needs = slot
            .load()
            .as_ref()
            .is_some_and(|r| r.iter().any(|e| is_target(e.peer)));
        if !needs {
            continue;
        }
        let mut gone = 0u64;
        let mut emptied = None;
        slot.rcu(|cur| {
            let r = cur.as_ref()?;
            let list = r
                .list
                .retain(|e| !is_target(e.peer), &|e| inner.pref_key(e));
            gone = (r.len() - list.len()) as u64;
            emptied = (list.is_empty() && !r.is_empty()).then_some(r.prefix);
            Some(Arc::new(Routes::tagged(r.prefix, list, r.tag)))
        });
        removed += gone;
        if let Some(p) = emptied {
            send(FibEvent::Check(p, id));
        }
    }
    // No current route array names a dead peer now, and none can again
    // (a peer that is down takes no routes): the registry lets them go.
    for &id in &dead {
        if let Some(p) = inner.peers.get(id) {
            p.routes.store(0, Ordering::Relaxed);
            p.swept.store(true, Ordering::Release);
        }
        if inner.peers.free(id) {
            inner.counters.peers_freed.fetch_add(1, Ordering::Relaxed);
        }
    }
    inner.attrs.purge();
    inner.counters.sweeps.fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .swept_routes
        .fetch_add(removed, Ordering::Relaxed);
    (dead.len(), removed)
}
