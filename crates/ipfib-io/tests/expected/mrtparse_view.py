#!/usr/bin/env python3
"""The independent view of the shared MRT files that tests/mrt_real.rs checks
ipfib-io against: record counts and the table each value policy gives,
computed with mrtparse (PyPI, `pip install mrtparse`; 2.2.0 was used), which
shares no code with bgpkit-parser or ipfib.

    python3 mrtparse_view.py FILE...   # prints one JSON object per file

Decompression: Python's bz2/gzip, stopping quietly where a truncated stream
ends (as the shared first1MiB/first2MiB files do); records are then read by
mrtparse from the decompressed bytes. A record is complete when its header
and its whole declared body are present.

The policies (see crates/ipfib-io/src/policy.rs) are re-implemented here
from their written definition, not from our code:
  origin-asn: per prefix, each peer votes once per origin; most votes wins,
    ties to the lowest (plain ASNs by number before AS sets, sets by their
    sorted members). Origin = last ASN of the last non-empty AS_SEQUENCE,
    or the sorted set of the last non-empty AS_SET (confederation segments
    skipped), after the RFC 6793 AS_PATH/AS4_PATH merge; no such segment:
    the peer's AS (0 when there is no peer table).
  peer-count: distinct peers per prefix.
  BGP4MP is replayed: an announcement replaces (peer, path id, prefix), a
  withdrawal removes it, a state change out of Established (6) flushes the
  peer. Peers of TABLE_DUMP/BGP4MP are (address, AS).
The digest is the sum mod 2^64 of FNV-1a-64 over "PREFIX VALUE" for every
(prefix, value) of the final table, so order does not matter.
"""
import bz2, gzip, io, ipaddress, json, struct, sys
import mrtparse

KNOWN = set(range(5, 14)) | {16, 17, 32, 33, 48, 49}


def decompress(path):
    raw = open(path, 'rb').read()
    if raw.startswith(b'BZh'):
        out, data = [], raw
        while data:
            d = bz2.BZ2Decompressor()
            out.append(d.decompress(data))
            if not d.eof:
                break
            data = d.unused_data
        return b''.join(out)
    if raw.startswith(b'\x1f\x8b'):
        d = gzip.GzipFile(fileobj=io.BytesIO(raw))
        out = []
        try:
            while True:
                chunk = d.read(1 << 16)
                if not chunk:
                    break
                out.append(chunk)
        except (EOFError, OSError):
            pass
        return b''.join(out)
    return raw


def complete_prefix(b):
    """Bytes of whole records, and the offset where framing stops."""
    off = 0
    while off + 12 <= len(b):
        _, t, _, l = struct.unpack('>IHHI', b[off:off + 12])
        if t not in KNOWN or off + 12 + l > len(b):
            break
        off += 12 + l
    return b[:off], off


def fnv(s):
    h = 0xcbf29ce484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def key(o):
    return (0, o) if isinstance(o, int) else (1, o)


def text(o):
    return str(o) if isinstance(o, int) else '{' + ','.join(map(str, o)) + '}'


def first(d):
    return list(d)[0]


def segs(attr_value):
    out = []
    for s in attr_value:
        out.append((first(s['type']), [int(a) for a in s['value']]))
    return out


def route_len(path):
    n = 0
    for t, v in path:
        n += len(v) if t == 2 else (1 if t == 1 else 0)
    return n


def merge(as_path, as4_path):
    if as4_path is None:
        return as_path
    if as_path is None:
        return as4_path
    if route_len(as_path) < route_len(as4_path):
        return as_path
    lead, out = route_len(as_path) - route_len(as4_path), []
    for t, v in as_path:
        if lead == 0:
            break
        n = len(v) if t == 2 else (1 if t == 1 else 0)
        if n == 0:
            out.append((t, v))
        elif n <= lead:
            out.append((t, v))
            lead -= n
        else:
            out.append((t, v[:lead]))
            lead = 0
    return out + as4_path


def origin(attrs, peer_as):
    as_path = as4 = None
    for a in attrs:
        t = first(a['type'])
        if t == 2:
            as_path = segs(a['value'])
        elif t == 17:
            as4 = segs(a['value'])
    path = merge(as_path, as4) or []
    for t, v in reversed(path):
        if t == 2 and v:
            return v[-1]
        if t == 1 and v:
            return tuple(sorted(set(v)))
    return peer_as if peer_as is not None else 0


def net(prefix, length):
    return ipaddress.ip_network(f'{prefix}/{length}', strict=False)


