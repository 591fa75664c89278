//! VRP and ASPA files: the JSON of rpki-client and Routinator, Routinator's
//! CSV, and SLURM local exceptions (RFC 8416, with the ASPA members of its
//! version 2 draft) applied on top.
//!
//! Formats are told apart by content, not name: a JSON object with
//! `slurmVersion` is SLURM, one with `roas` (and optionally `aspas`) is a
//! validator's output, anything else is read as CSV (`ASN,prefix,max
//! length[,...]` with an optional header line). Errors name the file and
//! the line (CSV) or the line and column (JSON), and for a bad field
//! inside valid JSON, its place (`roas[12].prefix`).

use std::path::Path;

use ipfib::prefix::{AnyPrefix, HostBits};
use serde::Deserialize;

use crate::aspa::{Aspa, Aspas};
use crate::vrp::{Vrp, VrpSet};

/// A file that could not be read as VRPs, ASPAs or SLURM.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {what}")]
pub struct LoadError {
    pub file: String,
    pub what: String,
}

/// What a validator's output file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payloads {
    pub vrps: Vec<Vrp>,
    pub aspas: Vec<Aspa>,
}

impl Payloads {
    /// The VRPs as a set and the ASPAs as a map (a customer listed twice
    /// gets the union of its providers, as RTR caches merge them).
    pub fn into_sets(self) -> (VrpSet, Aspas) {
        let vrps: VrpSet = self.vrps.into_iter().collect();
        let mut merged: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for a in self.aspas {
            merged.entry(a.customer).or_default().extend(a.providers);
        }
        let aspas = merged.into_iter().map(|(c, p)| Aspa::new(c, p)).collect();
        (vrps, aspas)
    }
}

/// An ASN as validators write it: `13335`, `"13335"` or `"AS13335"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum AsnText {
    N(u64),
    S(String),
}

fn asn(v: &AsnText) -> Result<u32, String> {
    let n = match v {
        AsnText::N(n) => *n,
        AsnText::S(s) => {
            let t = s.trim();
            let t = t
                .strip_prefix("AS")
                .or_else(|| t.strip_prefix("as"))
                .unwrap_or(t);
            t.parse::<u64>()
                .map_err(|_| format!("{} is not an AS number", shown(s)))?
        }
    };
    u32::try_from(n).map_err(|_| format!("AS number {n} is over 32 bits"))
}

fn prefix(s: &str) -> Result<AnyPrefix, String> {
    // The parser's message quotes its input whole: a long one is not a
    // prefix (the longest, IPv6, is 43 characters).
    if s.len() > 64 {
        return Err(format!("{}: too long to be a prefix", shown(s)));
    }
    AnyPrefix::parse(s.trim(), HostBits::Reject).map_err(|e| format!("{}: {e}", shown(s)))
}

/// A field as errors show it: quoted, escaped, at most 64 characters.
fn shown(s: &str) -> String {
    let mut t: String = s.chars().take(64).collect();
    if t.len() < s.len() {
        t.push_str("...");
    }
    format!("{t:?}")
}

#[derive(Deserialize)]
struct RoaJson {
    asn: AsnText,
    prefix: String,
    #[serde(alias = "max_length", alias = "maxPrefixLength")]
    #[serde(rename = "maxLength")]
    max_length: Option<u16>,
}

/// A provider as written: a number, a string, or (older rpki-client) an
/// object with `asid`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ProviderJson {
    Asn(AsnText),
    Obj { asid: AsnText },
}

#[derive(Deserialize)]
struct AspaJson {
    // rpki-client, the SLURM draft, Routinator's SLURM.
    #[serde(alias = "customer_asid", alias = "customerAsid", alias = "customerAsn")]
    customer: AsnText,
    #[serde(alias = "provider_set", alias = "providerSet", alias = "providerAsns")]
    providers: Vec<ProviderJson>,
}

#[derive(Deserialize)]
struct ValidatorJson {
    roas: Vec<RoaJson>,
    #[serde(default)]
    aspas: Vec<AspaJson>,
}

fn roa(r: &RoaJson) -> Result<Vrp, String> {
    let p = prefix(&r.prefix).map_err(|e| format!("prefix {e}"))?;
    let max = r.max_length.unwrap_or(p.len() as u16);
    let max = u8::try_from(max).map_err(|_| format!("max length {max} too long"))?;
    let a = asn(&r.asn).map_err(|e| format!("asn: {e}"))?;
    Vrp::new(p, max, a)
}

fn aspa(a: &AspaJson) -> Result<Aspa, String> {
    let c = asn(&a.customer).map_err(|e| format!("customer: {e}"))?;
    let mut ps = Vec::with_capacity(a.providers.len());
    for (j, p) in a.providers.iter().enumerate() {
        let v = match p {
            ProviderJson::Asn(v) | ProviderJson::Obj { asid: v } => v,
        };
        ps.push(asn(v).map_err(|e| format!("providers[{j}]: {e}"))?);
    }
    Ok(Aspa::new(c, ps))
}

