//! `ipfib engines`: what the engine registry holds (every name the
//! commands accept, with a line each) and the kernels each engine has on
//! this CPU. Text for people, `--json` for scripts.

use crate::{CmdResult, Outcome};
use ipfib::engine::registry::{kernel_sets, ENGINES};
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let sets = kernel_sets();
    if args.json {
        let engines: Vec<_> = ENGINES
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "aliases": e.aliases,
                    "takes_bits": e.takes_bits,
                    "lookup": e.lookup,
                    "summary": e.summary,
                })
            })
            .collect();
        let kernels: serde_json::Map<_, _> = sets
            .iter()
            .map(|(s, _)| {
                let names = |ks: Vec<ipfib::engine::kernel::Kernel>| {
                    ks.into_iter().map(|k| k.to_string()).collect::<Vec<_>>()
                };
                (
                    s.engine().to_string(),
                    json!({
                        "all": names(s.all().collect()),
                        "supported": names(s.supported()),
                        "default": s.detect().to_string(),
                    }),
                )
            })
            .collect();
        outln!("{}", json!({ "engines": engines, "kernels": kernels }))?;
        return Ok(Outcome::Ok);
    }
    outln!("Engines (--engine NAME; S = direct-pointing bits, 0-24, default 18):")?;
    let width = ENGINES.iter().map(|e| e.name.len() + 4).max().unwrap_or(0);
    for e in ENGINES {
        let name = match e.takes_bits {
            true => format!("{}[:S]", e.name),
            false => e.name.to_string(),
        };
        let aliases = match e.aliases {
            [] => String::new(),
            a => format!(" (also: {})", a.join(", ")),
        };
        outln!("  {name:<width$}  {}{aliases}", e.summary)?;
    }
    outln!("Kernels on this CPU (--kernel NAME; * = the default):")?;
    for (s, kinds) in &sets {
        let here = s.supported();
        let list: Vec<String> = s
            .all()
            .map(|k| match (k == s.detect(), here.contains(&k)) {
                (true, _) => format!("{k}*"),
                (false, true) => k.to_string(),
                (false, false) => format!("({k}: not here)"),
            })
            .collect();
        let who: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        outln!("  {}: {}", who.join(", "), list.join(" "))?;
    }
    Ok(Outcome::Ok)
}
