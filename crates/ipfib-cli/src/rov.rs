//! `ipfib rov`: RPKI route origin validation (RFC 6811) and ASPA path
//! verification of a RIB dump or a table, offline.
//!
//! An MRT RIB dump is loaded into a RIB (every peer's routes, with AS
//! paths): each route gets a ROV state and an ASPA status. A table (text,
//! IPASN, pfx2as) gives one route per prefix and origin: a ROV state only
//! (no path). pfx2as multi-origin values (`701_1239`) are one route per
//! origin; an AS set (`701,1239`) is origin NONE (RFC 6811: it matches no
//! VRP).

use std::collections::HashMap;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use ipfib::prefix::AnyPrefix;
use ipfib_rpki::{AspaStatus, Aspas, RouteOrigin, Rov, Slurm, Vrp, VrpSet};
use serde_json::json;

use crate::{CmdResult, Outcome};

/// Validate routes against RPKI data: ROV (RFC 6811) for every route,
/// ASPA (upstream verification) for routes with AS paths; per-route lines
/// on stdout, a summary per state and per origin AS on stderr.
#[derive(clap::Args)]
pub struct Args {
    /// The routes: an MRT RIB dump (every peer's routes), or a table whose
    /// values are origin ASNs (text, IPASN, pfx2as); compressed or not.
    input: PathBuf,
    /// VRPs (and ASPAs, when the file has them): rpki-client or Routinator
    /// JSON, Routinator CSV (repeatable).
    #[arg(long, value_name = "FILE", required_unless_present = "generate_vrps")]
    vrps: Vec<PathBuf>,
    /// ASPAs from another file of the same formats (repeatable).
    #[arg(long, value_name = "FILE")]
    aspa: Vec<PathBuf>,
    /// SLURM local exceptions (RFC 8416) applied on top (repeatable).
    #[arg(long, value_name = "FILE")]
    slurm: Vec<PathBuf>,
    /// Per-route lines: text (tab-separated: prefix, origin, ROV state,
    /// ASPA status, peer) or json (one object per line).
    #[arg(long, default_value = "text")]
    output: String,
    /// Print only routes in this ROV state: valid, invalid, not-found.
    #[arg(long)]
    only: Option<String>,
    /// Print the summary alone, on stdout (no per-route lines).
    #[arg(long)]
    summary: bool,
    /// Origin ASes listed in the summary, by routes (0: all).
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Instead of validating: write a VRP and ASPA set drawn from the
    /// input's routes (rpki-client JSON) to FILE, for benchmarks and
    /// tests. A fifth of the address space (by /16 or /32) gets no VRP;
    /// elsewhere about 70% of (prefix, origin) pairs get one, some with a
    /// longer max length, others one with a wrong origin or at a shorter
    /// covering prefix, some a second origin; ASPAs from the paths (30%
    /// of customers, some missing a provider they use).
    #[arg(long, value_name = "FILE")]
    generate_vrps: Option<PathBuf>,
    /// Seed of --generate-vrps.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// One route to validate.
struct Item<'a> {
    prefix: AnyPrefix,
    origin: RouteOrigin,
    rov: Rov,
    aspa: Option<AspaStatus>,
    peer: Option<(&'a str, u32)>,
}

fn rov_name(r: Rov) -> &'static str {
    match r.reason() {
        None => r.as_str(),
        Some("as") => "invalid-as",
        Some(_) => "invalid-length",
    }
}

fn origin_text(o: RouteOrigin) -> String {
    match o {
        RouteOrigin::As(a) => format!("AS{a}"),
        RouteOrigin::None => "NONE".into(),
    }
}

/// Whether the file starts with an MRT header (after decompression): a
/// record type of TABLE_DUMP, TABLE_DUMP_V2 or BGP4MP, whose high byte is
/// a zero no text table has.
fn is_mrt(path: &Path) -> Result<bool, Box<dyn std::error::Error>> {
    let mut r = ipfib_io::open_maybe_compressed(path)?;
    let mut head = [0u8; 12];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got == 12 && head[4] == 0 && matches!(head[5], 12 | 13 | 16 | 17))
}