fn json_error(file: &str, e: serde_json::Error) -> LoadError {
    LoadError {
        file: file.to_string(),
        what: format!("line {} column {}: {e}", e.line(), e.column()),
    }
}

fn field_error(file: &str, place: String, what: String) -> LoadError {
    LoadError {
        file: file.to_string(),
        what: format!("{place}: {what}"),
    }
}

/// Reads a validator's output (JSON or CSV) from bytes; `file` names it
/// in errors.
pub fn parse_payloads(bytes: &[u8], file: &str) -> Result<Payloads, LoadError> {
    if first_non_space(bytes) == Some(b'{') {
        let v: ValidatorJson = serde_json::from_slice(bytes).map_err(|e| {
            let mut err = json_error(file, e);
            if bytes.windows(14).any(|w| w == b"\"slurmVersion\"") {
                err.what += " (this is a SLURM file: give it with --slurm)";
            }
            err
        })?;
        let mut out = Payloads::default();
        for (i, r) in v.roas.iter().enumerate() {
            out.vrps
                .push(roa(r).map_err(|e| field_error(file, format!("roas[{i}]"), e))?);
        }
        for (i, a) in v.aspas.iter().enumerate() {
            out.aspas
                .push(aspa(a).map_err(|e| field_error(file, format!("aspas[{i}]"), e))?);
        }
        return Ok(out);
    }
    parse_csv(bytes, file)
}

fn first_non_space(bytes: &[u8]) -> Option<u8> {
    bytes.iter().copied().find(|b| !b.is_ascii_whitespace())
}

fn parse_csv(bytes: &[u8], file: &str) -> Result<Payloads, LoadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| LoadError {
        file: file.to_string(),
        what: format!("byte {}: not UTF-8 text, JSON or CSV", e.valid_up_to()),
    })?;
    let mut out = Payloads::default();
    let mut header = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let err = |what: String| LoadError {
            file: file.to_string(),
            what: format!("line {}: {what}", n + 1),
        };
        // Routinator's header line ("ASN,IP Prefix,Max Length,Trust
        // Anchor"), first only: anything else that is not a VRP is an error.
        let lower = line.to_ascii_lowercase();
        if !header && out.vrps.is_empty() && lower.starts_with("asn,") && lower.contains("prefix") {
            header = true;
            continue;
        }
        if fields.len() < 3 {
            return Err(err(format!(
                "{} comma-separated fields ({}), want ASN,prefix,max length",
                fields.len(),
                shown(line)
            )));
        }
        let a = asn(&AsnText::S(fields[0].to_string())).map_err(&err)?;
        let p = prefix(fields[1]).map_err(|e| err(format!("prefix {e}")))?;
        let max: u8 = fields[2]
            .parse()
            .map_err(|_| err(format!("max length {} is not a number", shown(fields[2]))))?;
        out.vrps.push(Vrp::new(p, max, a).map_err(&err)?);
    }
    // A file with nothing in it (an empty or truncated output, a page of
    // HTML) would silently turn validation off: refuse it.
    if out.vrps.is_empty() {
        return Err(LoadError {
            file: file.to_string(),
            what: "no VRP in it (an empty set is written as JSON: {\"roas\": []})".into(),
        });
    }
    Ok(out)
}

/// Reads a validator's output file (JSON or CSV).
pub fn load_payloads(path: &Path) -> Result<Payloads, LoadError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| LoadError {
        file: name.clone(),
        what: e.to_string(),
    })?;
    parse_payloads(&bytes, &name)
}

