// Go peer driver: github.com/gaissmai/bart (a multibit trie with
// popcount-compressed nodes, ART-based) on ipfib's table and trace files,
// printing the result line bench/peers/run.sh collects:
//
//	NAME FAMILY ADDRESSES min median max build_ms bytes checksum
//
// Usage: bart-peer bart TABLE TRACE [RUNS]
package main

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gaissmai/bart"
)

const noRoute = uint32(0xFFFFFFFF)

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bart-peer: "+format+"\n", args...)
	os.Exit(2)
}

func readTable(path string) []struct {
	p netip.Prefix
	v uint32
} {
	f, err := os.Open(path)
	if err != nil {
		die("%v", err)
	}
	defer f.Close()
	var out []struct {
		p netip.Prefix
		v uint32
	}
	s := bufio.NewScanner(f)
	line := 0
	for s.Scan() {
		line++
		fields := strings.Fields(s.Text())
		if len(fields) != 2 {
			die("%s:%d: expected PREFIX/LEN VALUE", path, line)
		}
		p, err := netip.ParsePrefix(fields[0])
		if err != nil {
			die("%s:%d: %v", path, line, err)
		}
		v, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			die("%s:%d: %v", path, line, err)
		}
		out = append(out, struct {
			p netip.Prefix
			v uint32
		}{p, uint32(v)})
	}
	return out
}

func readTrace(path string) (int, []netip.Addr) {
	b, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	if len(b) < 16 || string(b[:8]) != "IPFIBTR1" {
		die("%s: not an IPFIBTR1 trace", path)
	}
	family := int(b[8])
	width := 4
	if family == 6 {
		width = 16
	}
	body := b[16:]
	addrs := make([]netip.Addr, 0, len(body)/width)
	for i := 0; i+width <= len(body); i += width {
		if width == 4 {
			addrs = append(addrs, netip.AddrFrom4([4]byte(body[i:i+4])))
		} else {
			addrs = append(addrs, netip.AddrFrom16([16]byte(body[i:i+16])))
		}
	}
	return family, addrs
}

func main() {
	if len(os.Args) < 4 || os.Args[1] != "bart" {
		die("usage: bart-peer bart TABLE TRACE [RUNS]")
	}
	runs := 5
	if len(os.Args) > 4 {
		runs, _ = strconv.Atoi(os.Args[4])
		if runs < 1 {
			runs = 1
		}
	}
	routes := readTable(os.Args[2])

	// The trace is read after the build so the heap growth measured
	// across the build is the table's.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	var tbl bart.Table[uint32]
	for _, r := range routes {
		tbl.Insert(r.p, r.v)
	}
	buildMs := float64(time.Since(t0).Microseconds()) / 1e3
	runtime.GC()
	runtime.ReadMemStats(&after)
	// The route list was live in both readings: only the table differs.
	runtime.KeepAlive(routes)
	family, addrs := readTrace(os.Args[3])

	out := make([]uint32, len(addrs))
	pass := func() {
		for i, a := range addrs {
			if v, ok := tbl.Lookup(a); ok {
				out[i] = v
			} else {
				out[i] = noRoute
			}
		}
	}
	pass() // warm-up
	mlps := make([]float64, runs)
	for r := range mlps {
		s := time.Now()
		pass()
		mlps[r] = float64(len(addrs)) / time.Since(s).Seconds() / 1e6
	}
	sort.Float64s(mlps)
	median := mlps[runs/2]
	if runs%2 == 0 {
		median = (mlps[runs/2-1] + mlps[runs/2]) / 2
	}
	var h uint64
	for _, v := range out {
		h = h*0x100000001b3 + uint64(v) + 1
	}
	// Heap growth across the build, after a GC: the table's footprint.
	bytes := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if bytes < 0 {
		bytes = 0
	}
	fmt.Printf("go-bart %d %d %.1f %.1f %.1f %.1f %d %d\n", family, len(addrs), mlps[0], median,
		mlps[runs-1], buildMs, bytes, h)
}
