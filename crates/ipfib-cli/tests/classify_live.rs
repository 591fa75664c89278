//! `ipfib classify --interface` on a real interface: a veth pair between
//! two network namespaces made for the test (IPv6 off on both ends, no
//! addresses, so nothing but the replayed frames crosses it), `ipfib`
//! capturing on one end while tcpreplay sends a capture file out of the
//! other. The live report must count exactly what `ipfib classify --pcap`
//! counts on the same file: frames, bytes, skipped frames, and packets
//! and bytes per direction in total, per network and per hostgroup.
//!
//! Needs root, `ip netns` and tcpreplay (scripts/live-parts installs it):
//! without them it prints SKIPPED and passes, unless CI=true, where it
//! fails.

mod common;

use common::{data_file, IPFIB};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const DDOS: &str = "traces/stopddos-amp.TCP.reflection.SYNACK-20210605.pcap";
const DUAL: &str = "traces/pcapplusplus-tls2-dualstack-20210105.pcap";

/// Whether to go on: prints SKIPPED (or, under CI=true, fails) if not.
fn can_run(why_not: Option<String>) -> bool {
    let Some(why) = why_not else { return true };
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{why}, and CI=true requires the live capture test to run");
    }
    eprintln!("SKIPPED: {why}");
    false
}

fn prerequisites() -> Option<String> {
    let uid = Command::new("id").arg("-u").output();
    match uid {
        Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0" => {}
        _ => return Some("not root: AF_PACKET and network namespaces need root".into()),
    }
    let replay = Command::new("tcpreplay")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !replay.is_ok_and(|s| s.success()) {
        return Some("tcpreplay not found (scripts/live-parts installs it)".into());
    }
    None
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?}: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Two network namespaces joined by a veth pair (`vethA` in `a`, `vethB`
/// in `b`), both ends up with IPv6 off; the namespaces made are removed on
/// drop, whatever happened (deleting a namespace deletes its veth end, and
/// with it the peer).
struct VethPair {
    a: String,
    b: String,
    made: Vec<String>,
}

impl VethPair {
    fn new(tag: &str) -> Result<VethPair, String> {
        let id = std::process::id();
        let mut pair = VethPair {
            a: format!("ipfib-live-{id}-{tag}-a"),
            b: format!("ipfib-live-{id}-{tag}-b"),
            made: Vec::new(),
        };
        for ns in [pair.a.clone(), pair.b.clone()] {
            run(Command::new("ip").args(["netns", "add", &ns]))?;
            pair.made.push(ns);
        }
        let (a, b) = (&pair.a, &pair.b);
        run(Command::new("ip").args([
            "link", "add", "vethA", "netns", a, "type", "veth", "peer", "name", "vethB", "netns", b,
        ]))?;
        for (ns, dev) in [(a, "vethA"), (b, "vethB")] {
            // No router solicitations, MLD reports or DAD probes: the only
            // frames on the link are the replayed ones.
            for key in ["all", "default", dev] {
                run(Command::new("ip").args([
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
                ]))?;
            }
            run(Command::new("ip").args(["-n", ns, "link", "set", dev, "up"]))?;
        }
        Ok(pair)
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for ns in &self.made {
            if let Err(e) = run(Command::new("ip").args(["netns", "del", ns])) {
                eprintln!("cleanup: {e}");
            }
        }
    }
}

/// A started process, killed by its PID on drop if it is still running.
struct Proc(Child);

impl Proc {
    /// Wait at most `limit` for the exit.
    fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Ok(Some(s)) = self.0.try_wait() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "ipfib-classify-live-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// What must be equal between the file's report and the live one: every
/// count that does not depend on when the packets were seen (peaks and
/// means do: the replay is faster than the capture was).
fn counts(doc: &Value) -> Value {
    let dirs = |v: &Value| {
        let mut m = serde_json::Map::new();
        for d in ["incoming", "outgoing", "internal", "other"] {
            m.insert(
                d.into(),
                serde_json::json!([v[d]["packets"], v[d]["bytes"]]),
            );
        }
        Value::Object(m)
    };
    let by = |list: &Value, key: &str| -> Value {
        let mut m = serde_json::Map::new();
        for n in list.as_array().unwrap() {
            m.insert(n[key].as_str().unwrap().to_string(), dirs(n));
        }
        Value::Object(m)
    };
    serde_json::json!({
        "frames": doc["capture"]["frames"],
        "bytes": doc["capture"]["bytes"],
        "skipped": doc["skipped"],
        "fragments": doc["fragments"],
        "totals": dirs(&doc["totals"]),
        "networks": by(&doc["networks"], "network"),
        "hostgroups": by(&doc["hostgroups"], "hostgroup"),
        "top_sources": doc["top_sources"],
    })
}

/// Replay `pcap` onto the veth pair while ipfib captures on the other end
/// counting on `threads` threads; both reports, (from the file, live).
fn file_and_live(
    tag: &str,
    pcap: &Path,
    networks: &[&str],
    threads: &str,
) -> Option<(Value, Value)> {
    if !can_run(prerequisites()) {
        return None;
    }
    let dir = tempdir();
    let nets = dir.join("nets.txt");
    std::fs::write(&nets, networks.join("\n") + "\n").unwrap();
    let file_json = dir.join("file.json");
    let st = Command::new(IPFIB)
        .args(["classify", "--networks"])
        .arg(&nets)
        .arg("--pcap")
        .arg(pcap)
        .arg("--json")
        .arg(&file_json)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "classify --pcap: {st}");
    let file = read_json(&file_json);
    let frames = file["capture"]["frames"].as_u64().unwrap();

    let pair = match VethPair::new(tag) {
        Ok(p) => p,
        Err(e) => {
            can_run(Some(format!("cannot make the network namespaces: {e}")));
            return None;
        }
    };
    let live_json = dir.join("live.json");
    let windows = dir.join("windows.jsonl");
    let mut ipfib = Proc(
        Command::new("ip")
            .args(["netns", "exec", &pair.b, IPFIB, "classify", "--networks"])
            .arg(&nets)
            .args(["--interface", "vethB", "--count", &frames.to_string()])
            .args(["--duration", "30", "--threads", threads, "--json"])
            .arg(&live_json)
            .arg("--windows")
            .arg(&windows)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Its stderr, line by line: the test starts replaying once the ring is up.
    let (tx, rx) = mpsc::channel::<String>();
    let stderr = ipfib.0.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut err_text = String::new();
    let ready_by = Instant::now() + Duration::from_secs(20);
    loop {
        let left = ready_by.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                err_text += &line;
                err_text += "\n";
                if line.contains("capturing on vethB") {
                    break;
                }
            }
            Err(e) => panic!("ipfib did not start capturing ({e}): {err_text}"),
        }
    }
    let mut replay = Proc(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                &pair.a,
                "tcpreplay",
                "--intf1=vethA",
                "--topspeed",
            ])
            .arg(pcap)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let st = replay.wait(Duration::from_secs(60));
    let out = {
        let mut s = String::new();
        if st.is_some() {
            use std::io::Read;
            let _ = replay.0.stdout.take().map(|mut o| o.read_to_string(&mut s));
            let _ = replay.0.stderr.take().map(|mut o| o.read_to_string(&mut s));
        }
        s
    };
    assert!(st.is_some_and(|s| s.success()), "tcpreplay: {st:?}\n{out}");
    assert!(
        out.contains(&format!("Successful packets:        {frames}")),
        "tcpreplay did not send all {frames} frames:\n{out}"
    );
    let st = ipfib.wait(Duration::from_secs(40));
    drop(ipfib);
    let _ = reader.join();
    err_text.extend(rx.try_iter().map(|l| l + "\n"));
    assert!(st.is_some_and(|s| s.success()), "ipfib: {st:?}\n{err_text}");
    let live = read_json(&live_json);
    assert_eq!(live["capture"]["stopped_by"], "count", "{err_text}");
    assert_eq!(live["capture"]["kernel_drops"], 0, "{err_text}");
    assert_eq!(live["capture"]["file"], "interface vethB");
    assert_eq!(live["capture"]["format"], "af_packet");
    // The window lines add up to the totals.
    let mut sum = [[0u64; 2]; 4];
    for line in std::fs::read_to_string(&windows).unwrap().lines() {
        let w: Value = serde_json::from_str(line).unwrap();
        for (i, d) in ["incoming", "outgoing", "internal", "other"]
            .iter()
            .enumerate()
        {
            sum[i][0] += w[d]["packets"].as_u64().unwrap();
            sum[i][1] += w[d]["bytes"].as_u64().unwrap();
        }
    }
    for (i, d) in ["incoming", "outgoing", "internal", "other"]
        .iter()
        .enumerate()
    {
        assert_eq!(
            [
                live["totals"][d]["packets"].as_u64().unwrap(),
                live["totals"][d]["bytes"].as_u64().unwrap()
            ],
            sum[i],
            "--windows lines, {d}"
        );
    }
    drop(pair);
    let _ = std::fs::remove_dir_all(&dir);
    Some((file, live))
}