def view(path):
    data = decompress(path)
    whole, stop = complete_prefix(data)
    peers, td2, replay = {}, {}, {}
    peer_ids = {}
    counts = dict(records=0, errors=0, rib_entries=0, announcements=0,
                  withdrawals=0, state_changes=0)
    first_seen = []

    def peer_of(ip, asn):
        k = (ip, int(asn))
        if k not in peer_ids:
            peer_ids[k] = ('p', k)
            peers[('p', k)] = int(asn)
        return peer_ids[k]

    def announce(p, peer, pid, o):
        if p not in replay:
            replay[p] = {}
            first_seen.append(p)
        replay[p][(peer, pid)] = o

    for r in mrtparse.Reader(io.BytesIO(whole)):
        counts['records'] += 1
        if r.err:
            counts['errors'] += 1
            continue
        d = r.data
        t, st = first(d['type']), first(d['subtype'])
        if t == 13 and st == 1:
            peers = {i: int(p['peer_as']) for i, p in enumerate(d['peer_entries'])}
        elif t == 13 and st in (2, 4, 8, 10):
            p = net(d['prefix'], d['length'])
            if p not in td2:
                td2[p] = []
                first_seen.append(p)
            for e in d['rib_entries']:
                counts['rib_entries'] += 1
                pi = e['peer_index']
                td2[p].append((pi, origin(e['path_attributes'], peers.get(pi))))
        elif t == 12:
            p = net(d['prefix'], d['length'])
            peer = peer_of(d['peer_ip'], d['peer_as'])
            counts['rib_entries'] += 1
            announce(p, peer, 0, origin(d['path_attributes'], peers[peer]))
        elif t in (16, 17) and st in (0, 5):
            counts['state_changes'] += 1
            peer = peer_of(d['peer_ip'], d['peer_as'])
            if first(d['old_state']) == 6 and first(d['new_state']) != 6:
                for routes in replay.values():
                    for k in [k for k in routes if k[0] == peer]:
                        del routes[k]
        elif t in (16, 17) and st in (1, 4, 6, 7, 8, 9, 10, 11):
            m = d['bgp_message']
            if first(m['type']) != 2:
                continue
            peer = peer_of(d['peer_ip'], d['peer_as'])
            attrs = m['path_attributes']
            wd = list(m.get('withdrawn_routes', []))
            ann = list(m.get('nlri', []))
            for a in attrs:
                at = first(a['type'])
                if at == 15 and first(a['value']['safi']) == 1:
                    wd += a['value'].get('withdrawn_routes', [])
                if at == 14 and first(a['value']['safi']) == 1:
                    ann += a['value'].get('nlri', [])
            for w in wd:
                counts['withdrawals'] += 1
                p = net(w['prefix'], w['length'])
                replay.get(p, {}).pop((peer, w.get('path_id', 0)), None)
            if ann:
                o = origin(attrs, peers[peer])
                for n in ann:
                    counts['announcements'] += 1
                    counts['rib_entries'] += 1
                    announce(net(n['prefix'], n['length']), peer, n.get('path_id', 0), o)

    def tally(votes):
        score = {}
        for peer, o in set(votes):
            score[o] = score.get(o, 0) + 1
        return score

    table_origin, table_count, multi, as_sets = {}, {}, 0, 0
    for p in first_seen:
        votes = list(td2.get(p, [])) + [(k[0], o) for k, o in replay.get(p, {}).items()]
        if not votes:
            continue
        score = tally(votes)
        multi += len(score) > 1
        best = min(score, key=lambda o: (-score[o], key(o)))
        as_sets += not isinstance(best, int)
        table_origin[p] = text(best)
        table_count[p] = str(len({v[0] for v in votes}))

    def summary(table):
        return dict(
            prefixes_v4=sum(1 for p in table if p.version == 4),
            prefixes_v6=sum(1 for p in table if p.version == 6),
            values=len(set(table.values())),
            digest=sum(fnv(f'{p} {v}') for p, v in table.items()) % (1 << 64),
        )

    return dict(file=path.split('/')[-1], decompressed=len(data), complete_bytes=stop,
                damaged=stop != len(data), peers=len(peers), multi_origin=multi,
                as_set_origins=as_sets, origin_asn=summary(table_origin),
                peer_count=summary(table_count), **counts)


if __name__ == '__main__':
    for f in sys.argv[1:]:
        print(json.dumps(view(f)))