/// SLURM local exceptions (RFC 8416; `aspaFilters` and `aspaAssertions`
/// from its version 2 draft).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Slurm {
    /// (prefix, asn): removes every VRP under the prefix (itself or more
    /// specific) and of the AS, either of which may be absent.
    pub prefix_filters: Vec<(Option<AnyPrefix>, Option<u32>)>,
    pub prefix_assertions: Vec<Vrp>,
    /// Customers whose ASPAs are removed.
    pub aspa_filters: Vec<u32>,
    pub aspa_assertions: Vec<Aspa>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlurmJson {
    slurm_version: u32,
    #[serde(default)]
    validation_output_filters: FiltersJson,
    #[serde(default)]
    locally_added_assertions: AssertionsJson,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct FiltersJson {
    #[serde(default)]
    prefix_filters: Vec<PrefixFilterJson>,
    #[serde(default)]
    aspa_filters: Vec<AspaFilterJson>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AssertionsJson {
    #[serde(default)]
    prefix_assertions: Vec<RoaJson>,
    #[serde(default)]
    aspa_assertions: Vec<AspaJson>,
}

#[derive(Deserialize)]
struct PrefixFilterJson {
    prefix: Option<String>,
    asn: Option<AsnText>,
}

#[derive(Deserialize)]
struct AspaFilterJson {
    #[serde(alias = "customerAsid", alias = "customer_asid", alias = "customerAsn")]
    customer: AsnText,
}

impl Slurm {
    /// Parses a SLURM file's bytes; `file` names it in errors.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Slurm, LoadError> {
        let s: SlurmJson = serde_json::from_slice(bytes).map_err(|e| json_error(file, e))?;
        if s.slurm_version != 1 && s.slurm_version != 2 {
            return Err(field_error(
                file,
                "slurmVersion".into(),
                format!("version {} (1 and 2 are known)", s.slurm_version),
            ));
        }
        let mut out = Slurm::default();
        let place = |what: &str, i: usize| format!("{what}[{i}]");
        for (i, f) in s
            .validation_output_filters
            .prefix_filters
            .iter()
            .enumerate()
        {
            let at = place("prefixFilters", i);
            let p = f
                .prefix
                .as_deref()
                .map(prefix)
                .transpose()
                .map_err(|e| field_error(file, at.clone(), e))?;
            let a = f
                .asn
                .as_ref()
                .map(asn)
                .transpose()
                .map_err(|e| field_error(file, at.clone(), e))?;
            if p.is_none() && a.is_none() {
                return Err(field_error(file, at, "neither prefix nor asn".into()));
            }
            out.prefix_filters.push((p, a));
        }
        for (i, f) in s.validation_output_filters.aspa_filters.iter().enumerate() {
            out.aspa_filters
                .push(asn(&f.customer).map_err(|e| field_error(file, place("aspaFilters", i), e))?);
        }
        for (i, r) in s
            .locally_added_assertions
            .prefix_assertions
            .iter()
            .enumerate()
        {
            out.prefix_assertions
                .push(roa(r).map_err(|e| field_error(file, place("prefixAssertions", i), e))?);
        }
        for (i, a) in s
            .locally_added_assertions
            .aspa_assertions
            .iter()
            .enumerate()
        {
            out.aspa_assertions
                .push(aspa(a).map_err(|e| field_error(file, place("aspaAssertions", i), e))?);
        }
        Ok(out)
    }

    pub fn load(path: &Path) -> Result<Slurm, LoadError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| LoadError {
            file: name.clone(),
            what: e.to_string(),
        })?;
        Slurm::parse(&bytes, &name)
    }

    /// Whether filter `f` removes `v` (RFC 8416 §3.3.1: a filter's prefix
    /// matches VRPs of that prefix or more specific; both members present
    /// must match).
    pub fn filters(&self, v: &Vrp) -> bool {
        self.prefix_filters
            .iter()
            .any(|(p, a)| p.is_none_or(|p| covers(&p, &v.prefix)) && a.is_none_or(|a| a == v.asn))
    }

    /// Whether this file asserts `v` (adds it whatever the sources say).
    pub fn asserts(&self, v: &Vrp) -> bool {
        self.prefix_assertions.contains(v)
    }

    /// The ASPA half of [`Slurm::apply_all`].
    pub fn apply_aspas_all(files: &[Slurm], aspas: &mut Aspas) {
        for f in files {
            for c in &f.aspa_filters {
                aspas.remove(*c);
            }
        }
        for f in files {
            for a in &f.aspa_assertions {
                aspas.insert(a.clone());
            }
        }
    }

    /// Applies the exceptions: filters first, then assertions (RFC 8416 §4).
    /// Several files: [`Slurm::apply_all`].
    pub fn apply(&self, vrps: &mut VrpSet, aspas: &mut Aspas) {
        Slurm::apply_all(std::slice::from_ref(self), vrps, aspas)
    }

    /// Applies several files' exceptions as one: every file's filters,
    /// then every file's assertions, so no file's filter removes another
    /// file's assertion and the order of the files does not matter.
    pub fn apply_all(files: &[Slurm], vrps: &mut VrpSet, aspas: &mut Aspas) {
        if files.iter().any(|f| !f.prefix_filters.is_empty()) {
            vrps.retain(|v| !files.iter().any(|f| f.filters(v)));
        }
        for f in files {
            vrps.extend(f.prefix_assertions.iter().copied());
        }
        Slurm::apply_aspas_all(files, aspas);
    }
}

/// Whether `outer` covers `inner` (same family, equal or shorter).
pub fn covers(outer: &AnyPrefix, inner: &AnyPrefix) -> bool {
    match (outer, inner) {
        (AnyPrefix::V4(a), AnyPrefix::V4(b)) => a.covers(b),
        (AnyPrefix::V6(a), AnyPrefix::V6(b)) => a.covers(b),
        _ => false,
    }
}
