//! What the figures were measured on (the report's header and its JSON
//! `machine` object), CPU pinning, and the process's resident memory.
//! Everything read from /proc and /sys is optional: "n/a" when unreadable.

use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Machine {
    pub cpu: String,
    /// PlanB kernels this run uses (the best detected one by default).
    pub kernels: Vec<String>,
    pub pinned_cpu: Option<usize>,
    /// cpufreq governor of the pinned CPU (CPU 0 when not pinned).
    pub governor: Option<String>,
    pub os: String,
    /// Turbo / boost: "on" or "off" from cpufreq's `boost` or intel_pstate's
    /// `no_turbo`; `None` when neither is readable (e.g. in most VMs).
    #[serde(default)]
    pub boost: Option<String>,
    /// CPUs online (threads > 1 are pinned round them).
    #[serde(default)]
    pub cpus_online: usize,
    /// Time-stamp counter ticks per second, calibrated (with `--latency`).
    #[serde(default)]
    pub tsc_hz: Option<f64>,
    /// `constant_tsc` and `nonstop_tsc` in /proc/cpuinfo: the counter runs
    /// at one rate whatever the clock and sleep state.
    #[serde(default)]
    pub tsc_invariant: Option<bool>,
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Machine {
    pub fn detect(pin: Option<usize>, kernels: Vec<String>) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpuinfo
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        };
        let cpu = field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let tsc_invariant = field("flags").map(|f| {
            let has = |flag| f.split_whitespace().any(|x| x == flag);
            has("constant_tsc") && has("nonstop_tsc")
        });
        let governor = read_trimmed(&format!(
            "/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor",
            pin.unwrap_or(0)
        ));
        let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
        let boost = read_trimmed("/sys/devices/system/cpu/cpufreq/boost")
            .map(|v| on_off(v == "1"))
            .or_else(|| {
                read_trimmed("/sys/devices/system/cpu/intel_pstate/no_turbo")
                    .map(|v| on_off(v == "0"))
            });
        Machine {
            cpu,
            kernels,
            pinned_cpu: pin,
            governor,
            os: std::env::consts::OS.to_string(),
            boost,
            cpus_online: cpus_online(),
            tsc_hz: None,
            tsc_invariant,
        }
    }

    /// The report's header line.
    pub fn header(&self) -> String {
        let na = |o: &Option<String>| o.clone().unwrap_or_else(|| "n/a".into());
        let mut h = format!(
            "# cpu: {} ({} online) | kernels: {} | pinned: {} | governor: {} | boost: {}",
            self.cpu,
            self.cpus_online,
            self.kernels.join(","),
            self.pinned_cpu.map_or("no".into(), |c| format!("cpu {c}")),
            na(&self.governor),
            na(&self.boost),
        );
        if let Some(hz) = self.tsc_hz {
            let inv = match self.tsc_invariant {
                Some(true) => "invariant",
                Some(false) => "NOT invariant",
                None => "invariance n/a",
            };
            h.push_str(&format!(" | tsc: {:.3} GHz ({inv})", hz / 1e9));
        }
        h
    }
}

/// CPUs online, or 1 when unknown.
pub fn cpus_online() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf only reads its argument.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        if n > 0 {
            return n as usize;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Give the allocator's free memory back to the OS (`ipfib_rib::heap::trim`:
/// jemalloc's purge and glibc's `malloc_trim`), so the resident-set growth
/// across the next build counts the build's own pages rather than pages
/// freed by an earlier one and reused.
pub fn trim_heap() {
    ipfib_rib::heap::trim();
}

/// Resident bytes of this process (`/proc/self/statm`), where readable.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    #[cfg(target_os = "linux")]
    // SAFETY: sysconf only reads its argument.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    #[cfg(not(target_os = "linux"))]
    let page = 4096;
    Some(pages * u64::try_from(page).ok()?)
}

/// The CPUs for `threads` worker threads: with `--pin P`, P, P+1, ...
/// round the online CPUs; without, the CPUs this process may run on (its
/// affinity mask: `taskset` is respected), in order, round again when
/// there are fewer than threads. Empty when nothing can be pinned.
pub fn worker_cpus(pin: Option<usize>, threads: usize) -> Vec<usize> {
    let pool: Vec<usize> = match pin {
        Some(p) => {
            let n = cpus_online();
            (0..n).map(|i| (p + i) % n).collect()
        }
        None => allowed_cpus(),
    };
    if pool.is_empty() {
        return Vec::new();
    }
    (0..threads).map(|i| pool[i % pool.len()]).collect()
}

#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data (zeroed = empty set);
    // sched_getaffinity writes at most its size into it, and CPU_ISSET
    // reads inside it (i < CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&i| libc::CPU_ISSET(i, &set))
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pin the calling thread to `cpu`.
#[cfg(target_os = "linux")]
pub fn pin_to(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("CPU {cpu}: no such CPU"));
    }
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, CPU_SET
    // writes inside it (bounds checked above), and sched_setaffinity only
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!("CPU {cpu}: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn pin_to(_cpu: usize) -> Result<(), String> {
    Err("pinning is only supported on Linux (use your OS's affinity tool)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_cpus_go_round() {
        let n = cpus_online();
        assert_eq!(worker_cpus(Some(0), 1), vec![0]);
        let w = worker_cpus(Some(n - 1), 3);
        assert_eq!(w, vec![n - 1, 0 % n, 1 % n]);
        #[cfg(target_os = "linux")]
        {
            let allowed = allowed_cpus();
            assert!(!allowed.is_empty());
            assert_eq!(worker_cpus(None, 1), vec![allowed[0]]);
        }
    }

    #[test]
    fn rss_is_readable_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