#[test]
fn live_capture_of_the_ddos_replay_counts_what_the_file_counts() {
    let Some(pcap) = data_file(DDOS) else { return };
    let Some((file, live)) = file_and_live(
        "ddos",
        &pcap,
        &[
            "10.10.10.0/24 victims",
            "172.99.0.0/16 reflectors",
            "172.99.233.0/24 reflectors-24",
            "192.0.2.0/24 lab",
        ],
        "1",
    ) else {
        return;
    };
    assert_eq!(counts(&live), counts(&file));
    // Not vacuous: the victim's incoming flood and the non-IP frames.
    assert_eq!(live["capture"]["frames"], 8000);
    assert_eq!(live["skipped"]["non_ip"], 4);
    assert!(live["totals"]["incoming"]["packets"].as_u64().unwrap() > 7000);
    assert!(live["totals"]["internal"]["packets"].as_u64().unwrap() > 0);
}

#[test]
fn live_capture_of_the_dual_stack_replay_counts_what_the_file_counts() {
    let Some(pcap) = data_file(DUAL) else { return };
    let Some((file, live)) = file_and_live(
        "dual",
        &pcap,
        &[
            "192.168.0.0/24 home",
            "2601:647:4b02:1d20::/64 home",
            "2620:1ec:c11::/48 cdn",
        ],
        // The live count fanned out over threads (one per CPU).
        "0",
    ) else {
        return;
    };
    assert_eq!(counts(&live), counts(&file));
    // IPv6 frames reach the capture though IPv6 is off on the interface.
    let v6 = live["networks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["network"].as_str().unwrap().contains(':'))
        .count();
    assert!(v6 > 0, "{live}");
    assert_eq!(live["capture"]["frames"], 7451);
}
