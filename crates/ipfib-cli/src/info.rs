//! `ipfib info FILE [--json]`: what a table file holds (format, records,
//! prefixes per family, length histogram, distinct values, MRT peers and
//! multi-origin prefixes; for ranges tables the ranges, how many overlap
//! an earlier one, how many are not one CIDR prefix), which engine `--engine auto` builds per family
//! and why, and what is wrong with it (skipped records,
//! damage with its byte offset in the decompressed stream), with the load
//! time. Exit status: 0 clean, 1 something was skipped or damaged (the rest
//! was read), 2 the file could not be read at all (or `--strict` and
//! anything wrong).

use crate::load::{load_file, report_problems, table_of, table_options, TableArgs};
use crate::{CmdResult, Outcome};
use ipfib::engine::auto::{AutoOptions, Choice};
use ipfib_io::{AnyPrefix, Format, Report, Route};
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
    /// File format: auto, text, ipasn, pfx2as, mrt, updates, ranges, compiled, mmdb.
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
    /// Ranges tables: the 1-based column holding the value (default 3).
    #[arg(long, value_name = "N")]
    value_column: Option<usize>,
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
        value_column: args.value_column,
    };
    let opts = table_options(&table_args)?;
    let (mut loaded, elapsed) = load_file(&args.file, &opts)?;
    let summary = summarise(&loaded.routes);
    let load_ms = elapsed.as_secs_f64() * 1e3;
    // A compiled file: the engines in it, and how long mapping it takes.
    let compiled = match loaded.report.format {
        Format::Compiled => Some(compiled_info(&args.file)?),
        _ => None,
    };
    // The routes are not needed after the summary: moved, not copied.
    let chosen = match &compiled {
        Some(c) => c.choices.clone(),
        None => choose_engines(std::mem::take(&mut loaded.routes))?,
    };
    let report = &loaded.report;
    if args.json {
        let mut v = to_json(&args.file, report, &summary, load_ms);
        v["engine"] = json!({
            "name": "auto",
            "v4": {"chosen": chosen[0].label(), "reason": chosen[0].reason},
            "v6": {"chosen": chosen[1].label(), "reason": chosen[1].reason},
        });
        if let Some(c) = &compiled {
            v["compiled"] = json!({
                "source": c.source,
                "version": ipfib::image::VERSION,
                "open_ms": c.open_ms,
                "engines_v4": {"values": c.names[0], "routes": c.names[1]},
                "engines_v6": {"values": c.names[2], "routes": c.names[3]},
            });
        }
        outln!("{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        print_text(&args.file, report, &summary, load_ms)?;
        if let Some(c) = &compiled {
            outln!(
                "compiled table file (layout version {}) from {}: opens mapped in {:.2} ms",
                ipfib::image::VERSION,
                c.source,
                c.open_ms
            )?;
        }
        // One line per family: the engine a lookup answers with and why
        // (for a compiled file, what is in the file, with its value and
        // route engines); a family without routes needs none.
        let families = [("IPv4", summary.v4, 0), ("IPv6", summary.v6, 2)];
        for ((name, prefixes, at), c) in families.iter().zip(&chosen) {
            match (prefixes, &compiled) {
                (0, _) => outln!("engine {name}: none (no routes)")?,
                (_, Some(f)) => outln!(
                    "engine {name}: {} (values), {} (routes); chosen: {}",
                    f.names[*at],
                    f.names[at + 1],
                    c.reason
                )?,
                (_, None) => outln!("engine {name}: {c}")?,
            }
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

/// What a compiled table file holds beyond its routes.
struct Compiled {
    source: String,
    open_ms: f64,
    /// Value and route engines, IPv4 then IPv6.
    names: [String; 4],
    /// The route engines' choices (what `lookup` answers with).
    choices: [Choice; 2],
}

fn compiled_info(path: &std::path::Path) -> Result<Compiled, Box<dyn std::error::Error>> {
    use ipfib::engine::Engine;
    let start = std::time::Instant::now();
    let img =
        ipfib::image::ImageTable::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let open_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(Compiled {
        source: img.source.clone(),
        open_ms,
        names: [
            img.v4.by_value().name(),
            img.v4.by_route().name(),
            img.v6.by_value().name(),
            img.v6.by_route().name(),
        ],
        choices: [
            img.v4.by_route().choice().clone(),
            img.v6.by_route().choice().clone(),
        ],
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
    let mmdb = r.mmdb.as_ref().map(|m| {
        json!({
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
        })
    });
    let ranges = r.ranges.as_ref();
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
        "ranges": ranges.map(|g| g.ranges),
        "overlapping_ranges": ranges.map(|g| g.overlapping),
        "unaligned_ranges": ranges.map(|g| g.unaligned),
        "header_line": ranges.and_then(|g| g.header_line),
        "value_column": ranges.map(|g| g.value_column),
        "load_ms": load_ms,
        "mmdb": mmdb,
    })
}

fn print_text(
    file: &std::path::Path,
    r: &Report,
    s: &Summary,
    load_ms: f64,
) -> std::io::Result<()> {
    outln!("file: {}", file.display())?;
    outln!("format: {} ({})", r.format, r.compression.name())?;
    let bytes = match r.compression {
        ipfib_io::Compression::None => "bytes",
        _ => "bytes decompressed",
    };
    outln!("records: {} ({} {bytes})", r.records, r.bytes)?;
    outln!("prefixes: {} IPv4, {} IPv6", s.v4, s.v6)?;
    outln!("distinct values: {}", s.values)?;
    for (name, h) in [("IPv4", &s.histogram[0]), ("IPv6", &s.histogram[1])] {
        if !h.is_empty() {
            let parts: Vec<String> = h.iter().map(|(l, n)| format!("/{l} {n}")).collect();
            outln!("lengths {name}: {}", parts.join(", "))?;
        }
    }
    if let Some(m) = &r.mrt {
        outln!("peers: {}", m.peers.iter().flatten().count())?;
        outln!(
            "routes: {} (announcements {}, withdrawals {}, state changes {})",
            m.rib_entries,
            m.announcements,
            m.withdrawals,
            m.state_changes
        )?;
        outln!(
            "multi-origin prefixes: {}; AS_SET origins: {}; prefixes without a value: {}",
            m.reduce.multi_origin,
            m.reduce.as_set_origins,
            m.reduce.without_value
        )?;
    }
    if let Some(m) = &r.mmdb {
        let epoch = m.build_epoch.map_or("unknown".into(), |e| e.to_string());
        outln!(
            "MaxMind DB: type {:?}, ip_version {}, record_size {}, {} nodes, build epoch {epoch}",
            m.database_type,
            m.ip_version,
            m.record_size,
            m.node_count
        )?;
        outln!(
            "networks: {} ({} distinct records; {} without the --value field)",
            r.records,
            m.records,
            m.without_field
        )?;
    }
    if let Some(g) = &r.ranges {
        outln!(
            "ranges: {} ({} overlapping an earlier one, where the later wins; {} not one CIDR prefix); values from column {}",
            g.ranges, g.overlapping, g.unaligned, g.value_column
        )?;
        if let Some(line) = g.header_line {
            outln!("header: line {line} (skipped)")?;
        }
    }
    outln!("bad lines/records: {}", r.bad)?;
    match &r.damage {
        Some(d) => outln!("damage: {d}")?,
        None => outln!("damage: none")?,
    }
    outln!("load time: {load_ms:.1} ms")?;
    Ok(())
}