/// The VRP and ASPA sets the flags name, SLURM applied.
fn rpki_data(args: &Args) -> Result<(ipfib_rpki::Vrps, Aspas), Box<dyn std::error::Error>> {
    let mut vrps = VrpSet::new();
    let mut all_aspas = Vec::new();
    for f in &args.vrps {
        let p = ipfib_rpki::load_payloads(f)?;
        vrps.extend(p.vrps);
        all_aspas.extend(p.aspas);
    }
    for f in &args.aspa {
        all_aspas.extend(ipfib_rpki::load_payloads(f)?.aspas);
    }
    let (_, mut aspas) = ipfib_rpki::Payloads {
        vrps: Vec::new(),
        aspas: all_aspas,
    }
    .into_sets();
    let slurm = args
        .slurm
        .iter()
        .map(|f| Slurm::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    Slurm::apply_all(&slurm, &mut vrps, &mut aspas);
    Ok((vrps.snapshot(), aspas))
}

/// Origins of a table value: one per `_`-separated member; an AS set
/// (`,`) is NONE; anything not an AS number is an error.
fn table_origins(value: &str) -> Result<Vec<RouteOrigin>, String> {
    value
        .split('_')
        .map(|m| {
            if m.contains(',') {
                return Ok(RouteOrigin::None);
            }
            let t = m.trim();
            let t = t.strip_prefix("AS").unwrap_or(t);
            t.parse::<u32>()
                .map(RouteOrigin::As)
                .map_err(|_| format!("value {value:?} is not an origin AS"))
        })
        .collect()
}

pub fn run(args: Args) -> CmdResult {
    let json_out = match args.output.as_str() {
        "text" => false,
        "json" => true,
        o => return Err(format!("--output {o:?}: expected text or json").into()),
    };
    let only = match args.only.as_deref() {
        None => None,
        Some(o @ ("valid" | "invalid" | "not-found")) => Some(o.to_string()),
        Some(o) => {
            return Err(format!("--only {o:?}: expected valid, invalid or not-found").into())
        }
    };
    let mrt = is_mrt(&args.input)?;
    if let Some(out) = &args.generate_vrps {
        return generate(&args, mrt, out);
    }
    let t_rpki = Instant::now();
    let (vrps, aspas) = rpki_data(&args)?;
    let rpki_secs = t_rpki.elapsed().as_secs_f64();
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut summary = Summary::default();
    let print_routes = !args.summary;
    let mut emit = |it: &Item<'_>,
                    out: &mut BufWriter<std::io::StdoutLock<'_>>|
     -> std::io::Result<()> {
        summary.add(it);
        if !print_routes || only.as_deref().is_some_and(|o| o != it.rov.as_str()) {
            return Ok(());
        }
        if json_out {
            let v = json!({
                "prefix": it.prefix.to_string(),
                "origin_asn": match it.origin { RouteOrigin::As(a) => Some(a), RouteOrigin::None => None },
                "rov": it.rov.as_str(),
                "rov_reason": it.rov.reason(),
                "aspa": it.aspa.map(AspaStatus::as_str),
                "peer_address": it.peer.map(|p| p.0),
                "peer_asn": it.peer.map(|p| p.1),
            });
            serde_json::to_writer(&mut *out, &v)?;
            out.write_all(b"\n")
        } else {
            writeln!(
                out,
                "{}\t{}\t{}\t{}\t{}",
                it.prefix,
                origin_text(it.origin),
                rov_name(it.rov),
                it.aspa.map_or("-", AspaStatus::as_str),
                it.peer.map_or("-", |p| p.0)
            )
        }
    };
    let t_load = Instant::now();
    let mut had_problems = false;
    let (load_secs, check_secs);
    if mrt {
        let rib = load_rib(&args.input, &mut had_problems)?;
        load_secs = t_load.elapsed().as_secs_f64();
        let names: Map<u32, String> = rib
            .peers()
            .all()
            .map(|p| (p.id, p.key.address.to_string()))
            .collect();
        let snap = ipfib_rpki::Snapshot {
            vrps: vrps.into(),
            aspas: aspas.into(),
            ..Default::default()
        };
        let t = Instant::now();
        let mut err = None;
        ipfib_collect::rpki::for_each_route(&rib, &snap, |prefix, e, asn, s| {
            if err.is_some() {
                return;
            }
            let it = Item {
                prefix: *prefix,
                origin: s.origin,
                rov: s.rov,
                aspa: Some(s.aspa),
                peer: names.get(&e.peer).map(|n| (n.as_str(), asn)),
            };
            if let Err(e) = emit(&it, &mut out) {
                err = Some(e);
            }
        });
        check_secs = t.elapsed().as_secs_f64();
        if let Some(e) = err {
            return Err(e.into());
        }
    } else {
        let opts = ipfib_io::TableOptions::from_names("auto", None, None, false, false)?;
        let (loaded, _) = crate::load::load_file(&args.input, &opts)?;
        had_problems |= crate::load::report_problems(&args.input, &loaded.report);
        load_secs = t_load.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut cur = ipfib_rpki::Cursor::default();
        for r in &loaded.routes {
            let origins = table_origins(&r.value)
                .map_err(|e| format!("{}: line {}: {e}", args.input.display(), r.line))?;
            for origin in origins {
                let it = Item {
                    prefix: r.prefix,
                    origin,
                    rov: vrps.validate_at(&r.prefix, origin, &mut cur),
                    aspa: None,
                    peer: None,
                };
                emit(&it, &mut out)?;
            }
        }
        check_secs = t.elapsed().as_secs_f64();
    }
    out.flush()?;
    drop(out);
    let text = summary.render(args.top, json_out, [rpki_secs, load_secs, check_secs]);
    if args.summary {
        // Not print!: a reader gone (`| head`) is an error main() treats
        // as done, not a panic.
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
    } else {
        eprint!("{text}");
    }
    Ok(if had_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}

/// Routes per state, per ASPA status and per origin AS.
#[derive(Default)]
struct Summary {
    rov: [u64; 4],
    aspa: [u64; 3],
    with_path: u64,
    per_origin: Map<RouteOrigin, [u64; 4]>,
}

/// foldhash maps: the summary and the peer names are hashed once per route.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

impl Summary {
    fn add(&mut self, it: &Item<'_>) {
        self.rov[it.rov.index()] += 1;
        self.per_origin.entry(it.origin).or_default()[it.rov.index()] += 1;
        if let Some(a) = it.aspa {
            self.aspa[a.index()] += 1;
            self.with_path += 1;
        }
    }

    fn render(&self, top: usize, json_out: bool, secs: [f64; 3]) -> String {
        let routes: u64 = self.rov.iter().sum();
        let mut origins: Vec<(&RouteOrigin, &[u64; 4])> = self.per_origin.iter().collect();
        origins.sort_by(|a, b| {
            b.1.iter()
                .sum::<u64>()
                .cmp(&a.1.iter().sum::<u64>())
                .then_with(|| origin_text(*a.0).cmp(&origin_text(*b.0)))
        });
        if top > 0 {
            origins.truncate(top);
        }
        let rate = routes as f64 / secs[2].max(1e-9);
        if json_out {
            let states = |c: &[u64; 4]| {
                let m: serde_json::Map<String, serde_json::Value> = Rov::ALL
                    .iter()
                    .map(|r| (rov_name(*r).to_string(), c[r.index()].into()))
                    .collect();
                m
            };
            let aspa: serde_json::Map<String, serde_json::Value> = AspaStatus::ALL
                .iter()
                .map(|a| (a.as_str().to_string(), self.aspa[a.index()].into()))
                .collect();
            let v = json!({
                "routes": routes,
                "rov": states(&self.rov),
                "aspa": if self.with_path > 0 { Some(aspa) } else { None },
                "origins": origins.iter().map(|(o, c)| json!({
                    "origin": origin_text(**o), "routes": c.iter().sum::<u64>(), "rov": states(c),
                })).collect::<Vec<_>>(),
                "seconds": { "rpki_load": secs[0], "routes_load": secs[1], "validate": secs[2] },
                "routes_per_second": rate,
            });
            return format!("{v}\n");
        }
        let mut s = String::new();
        let pct = |n: u64| {
            if routes == 0 {
                0.0
            } else {
                100.0 * n as f64 / routes as f64
            }
        };
        s += &format!("routes {routes}\n");
        for r in Rov::ALL {
            let n = self.rov[r.index()];
            s += &format!("rov {:<15} {n:>10} {:6.2}%\n", rov_name(r), pct(n));
        }
        if self.with_path > 0 {
            for a in AspaStatus::ALL {
                let n = self.aspa[a.index()];
                s += &format!("aspa {:<14} {n:>10} {:6.2}%\n", a.as_str(), pct(n));
            }
        }
        s += &format!(
            "{:<12} {:>10} {:>10} {:>10} {:>14} {:>10}\n",
            "origin", "routes", "valid", "invalid-as", "invalid-length", "not-found"
        );
        for (o, c) in &origins {
            s += &format!(
                "{:<12} {:>10} {:>10} {:>10} {:>14} {:>10}\n",
                origin_text(**o),
                c.iter().sum::<u64>(),
                c[Rov::Valid.index()],
                c[Rov::InvalidOrigin.index()],
                c[Rov::InvalidLength.index()],
                c[Rov::NotFound.index()]
            );
        }
        s += &format!(
            "took: RPKI data {:.3} s, routes {:.3} s, validation {:.3} s ({:.1}M routes/s)\n",
            secs[0],
            secs[1],
            secs[2],
            rate / 1e6
        );
        s
    }
}

/// A small seeded generator (splitmix64) for --generate-vrps.
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// A number naming a prefix, to seed per-block choices.
fn block_key(p: &AnyPrefix) -> u64 {
    match p {
        AnyPrefix::V4(x) => u64::from(x.addr()) << 8 | u64::from(x.len()),
        AnyPrefix::V6(x) => ((x.addr() >> 64) as u64) ^ u64::from(x.len()),
    }
}

fn truncate(p: &AnyPrefix, len: u8) -> AnyPrefix {
    match p {
        AnyPrefix::V4(x) => AnyPrefix::V4(x.truncate(len)),
        AnyPrefix::V6(x) => AnyPrefix::V6(x.truncate(len)),
    }
}

/// An MRT RIB dump loaded into a RIB: what is complete is used, each
/// skipped record and the damage named on stderr (`had_problems` set: the
/// command exits 1).
fn load_rib(
    path: &Path,
    had_problems: &mut bool,
) -> Result<ipfib_rib::Rib, Box<dyn std::error::Error>> {
    let rib = ipfib_rib::Rib::try_new()?;
    let report = ipfib_rib::mrt::load(path, &rib)?;
    rib.sync();
    for e in &report.errors {
        eprintln!("ipfib: {}: {e}", path.display());
        *had_problems = true;
    }
    if let Some(d) = &report.damage {
        eprintln!("ipfib: {}: {d}", path.display());
        *had_problems = true;
    }
    Ok(rib)
}

/// `--generate-vrps`: VRPs and ASPAs drawn from the input's routes.
fn generate(args: &Args, mrt: bool, out: &Path) -> CmdResult {
    let mut pairs: Vec<(AnyPrefix, u32)> = Vec::new();
    // Customer -> providers seen upstream of it in paths (origin side first).
    let mut ups: HashMap<u32, std::collections::BTreeSet<u32>> = HashMap::new();
    let mut had_problems = false;
    if mrt {
        let rib = load_rib(&args.input, &mut had_problems)?;
        let snap = ipfib_rpki::Snapshot::default();
        ipfib_collect::rpki::for_each_route(&rib, &snap, |prefix, e, asn, _| {
            if let RouteOrigin::As(o) =
                ipfib_rpki::route_origin(e.attrs.as_path.segments().map(|s| (s.kind, s.asns)), asn)
            {
                pairs.push((*prefix, o));
            }
            let mut path = e.attrs.as_path.flat();
            path.dedup();
            for w in path.windows(2) {
                // Wire order: w[0] is nearer the collector, the provider.
                ups.entry(w[1]).or_default().insert(w[0]);
            }
        });
    } else {
        let opts = ipfib_io::TableOptions::from_names("auto", None, None, false, false)?;
        let (loaded, _) = crate::load::load_file(&args.input, &opts)?;
        had_problems |= crate::load::report_problems(&args.input, &loaded.report);
        for r in &loaded.routes {
            for o in table_origins(&r.value).unwrap_or_default() {
                if let RouteOrigin::As(a) = o {
                    pairs.push((r.prefix, a));
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    let mut rng = Mix(args.seed);
    let mut vrps: Vec<Vrp> = Vec::new();
    for (p, o) in &pairs {
        let width = if p.family() == 4 { 32 } else { 128 };
        // A fifth of the address space (by /16 or /32 block) has no ROA at
        // all: its routes are not-found.
        let block = truncate(p, p.len().min(if width == 32 { 16 } else { 32 }));
        if Mix(args.seed ^ block_key(&block)).next().is_multiple_of(5) {
            continue;
        }
        if rng.chance(0.70) {
            let extra = if rng.chance(0.10) {
                1 + (rng.next() % 8) as u8
            } else {
                0
            };
            vrps.push(Vrp::new(*p, (p.len() + extra).min(width), *o)?);
        } else if rng.chance(0.10) {
            // A wrong origin: the route is invalid (as).
            vrps.push(Vrp::new(*p, p.len(), o.wrapping_add(1000))?);
        } else if rng.chance(0.08) && p.len() > 8 {
            // The origin's VRP at a shorter prefix, max length that prefix:
            // the route is invalid (length).
            let len = p.len() - 1 - (rng.next() % 4) as u8;
            let q = truncate(p, len.max(8));
            vrps.push(Vrp::new(q, q.len(), *o)?);
        }
        if rng.chance(0.02) {
            // A second origin for the same prefix (overlapping VRPs).
            vrps.push(Vrp::new(*p, p.len(), o.wrapping_add(1))?);
        }
    }
    vrps.sort_unstable();
    vrps.dedup();
    let mut aspas: Vec<(u32, Vec<u32>)> = Vec::new();
    let mut customers: Vec<&u32> = ups.keys().collect();
    customers.sort_unstable();
    for c in customers {
        if rng.chance(0.30) {
            let mut providers: Vec<u32> = ups[c].iter().copied().collect();
            if rng.chance(0.15) && !providers.is_empty() {
                // Leave one out: paths through it become invalid.
                let drop = (rng.next() % providers.len() as u64) as usize;
                providers.remove(drop);
            }
            aspas.push((*c, providers));
        }
    }
    let doc = json!({
        "metadata": { "generated": "ipfib rov --generate-vrps", "input": args.input.display().to_string(), "seed": args.seed },
        "roas": vrps.iter().map(|v| json!({"asn": v.asn, "prefix": v.prefix.to_string(), "maxLength": v.max_len})).collect::<Vec<_>>(),
        "aspas": aspas.iter().map(|(c, p)| json!({"customer_asid": c, "providers": p})).collect::<Vec<_>>(),
    });
    let tmp = out.with_extension("tmp");
    {
        let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
        serde_json::to_writer(&mut w, &doc)?;
        w.write_all(b"\n")?;
        w.flush()?;
    }
    std::fs::rename(&tmp, out)?;
    eprintln!(
        "ipfib rov: {}: {} VRPs, {} ASPAs from {} (prefix, origin) pairs",
        out.display(),
        vrps.len(),
        aspas.len(),
        pairs.len()
    );
    Ok(if had_problems {
        Outcome::BadInput
    } else {
        Outcome::Ok
    })
}
