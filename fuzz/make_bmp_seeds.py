"""Seeds for the bmp_session fuzz target, cut from the recorded BMP streams.

Each seed is the opening of one recording (its messages before the first
Route Monitoring: Initiation, Peer Ups, early Peer Downs, so that ADD-PATH
and the peers are set up) followed by a run of consecutive messages taken
at evenly spread places, and every fourth seed ends with the recording's
last message (a Peer Down). Usage, from the repository root:

    python3 fuzz/make_bmp_seeds.py ../shared/data/bmp fuzz/corpus/bmp_session

(fuzz/seeds/bmp_session holds the minimized corpus of runs started from
these cuts.)
"""

import hashlib
import pathlib
import struct
import subprocess
import sys

# recording -> (runs, messages per run)
PLAN = {
    "gobgp-4.8.0-rv2026-v4-full.bmp.zst": (120, 8),
    "gobgp-4.8.0-rv2026-v6.bmp.zst": (60, 8),
    "frr-8.4.4-rv2026-v4-full.bmp.zst": (60, 8),
    "frr-8.4.4-small-peerdown-repeats.bmp.zst": (40, 12),
}


def messages(data: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(data):
        (n,) = struct.unpack(">I", data[at + 1 : at + 5])
        out.append(data[at : at + n])
        at += n
    return out


def main(src: str, dst: str) -> None:
    out = pathlib.Path(dst)
    out.mkdir(parents=True, exist_ok=True)
    seeds = total = 0
    for name, (runs, per_run) in PLAN.items():
        raw = subprocess.run(
            ["zstd", "-dc", str(pathlib.Path(src) / name)],
            check=True,
            capture_output=True,
        ).stdout
        msgs = messages(raw)
        first_rm = next(i for i, m in enumerate(msgs) if m[5] == 0)
        head = msgs[:first_rm]
        step = max(1, (len(msgs) - first_rm - per_run) // runs)
        for r in range(runs):
            at = first_rm + r * step
            part = head + msgs[at : at + per_run]
            if r % 4 == 3:
                part.append(msgs[-1])
            seed = b"".join(part)
            (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
            seeds += 1
            total += len(part)
    print(f"{seeds} seeds, {total} messages, in {out}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
