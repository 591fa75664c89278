//! Warm restart (`--state DIR`): the RIB written to a snapshot file
//! every [`StateConfig::every`], on SIGUSR1 and at shutdown; at start the
//! newest good snapshot is loaded and answers at once, its routers'
//! routes stale until they send them again (docs/architecture.md, "Warm
//! restart"; the file format and the stale-route rules are
//! `ipfib_rib::snapshot` and `ipfib_rib`'s `rib/restart.rs`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipfib_rib::snapshot::{self, SnapshotReport};
use ipfib_rib::Rib;
use tokio::sync::watch;

use crate::{Ctx, Event};

/// Where and how often the RIB is kept.
#[derive(Clone, Debug)]
pub struct StateConfig {
    /// The directory of the snapshot files (created if missing).
    pub dir: PathBuf,
    /// Time between two snapshots (and one at shutdown, one on SIGUSR1).
    pub every: Duration,
    /// How long restored routes wait for their router to send them again
    /// before they are swept (End-of-RIB sweeps them sooner).
    pub stale_grace: Duration,
}

/// The snapshots' state, for the task that writes them and `/metrics`.
#[derive(Default)]
pub(crate) struct Snapshots {
    /// One write at a time (periodic, SIGUSR1, shutdown).
    writing: tokio::sync::Mutex<()>,
    pub last: Mutex<Option<SnapshotReport>>,
    pub written: AtomicU64,
    pub failures: AtomicU64,
}

/// The newest snapshot of `dir` that loads, as a RIB; `None` when there
/// is none (a first start) or none loads (each failure logged, the
/// collector then starts empty rather than not at all: what a snapshot
/// holds comes back from the routers anyway).
pub(crate) fn restore(
    dir: &Path,
    max_routes_per_prefix: usize,
    on_event: &dyn Fn(Event<'_>),
) -> Result<Option<Rib>, String> {
    for path in snapshot::newest(dir) {
        match snapshot::load_with(&path, |rib| {
            rib.set_max_routes_per_prefix(max_routes_per_prefix)
        }) {
            Ok((rib, report)) => {
                // The load publishes its FIB on the FIB thread: wait for
                // it, so that the collector serves (lookups and route
                // listings through the FIB) only once it answers the
                // whole snapshot.
                rib.sync();
                on_event(Event::SnapshotLoaded {
                    path: &path,
                    report: &report,
                });
                tracing::info!(
                    file = %path.display(),
                    routes = report.routes,
                    prefixes = report.prefixes,
                    peers = report.peers,
                    seconds = report.seconds,
                    "snapshot loaded: its routers' routes are stale until sent again"
                );
                return Ok(Some(rib));
            }
            Err(e) => {
                // Kept aside, not rotated over by the next writes (a newer
                // version's file, after a downgrade, stays there to go
                // back to).
                let mut aside = path.clone().into_os_string();
                aside.push(".refused");
                let aside = std::path::PathBuf::from(aside);
                let kept = std::fs::rename(&path, &aside).is_ok();
                let kept_as = if kept {
                    aside.display().to_string()
                } else {
                    "-".into()
                };
                tracing::warn!(file = %path.display(), error = %e, kept_as, "snapshot refused");
            }
        }
    }
    Ok(None)
}

/// Write a snapshot now (unless one is being written); whether it was.
pub(crate) async fn write_now(ctx: &Arc<Ctx>, why: &'static str) -> bool {
    let (Some(cfg), Some(snaps)) = (&ctx.state_config, &ctx.snapshots) else {
        return false;
    };
    // At shutdown, after the one being written; otherwise a write already
    // under way is this one.
    let _guard = if why == "shutdown" {
        snaps.writing.lock().await
    } else {
        match snaps.writing.try_lock() {
            Ok(g) => g,
            Err(_) => return false,
        }
    };
    let (rib, dir) = (Arc::clone(&ctx.rib), cfg.dir.clone());
    let done = tokio::task::spawn_blocking(move || snapshot::write_to_dir(&rib, &dir)).await;
    match done {
        Ok(Ok(r)) => {
            tracing::info!(
                why,
                routes = r.routes,
                prefixes = r.prefixes,
                bytes = r.bytes,
                seconds = r.seconds,
                "snapshot written"
            );
            snaps.written.fetch_add(1, Ordering::Relaxed);
            *snaps.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            true
        }
        Ok(Err(e)) => {
            snaps.failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(why, dir = %cfg.dir.display(), error = %e, "snapshot not written: the last good one stays");
            false
        }
        Err(e) => {
            snaps.failures.fetch_add(1, Ordering::Relaxed);
            tracing::error!(why, error = %e, "snapshot task failed");
            false
        }
    }
}

/// The state directory, locked for this process: two collectors writing
/// one directory would overwrite each other's snapshots. The lock holds
/// while the returned file is open (the whole run).
pub(crate) fn lock_dir(dir: &Path) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "--state {}: cannot create the directory: {e}",
            dir.display()
        )
    })?;
    let path = dir.join("lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("--state {}: {e}", path.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "--state {}: another process (another collector?) holds {}",
            dir.display(),
            path.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!("--state {}: {e}", path.display())),
    }
}

/// SIGUSR1, watched from the start (before the load: its default action
/// would end the process).
pub(crate) fn watch_usr1() -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        .map_err(|e| tracing::warn!(error = %e, "cannot watch SIGUSR1: snapshots on a timer only"))
        .ok()
}

/// Snapshots every `every` and on SIGUSR1, until `stop`.
pub(crate) async fn keep(
    ctx: Arc<Ctx>,
    mut usr1: Option<tokio::signal::unix::Signal>,
    mut stop: watch::Receiver<bool>,
) {
    let Some(every) = ctx.state_config.as_ref().map(|c| c.every) else {
        return;
    };
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let why = tokio::select! {
            _ = tick.tick() => "timer",
            Some(()) = async {
                match usr1.as_mut() {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            } => "SIGUSR1",
            _ = stop.changed() => return,
        };
        write_now(&ctx, why).await;
    }
}

/// Sweep the stale peers whose grace period has passed, counted from
/// when their routes first became stale (kept in the snapshot: restarts
/// more often than the period do not keep them for ever); checked every
/// second until none is left.
pub(crate) async fn expire(ctx: Arc<Ctx>, mut stop: watch::Receiver<bool>) {
    let Some(grace) = ctx.state_config.as_ref().map(|c| c.stale_grace) else {
        return;
    };
    let grace = i64::try_from(grace.as_secs()).unwrap_or(i64::MAX);
    while ctx.rib.stale_peers() > 0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let n = ctx.rib.expire_stale_since(now.saturating_sub(grace));
        if n > 0 {
            tracing::info!(
                peers = n,
                "stale grace period over: restored routes not sent again are gone"
            );
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.changed() => return,
        }
    }
}
