//! `ipfib bench` as a suite: threads, latency, the Poptrie
//! paper's traces, table-size sweeps, charts and `--from-json`. Small
//! tables and traces, no timed assertion: shapes, agreement and files.

mod common;

use common::{ipfib, Run};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ipfib-bench-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn show(run: &Run) -> String {
    format!(
        "exit {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        run.code, run.stdout, run.stderr
    )
}

const SMALL: [&str; 8] = [
    "--v4-prefixes",
    "2000",
    "--v6-prefixes",
    "1000,3000",
    "--trace-len",
    "6000",
    "--runs",
    "2",
];

/// The PNG files in `dir`, each checked to be a non-empty PNG.
fn pngs(dir: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 1000, "{} is nearly empty", path.display());
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", path.display());
        names.insert(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    names
}

#[test]
fn threads_latency_traces_sweeps_and_plots() {
    let s = Scratch::new("suite");
    let (json, plots) = (s.path("b.json"), s.path("plots"));
    let mut args: Vec<&str> = vec!["bench"];
    args.extend(SMALL);
    args.extend([
        "--trace",
        "uniform,sequential,repeat",
        "--engines",
        "planb,poptrie,radix",
        "--batch",
        "1,16",
        "--threads",
        "1,2",
        "--latency",
        "500",
        "--json",
        &json,
        "--plot",
        &plots,
        "--plot-size",
        "320x240",
    ]);
    let run = ipfib(&args, None);
    if !cfg!(target_arch = "x86_64") {
        assert_eq!(run.code, 2, "{}", show(&run));
        assert!(run.stderr.contains("not supported"), "{}", show(&run));
        return;
    }
    assert_eq!(run.code, 0, "{}", show(&run));
    assert!(run.stdout.contains("# latency"), "{}", show(&run));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        report["machine"]["tsc_hz"].as_f64().unwrap() > 0.0,
        "{report}"
    );

    // Every row of one table and trace answers alike: engines, batch
    // sizes and thread counts.
    let mut sums: HashMap<(u64, u64, String), BTreeSet<u64>> = HashMap::new();
    let mut seen = BTreeSet::new();
    for r in report["results"].as_array().unwrap() {
        let key = (
            r["family"].as_u64().unwrap(),
            r["prefixes"].as_u64().unwrap(),
            r["trace"].as_str().unwrap().to_string(),
        );
        sums.entry(key.clone())
            .or_default()
            .insert(r["checksum"].as_u64().unwrap());
        let threads = r["threads"].as_u64().unwrap();
        let cpus = r["cpus"].as_array().unwrap().len() as u64;
        assert_eq!(cpus, if threads > 1 { threads } else { 0 }, "{r}");
        seen.insert((key.0, key.1, key.2, threads));
    }
    for (key, set) in &sums {
        assert_eq!(set.len(), 1, "{key:?}: checksums differ: {set:?}");
    }
    for trace in ["uniform", "sequential", "repeat16"] {
        for (fam, n) in [(4, 2000), (6, 1000), (6, 3000)] {
            for threads in [1, 2] {
                assert!(
                    seen.contains(&(fam, n, trace.to_string(), threads)),
                    "{seen:?}"
                );
            }
        }
    }

    // Latency: one row per engine, table and trace, percentiles in order.
    let lat = report["latency"].as_array().unwrap();
    assert_eq!(lat.len(), 3 * 3 * 3, "{report}");
    for l in lat {
        assert_eq!(l["samples"], 500, "{l}");
        let p: Vec<f64> = [
            "ticks_p50",
            "ticks_p75",
            "ticks_p95",
            "ticks_p99",
            "ticks_max",
        ]
        .iter()
        .map(|f| l[f].as_f64().unwrap())
        .collect();
        assert!(p[0] > 0.0 && p.windows(2).all(|w| w[0] <= w[1]), "{l}");
        assert!(l["ticks_mean"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["ns_mean"].as_f64().unwrap() > 0.0, "{l}");
        assert!(l["overhead_ticks"].as_f64().is_some(), "{l}");
        assert_eq!(l["cdf_ticks"].as_array().unwrap().len(), 101, "{l}");
    }

    // Charts: throughput, batch, threads and latency per family; the
    // table-size chart only for IPv6, the family with two sizes.
    let want: BTreeSet<String> = [
        "throughput-v4",
        "throughput-v6",
        "batch-v4",
        "batch-v6",
        "threads-v4",
        "threads-v6",
        "latency-cdf-v4",
        "latency-cdf-v6",
        "fib-size-v6",
    ]
    .iter()
    .map(|n| format!("{n}.png"))
    .collect();
    assert_eq!(pngs(Path::new(&plots)), want);

    // The same charts again from the saved report, measuring nothing.
    let again = s.path("again");
    let run = ipfib(
        &[
            "bench",
            "--from-json",
            &json,
            "--plot",
            &again,
            "--plot-size",
            "320x240",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", show(&run));
    assert_eq!(pngs(Path::new(&again)), want);
    assert!(run.stdout.contains("repeat16"), "{}", show(&run));
}

#[test]
fn bad_suite_arguments_exit_2() {
    for (bad, needle) in [
        (&["--threads", "0"][..], "--threads 0"),
        (&["--latency", "0"][..], "--latency 0"),
        (&["--plot-size", "10x10"][..], "--plot-size"),
        (&["--plot-size", "wide"][..], "--plot-size"),
        (&["--trace", "repeat:0"][..], "repeat:0"),
        (
            &["--from-json", "/nonexistent/report.json"][..],
            "/nonexistent/report.json",
        ),
    ] {
        let mut args = vec!["bench"];
        args.extend(bad);
        let run = ipfib(&args, None);
        assert_eq!(run.code, 2, "{bad:?}: {}", show(&run));
        assert!(run.stderr.contains(needle), "{bad:?}: {}", show(&run));
    }
}
