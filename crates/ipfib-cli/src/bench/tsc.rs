//! The time-stamp counter, for `--latency` (cycles per lookup, as the
//! Poptrie paper's Figure 10 and Table 4 report them). x86-64 only: the
//! only `unsafe` of the benchmark's timing lives here.
//!
//! A reading before the lookup is `lfence; rdtsc; lfence` (earlier
//! instructions have finished, later ones have not started); a reading
//! after is `rdtscp; lfence` (the lookup has finished before the counter is
//! read, and nothing after starts early), falling back to the first form
//! when the CPU has no `rdtscp`. This is Intel's recommended pattern for
//! timing short code; the fences themselves cost a few tens of cycles,
//! which [`overhead`] measures and the report prints beside the figures.

use std::time::{Duration, Instant};

/// Why `--latency` cannot run here, or `None` when it can.
pub fn unsupported() -> Option<&'static str> {
    if cfg!(target_arch = "x86_64") {
        None
    } else {
        Some("--latency reads the x86-64 time-stamp counter; it is not supported on this CPU architecture")
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::arch::x86_64::{__cpuid, __rdtscp, _mm_lfence, _rdtsc};
    use std::sync::OnceLock;

    /// CPUID 8000_0001h, EDX bit 27: RDTSCP.
    fn has_rdtscp() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            // Leaf 8000_0000h tells whether the extended leaf exists.
            let max = __cpuid(0x8000_0000).eax;
            max >= 0x8000_0001 && __cpuid(0x8000_0001).edx & (1 << 27) != 0
        })
    }

    #[inline(always)]
    pub fn start() -> u64 {
        // SAFETY: LFENCE (SSE2) and RDTSC are part of the x86-64 baseline;
        // neither touches memory.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            t
        }
    }

    #[inline(always)]
    pub fn stop() -> u64 {
        if !has_rdtscp() {
            return start();
        }
        let mut aux = 0u32;
        // SAFETY: RDTSCP was detected above (CPUID); it writes only `aux`,
        // a local; LFENCE is baseline.
        unsafe {
            let t = __rdtscp(&mut aux);
            _mm_lfence();
            t
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    // Never called: `unsupported()` stops `--latency` first.
    pub fn start() -> u64 {
        0
    }
    pub fn stop() -> u64 {
        0
    }
}

/// The counter, read before the code to time.
#[inline(always)]
pub fn start() -> u64 {
    imp::start()
}

/// The counter, read after the code to time.
#[inline(always)]
pub fn stop() -> u64 {
    imp::stop()
}

/// Ticks of an empty measurement (`start(); stop()`), the median of 10,001:
/// what every latency figure includes on top of the lookup itself.
pub fn overhead() -> u64 {
    let mut v: Vec<u64> = (0..10_001)
        .map(|_| {
            let t0 = start();
            stop().wrapping_sub(t0)
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// Counter ticks per second, calibrated against the monotonic clock over
/// `span` of busy waiting (the TSC of current CPUs runs at a constant rate
/// whatever the core clock, `constant_tsc`/`nonstop_tsc` in /proc/cpuinfo).
pub fn calibrate(span: Duration) -> f64 {
    let (i0, t0) = (Instant::now(), start());
    while i0.elapsed() < span {
        std::hint::spin_loop();
    }
    let (t1, i1) = (stop(), Instant::now());
    t1.wrapping_sub(t0) as f64 / (i1 - i0).as_secs_f64()
}
