//! `ipfib info FILE [--json]`: what a table file holds (format, records,
//! prefixes per family, length histogram, distinct values, MRT peers and
//! multi-origin prefixes), which engine `--engine auto` builds per family
//! and why, and what is wrong with it (skipped records,
//! damage with its byte offset in the decompressed stream), with the load
//! time. Exit status: 0 clean, 1 something was skipped or damaged (the rest
//! was read), 2 the file could not be read at all (or `--strict` and
//! anything wrong).

use crate::load::{load_file, report_problems, table_of, table_options, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::{AutoOptions, Choice};
use ipfib_io::{AnyPrefix, Report, Route};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The table file (any format `ipfib lookup --table` reads).
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// File format: auto, text, ipasn, pfx2as, mrt, updates, mmdb.
    #[arg(long, default_value = "auto")]
    format: String,
    /// Clear host bits instead of counting the line as bad.
    #[arg(long)]
    mask_host_bits: bool,
    /// MRT / updates value policy, or a MaxMind DB field path (see
    /// `ipfib lookup --help`).
    #[arg(long)]
    value: Option<String>,
    /// With --value next-hop: the peer, by index or address.
    #[arg(long)]
    peer: Option<String>,
    /// Fail at the first problem instead of reporting it.
    #[arg(long)]
    strict: bool,
}

/// The table as a lookup would see it: the later duplicate wins.
struct Summary {
    v4: u64,
    v6: u64,
    histogram: [BTreeMap<u8, u64>; 2],
    values: usize,
}

fn summarise(routes: &[Route]) -> Summary {
    let mut last: HashMap<AnyPrefix, &str> = HashMap::with_capacity(routes.len());
    for r in routes {
        last.insert(r.prefix, r.value.as_str());
    }
    let mut s = Summary {
        v4: 0,
        v6: 0,
        histogram: [BTreeMap::new(), BTreeMap::new()],
        values: last.values().collect::<HashSet<_>>().len(),
    };
    for p in last.keys() {
        let (count, h) = if p.family() == 4 {
            (&mut s.v4, &mut s.histogram[0])
        } else {
            (&mut s.v6, &mut s.histogram[1])
        };
        *count += 1;
        *h.entry(p.len()).or_default() += 1;
    }
    s
}

