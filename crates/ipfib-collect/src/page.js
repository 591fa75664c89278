"use strict";
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const path = (p) => (p || []).map((x) => Array.isArray(x) ? "{" + x.join(",") + "}" : x).join(" ");

function status(text, error) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

// With --http-token-file, open the page as /#token=TOKEN: the fragment
// never reaches the server or its logs; the token stays in this tab.
const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
if (fromHash) { sessionStorage.setItem("ipfib-token", fromHash); history.replaceState(null, "", location.pathname + location.search); }
const token = sessionStorage.getItem("ipfib-token");

async function getJSON(url) {
  const r = await fetch(url, token ? { headers: { Authorization: "Bearer " + token } } : {});
  const body = await r.json().catch(() => ({}));
  return { status: r.status, body };
}

// RPKI statuses (with --rtr or --vrps): a badge per route, and the
// covering VRPs of the chosen route.
function rpki(r) {
  if (r.rov === undefined) return "";
  const why = r.rov_reason ? ` (${esc(r.rov_reason)})` : "";
  return `<span class="rov ${esc(r.rov)}">ROV ${esc(r.rov)}${why}</span> <span class="aspa ${esc(r.aspa)}">ASPA ${esc(r.aspa)}</span>`;
}

function showVrps(chosen) {
  const v = $("vrps");
  if (!chosen || chosen.vrps === undefined) { v.hidden = true; return; }
  v.hidden = false;
  v.innerHTML = chosen.vrps.length === 0
    ? `No VRP covers ${esc(chosen.prefix)}: ROV not-found.`
    : `VRPs covering ${esc(chosen.prefix)}: ` + chosen.vrps.map((x) => `<code>${esc(x.prefix)}-${esc(x.max_length)} AS${esc(x.asn)}</code>`).join(", ");
}

function show(routes, chosen) {
  const hasRpki = routes.some((r) => r.rov !== undefined);
  $("rpki-head").hidden = !hasRpki;
  showVrps(chosen);
  const tbody = $("routes").querySelector("tbody");
  tbody.innerHTML = "";
  for (const r of routes) {
    const tr = document.createElement("tr");
    if (chosen && r.peer === chosen.peer && r.path_id === chosen.path_id && r.prefix === chosen.prefix) tr.className = "chosen";
    tr.innerHTML = `<td><code>${esc(r.prefix)}</code></td>
      <td>${r.rib === "loc-rib" ? "router " + esc(r.peer_bgp_id) : esc(r.peer_address)} <span class="muted">AS${esc(r.peer_asn)} #${esc(r.peer)}</span></td>
      <td>${esc(r.rib)}</td><td><code>${esc(path(r.as_path))}</code></td>
      <td><code>${esc(r.next_hop)}</code></td>
      <td><code>${esc((r.communities || []).join(" "))}</code></td>
      <td><code>${esc((r.large_communities || []).join(" "))}</code></td>
      <td>${esc(r.origin)}</td><td>${esc(r.med)}</td><td>${esc(r.local_pref)}</td>` +
      (hasRpki ? `<td>${rpki(r)}</td>` : "");
    tbody.appendChild(tr);
  }
  $("routes").hidden = routes.length === 0;
}

async function search(q) {
  q = q.trim();
  if (!q) return;
  history.replaceState(null, "", "?q=" + encodeURIComponent(q));
  status("Looking up " + q + " ...");
  try {
    let chosen = null, prefix = q;
    if (!q.includes("/")) {
      const l = await getJSON("/api/v1/lookup?ip=" + encodeURIComponent(q));
      if (l.status === 404) { show([], null); status("No route covers " + q + "."); return; }
      if (l.status !== 200) { show([], null); status(l.body.error || ("error " + l.status), true); return; }
      chosen = l.body; prefix = l.body.prefix;
    }
    await page(prefix, chosen, null);
  } catch (e) {
    status("Request failed: " + e, true);
  }
}

// One page of a prefix's routes (a prefix can have more routes than one
// answer holds: "Next page" follows next_cursor).
async function page(prefix, chosen, cursor) {
  let url = "/api/v1/routes?match=exact&limit=500&prefix=" + encodeURIComponent(prefix);
  if (cursor) url += "&cursor=" + encodeURIComponent(cursor);
  const r = await getJSON(url);
  if (r.status !== 200) { show([], null); status(r.body.error || ("error " + r.status), true); return; }
  show(r.body.routes, chosen);
  const origin = chosen ? ` Chosen route: ${chosen.prefix} via ${chosen.next_hop}, origin AS${chosen.origin_asn}.` : "";
  const more = r.body.next_cursor ? " More on the next page." : "";
  status(`${r.body.routes.length} route(s) for ${prefix}.${origin}${more}`);
  $("more").hidden = !r.body.next_cursor;
  $("next").onclick = () => page(prefix, chosen, r.body.next_cursor);
}

async function peers() {
  try {
    // The summary only: one peer's worth of answer, whatever the RIB holds.
    const p = await getJSON("/api/v1/peers?limit=1");
    const s = p.body.summary;
    if (!s) return;
    $("peers").textContent = `${s.sessions_open} BMP session(s) open, ${s.peers_up} peer(s) up, ${s.routes} route(s).`;
  } catch (e) { /* the page still works without the summary */ }
}

$("f").addEventListener("submit", (ev) => { ev.preventDefault(); search($("q").value); });
peers();
const first = new URLSearchParams(location.search).get("q");
if (first) { $("q").value = first; search(first); }
