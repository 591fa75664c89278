#!/usr/bin/env python3
"""Write a pcap of 64-byte frames towards given addresses, for dpdk-forward.

Each destination becomes one minimum-size Ethernet frame: 60 bytes in the
file, 64 on the wire with the FCS the file leaves out. IPv4 frames carry
UDP (port 9, 18 bytes of zeros) and a valid header checksum; IPv6 frames
have room for no more than the fixed header, so Next Header is 59 (no
next header) over 6 bytes of padding. TTL / hop limit 64 (--ttl); from
192.0.2.1 or 2001:db8::1. Destinations come from, in order given:

  --trace FILE     an IPFIBTR1 trace (bench/peers/make_inputs.py writes
                   them: the standing's `matched` and `uniform` traces)
  --addresses FILE one address per line (`#` comments and blank lines
                   skipped; gzip read as such), e.g. the IPv6 hitlist

Usage: make-pcap.py (--trace F | --addresses F)... --out OUT.pcap [--count N]
                    [--ttl T]
A bad line is an error naming the file and line.
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

FRAME = 60
SRC4 = ipaddress.IPv4Address("192.0.2.1").packed
SRC6 = ipaddress.IPv6Address("2001:db8::1").packed
# The source MAC is the sender's; the destination the router's own
# (net_pcap ports report 02:70:63:61:70:00-ish addresses; any will do).
ETH_DST = bytes.fromhex("020000000001")
ETH_SRC = bytes.fromhex("020000000002")


def checksum(header: bytes) -> int:
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame(dst: ipaddress.IPv4Address | ipaddress.IPv6Address, ttl: int) -> bytes:
    if dst.version == 4:
        udp_len = FRAME - 14 - 20
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0, ttl, 17, 0, SRC4, dst.packed)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        # UDP 9 -> 9 (discard), no checksum (allowed over IPv4), zeros.
        body = struct.pack("!HHHH", 9, 9, udp_len, 0) + bytes(udp_len - 8)
        out = ETH_DST + ETH_SRC + b"\x08\x00" + ip + body
    else:
        pad = FRAME - 14 - 40
        ip = struct.pack("!IHBB16s16s", 6 << 28, pad, 59, ttl, SRC6, dst.packed)
        out = ETH_DST + ETH_SRC + b"\x86\xdd" + ip + bytes(pad)
    assert len(out) == FRAME
    return out


def from_trace(path: Path) -> Iterator[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        data = path.read_bytes()
    except OSError as e:
        sys.exit(f"make-pcap: {path}: {e.strerror}")
    if len(data) < 16 or data[:8] != b"IPFIBTR1" or data[8] not in (4, 6):
        sys.exit(f"make-pcap: {path}: not an IPFIBTR1 trace (byte 0)")
    width = 4 if data[8] == 4 else 16
    body = data[16:]
    if len(body) % width:
        sys.exit(f"make-pcap: {path}: a partial address at byte {16 + len(body) // width * width}")
    kind = ipaddress.IPv4Address if width == 4 else ipaddress.IPv6Address
    for i in range(0, len(body), width):
        yield kind(body[i : i + width])


def from_lines(path: Path) -> Iterator[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    n = 0
    try:
        with path.open("rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rt", encoding="utf-8") if gz else path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                try:
                    a = ipaddress.ip_address(text)
                except ValueError:
                    sys.exit(f"make-pcap: {path}:{n}: not an address: {text!r}")
                if isinstance(a, ipaddress.IPv6Address) and a.scope_id is not None:
                    sys.exit(
                        f"make-pcap: {path}:{n}: a scoped address has no place in a frame: {text!r}"
                    )
                yield a
    except OSError as e:  # gzip.BadGzipFile is one
        sys.exit(f"make-pcap: {path}: after line {n}: {e.strerror or e}")
    except (UnicodeDecodeError, EOFError, zlib.error) as e:
        sys.exit(f"make-pcap: {path}: after line {n}: {e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--trace", type=Path, action="append", default=[])
    ap.add_argument("--addresses", type=Path, action="append", default=[])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--count", type=int, default=0, help="at most N frames (0: all)")
    ap.add_argument("--ttl", type=int, default=64, help="TTL / hop limit, 1-255")
    args = ap.parse_args()
    if not 1 <= args.ttl <= 255:
        ap.error("--ttl wants 1 to 255")
    if args.count < 0:
        ap.error("--count wants 0 (all) or more")
    if not args.trace and not args.addresses:
        ap.error("give --trace or --addresses")
    sources = [from_trace(p) for p in args.trace] + [from_lines(p) for p in args.addresses]
    written = 0
    # A regular file (or a new one) is written beside and renamed when
    # whole, so a failed run leaves no partial capture for a later run to
    # take as done; anything else (a device, a pipe) is written as it is.
    staged = not args.out.exists() or (args.out.is_file() and not args.out.is_symlink())
    dest = args.out.with_name(args.out.name + ".part") if staged else args.out
    try:
        with dest.open("wb") as out:
            # pcap: microsecond timestamps, snap length 65535, Ethernet.
            out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for source in sources:
                for dst in source:
                    if args.count and written >= args.count:
                        break
                    stamp = divmod(written, 1_000_000)
                    out.write(struct.pack("<IIII", *stamp, FRAME, FRAME))
                    out.write(frame(dst, args.ttl))
                    written += 1
    except OSError as e:
        if staged:
            dest.unlink(missing_ok=True)
        sys.exit(f"make-pcap: {dest}: {e.strerror or e}")
    except BaseException:
        if staged:
            dest.unlink(missing_ok=True)
        raise
    if staged:
        dest.replace(args.out)
    print(f"make-pcap: {written} frames into {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