pub fn run(args: Args) -> CmdResult {
    let table_args = TableArgs {
        table: args.file.clone(),
        format: args.format,
        mask_host_bits: args.mask_host_bits,
        value: args.value,
        peer: args.peer,
        strict: args.strict,
    };
    let opts = table_options(&table_args)?;
    let (mut loaded, elapsed) = load_file(&args.file, &opts)?;
    let summary = summarise(&loaded.routes);
    let load_ms = elapsed.as_secs_f64() * 1e3;
    // The routes are not needed after the summary: moved, not copied.
    let chosen = choose_engines(std::mem::take(&mut loaded.routes))?;
    let report = &loaded.report;
    if args.json {
        let mut v = to_json(&args.file, report, &summary, load_ms);
        v["engine"] = json!({
            "name": "auto",
            "v4": {"chosen": chosen[0].label(), "reason": chosen[0].reason},
            "v6": {"chosen": chosen[1].label(), "reason": chosen[1].reason},
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print_text(&args.file, report, &summary, load_ms);
        for (name, c) in ["IPv4", "IPv6"].iter().zip(&chosen) {
            println!("engine {name}: {c}");
        }
    }
    let problems = if args.json {
        report.has_problems()
    } else {
        report_problems(&args.file, report)
    };
    Ok(if problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// What `--engine auto` (the default of `ipfib lookup`) builds for each
/// family of the table, and why: over route ordinals, as `lookup` does.
fn choose_engines(routes: Vec<Route>) -> Result<[Choice; 2], Box<dyn std::error::Error>> {
    let table = table_of(routes)?;
    let c = table.compile(&AutoOptions::default())?;
    Ok([
        c.v4.engine().choice().clone(),
        c.v6.engine().choice().clone(),
    ])
}

fn histogram_json(h: &BTreeMap<u8, u64>) -> Value {
    Value::Object(h.iter().map(|(l, n)| (l.to_string(), json!(n))).collect())
}

fn to_json(file: &std::path::Path, r: &Report, s: &Summary, load_ms: f64) -> Value {
    let mrt = r.mrt.as_ref();
    let peers: Vec<Value> = mrt.map_or_else(Vec::new, |m| {
        m.peers
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                p.map(|p| json!({"index": i, "addr": p.addr.to_string(), "asn": p.asn}))
            })
            .collect()
    });
    json!({
        "file": file.display().to_string(),
        "format": r.format.name(),
        "compression": r.compression.name(),
        "records": r.records,
        "bytes": r.bytes,
        "prefixes_v4": s.v4,
        "prefixes_v6": s.v6,
        "values": s.values,
        "length_histogram": {"v4": histogram_json(&s.histogram[0]), "v6": histogram_json(&s.histogram[1])},
        "damaged": r.damage.is_some(),
        "damage_offset": r.damage.as_ref().map(|d| d.offset),
        "damage": r.damage.as_ref().map(|d| d.to_string()),
        "records_before_damage": r.damage.as_ref().map(|d| d.records_before),
        "bad_records": r.bad,
        "errors": r.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        "unsupported": r.unsupported.iter().map(|((t, st), n)| json!({"type": t, "subtype": st, "records": n})).collect::<Vec<_>>(),
        "peers": peers.len(),
        "peer_list": peers,
        "multi_origin_prefixes": mrt.map(|m| m.reduce.multi_origin),
        "as_set_origins": mrt.map(|m| m.reduce.as_set_origins),
        "prefixes_without_value": mrt.map(|m| m.reduce.without_value),
        "rib_entries": mrt.map(|m| m.rib_entries),
        "announcements": mrt.map(|m| m.announcements),
        "withdrawals": mrt.map(|m| m.withdrawals),
        "state_changes": mrt.map(|m| m.state_changes),
        "load_ms": load_ms,
        "mmdb": r.mmdb.as_ref().map(|m| json!({
            "database_type": m.database_type,
            "ip_version": m.ip_version,
            "record_size": m.record_size,
            "node_count": m.node_count,
            "build_epoch": m.build_epoch,
            "binary_format_major_version": m.binary_format.0,
            "binary_format_minor_version": m.binary_format.1,
            "distinct_records": m.records,
            "networks_without_field": m.without_field,
            "node_visits": m.node_visits,
        })),
    })
}

fn print_text(file: &std::path::Path, r: &Report, s: &Summary, load_ms: f64) {
    println!("file: {}", file.display());
    println!("format: {} ({})", r.format, r.compression.name());
    println!("records: {} ({} bytes decompressed)", r.records, r.bytes);
    println!("prefixes: {} IPv4, {} IPv6", s.v4, s.v6);
    println!("distinct values: {}", s.values);
    for (name, h) in [("IPv4", &s.histogram[0]), ("IPv6", &s.histogram[1])] {
        if !h.is_empty() {
            let parts: Vec<String> = h.iter().map(|(l, n)| format!("/{l} {n}")).collect();
            println!("lengths {name}: {}", parts.join(", "));
        }
    }
    if let Some(m) = &r.mrt {
        println!("peers: {}", m.peers.iter().flatten().count());
        println!(
            "routes: {} (announcements {}, withdrawals {}, state changes {})",
            m.rib_entries, m.announcements, m.withdrawals, m.state_changes
        );
        println!(
            "multi-origin prefixes: {}; AS_SET origins: {}; prefixes without a value: {}",
            m.reduce.multi_origin, m.reduce.as_set_origins, m.reduce.without_value
        );
    }
    if let Some(m) = &r.mmdb {
        let epoch = m.build_epoch.map_or("unknown".into(), |e| e.to_string());
        println!(
            "MaxMind DB: type {:?}, ip_version {}, record_size {}, {} nodes, build epoch {epoch}",
            m.database_type, m.ip_version, m.record_size, m.node_count
        );
        println!(
            "networks: {} ({} distinct records; {} without the --value field)",
            r.records, m.records, m.without_field
        );
    }
    println!("bad lines/records: {}", r.bad);
    match &r.damage {
        Some(d) => println!("damage: {d}"),
        None => println!("damage: none"),
    }
    println!("load time: {load_ms:.1} ms");
}
