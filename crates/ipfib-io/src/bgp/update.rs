//! UPDATE messages and MRT RIB entries decoded into [`Update`](super::Update).

use super::attrs::{attributes, AttrScan, Form};
use super::cursor::{bgp_message, Cur, ErrorAction, WireError, UPDATE};
use super::decoded::{Update, WireConfig};
use super::nlri::nlri;

/// Decode the path attributes of an MRT RIB entry (RFC 6396 §4.3.4) into
/// `u`'s attribute fields: AS numbers of 4 bytes (TABLE_DUMP_V2) or 2
/// (TABLE_DUMP). An AS4_PATH is merged in either way (RFC 6793 §4.2.3: a
/// TABLE_DUMP_V2 AS_PATH still holds AS_TRANS where a collector stored
/// what a 2-byte peer sent; bgpkit-parser and mrtparse merge too). Errors as for an
/// UPDATE: an attribute that overruns the others is an `Err`; attribute
/// errors are in `u.errors`, and `u.treat_as_withdraw` says the route
/// must not be kept. Mandatory attributes are not required (dumps omit
/// NEXT_HOP for routes whose next hop is in MP_REACH).
pub fn decode_rib_entry_attrs(
    raw: &[u8],
    four_octet: bool,
    u: &mut Update,
) -> Result<(), WireError> {
    u.clear();
    let cfg = WireConfig {
        four_octet,
        ..WireConfig::default()
    };
    attributes(Cur::new(raw, 0), &cfg, Form::RibEntry, u)?;
    u.merge_as4_path();
    Ok(())
}

/// Decode one UPDATE (whole message, header included) into `u`.
///
/// Errors (session reset, RFC 7606 §3-5): the message framing (lengths
/// that overrun the message, withdrawn routes or NLRI that cannot be
/// parsed), a repeated or unparsable MP_REACH/MP_UNREACH, an MP_REACH
/// next hop of a length that hides where its NLRI start. Every other
/// attribute error is noted in `u.errors` and handled by its action.
pub fn decode_update(buf: &[u8], cfg: &WireConfig, u: &mut Update) -> Result<(), WireError> {
    u.clear();
    let (kind, mut c, _) = bgp_message(buf)?;
    if kind != UPDATE {
        return Err(c.bad(format!("expected an UPDATE (type 2), got type {kind}")));
    }
    let wlen = c.u16("withdrawn routes length")? as usize;
    let withdrawn = c.sub(wlen, "withdrawn routes")?;
    nlri(withdrawn, 1, cfg.addpath_v4, &mut u.withdrawn)?;
    let alen = c.u16("path attributes length")? as usize;
    let attrs = c.sub(alen, "path attributes")?;
    let announced = c;
    let form = Form::Update {
        nlri_follow: announced.left() > 0,
    };
    let AttrScan {
        seen,
        mp_unreach_empty,
    } = attributes(attrs, cfg, form, u)?;
    nlri(announced, 1, cfg.addpath_v4, &mut u.announced)?;
    // §3(d): missing well-known mandatory attributes, when there are
    // routes to announce (NEXT_HOP only for conventional NLRI).
    let conventional = u.announced.len() > u.mp_announced;
    if !u.treat_as_withdraw
        && (!u.announced.is_empty()
            || !u.vpn_announced.is_empty()
            || !u.labeled_announced.is_empty())
    {
        let mut missing: Vec<&str> = Vec::new();
        if !seen[1] {
            missing.push("ORIGIN");
        }
        if !seen[2] {
            missing.push("AS_PATH");
        }
        if conventional && !seen[3] {
            missing.push("NEXT_HOP");
        }
        if !missing.is_empty() {
            u.error(
                ErrorAction::TreatAsWithdraw,
                0,
                19,
                format!("missing mandatory attributes: {}", missing.join(", ")),
            );
        }
    }
    if !cfg.four_octet {
        u.merge_as4_path();
    }
    if u.treat_as_withdraw {
        let Update {
            announced,
            withdrawn,
            vpn_announced,
            vpn_withdrawn,
            labeled_announced,
            labeled_withdrawn,
            ..
        } = u;
        withdrawn.append(announced);
        vpn_withdrawn.append(vpn_announced);
        labeled_withdrawn.append(labeled_announced);
        u.mp_announced = 0;
    }
    let plain_eor = wlen == 0 && alen == 0 && announced.left() == 0;
    u.end_of_rib = plain_eor
        || (mp_unreach_empty.is_some()
            && u.announced.is_empty()
            && u.withdrawn.is_empty()
            && u.vpn_withdrawn.is_empty()
            && u.vpn_announced.is_empty()
            && u.labeled_withdrawn.is_empty()
            && u.labeled_announced.is_empty()
            && u.errors.is_empty());
    u.end_of_rib_family = match mp_unreach_empty {
        Some(f) if u.end_of_rib && !plain_eor => f,
        _ => (1, 1),
    };
    Ok(())
}
