/*
 * A DPDK forwarding pipeline on ipfib's C ABI: RX -> parse -> LPM in
 * bursts -> next-hop MAC rewrite (TTL / hop limit decremented, the IPv4
 * checksum updated) -> TX, one core. The LPM step is switchable to DPDK's
 * own libraries in the same program, so they are compared in one app:
 *
 *   --lpm ipfib   ipfib_lookup_v4_batch / ipfib_lookup_v6_batch
 *   --lpm fib     rte_fib (DIR-24-8) and rte_fib6 (trie), AVX-512 lookups
 *                 where the CPU and EAL allow
 *   --lpm lpm     rte_lpm and rte_lpm6
 *
 * Every engine answers the same routes: the table file is opened with
 * ipfib_table_open (any format ipfib reads, or a compiled file), and the
 * DPDK tables are filled from its routes, each with its ipfib route index
 * as next hop. A route's value (an ASN, a next-hop name) names its
 * neighbour: each distinct value gets a neighbour id and the MAC
 * 02:00:ID(4 bytes, big endian); --neighbours FILE writes `MAC VALUE`
 * lines.
 *
 * Usage: dpdk-forward EAL-ARGS -- --table FILE [options]
 *   --lpm ipfib|fib|lpm     the LPM step (default ipfib)
 *   --neighbours FILE       write the neighbour MACs and values
 *   --seconds S             stop after S seconds (default: when port 0
 *                           has given nothing for 100,000 polls, about
 *                           4 ms: a capture file's end; a live port wants
 *                           --seconds)
 *   --warmup S              seconds forwarded before the timed part
 *                           (default 0)
 *   --passes N              timed parts of --seconds each, a line each
 *                           (default 1)
 *   --loop                  read every frame port 0 gives (a finite
 *                           pcap; frames of at most --room bytes) into
 *                           memory, then for --seconds forward --inflight
 *                           mbufs round and round on a ring port
 *                           (rte_eth_from_ring: TX feeds RX); each mbuf
 *                           received is first refilled with the capture's
 *                           next frame, in order, round and round (what a
 *                           NIC's DMA does into recycled buffers): the
 *                           timed part is the pipeline without file I/O
 *   --inflight N            mbufs going round with --loop (default 4096, a
 *                           NIC's RX and TX rings)
 *   --mbufs N               mbufs in the pool (default 65535); a net_pcap
 *                           infinite_rx port needs one per packet of the
 *                           trace and a few thousand more
 *   --room BYTES            frame bytes an mbuf holds (default 2048)
 * Ports: RX on port 0, TX on port 1 (port 0 when there is only one), in
 * the order of the --vdev arguments; a --vdev EAL could not make is an
 * error, and so is a capture file run (no --seconds) that gave no packet.
 * The table is opened strictly: a damaged one is an error.
 * Forwarded: Ethernet II frames of IPv4 (version 4, a header of 20 bytes
 * or more inside the frame, a total length covering it) and IPv6 (version
 * 6, a whole fixed header) with a route. Misses, TTL or hop limit <= 1
 * (checked after the lookup, as Linux does) and every other frame (VLAN
 * tags included) are dropped and counted. rte_lpm and rte_lpm6 refuse a
 * /0, so its route answers their misses; rte_lpm6 keeps 21-bit next
 * hops, so --lpm lpm refuses 2^21 IPv6 routes or more. Prints a line per
 * pass:
 *   forward lpm=L packets=N forwarded=F miss=M ttl=T other=O tx_full=X
 *     seconds=S mpps=R cycles_per_packet=C lookup_cycles_per_packet=K
 *     lookup_share=P refill_cycles_per_packet=D tx_mac=MAC
 * where cycles are TSC cycles over the timed part (without --seconds: up
 * to the last burst), the lookup's those spent in the LPM calls, and the
 * refill's (--loop; 0 otherwise) those spent copying frames into mbufs.
 * Exit status 0; 1 when SIGINT or SIGTERM cut forwarding short (the pass
 * it cut is printed as it stood) or a capture file gave no packet; 2 on a
 * usage or setup error (with a message on stderr). A signal before
 * forwarding starts (while tables load) ends the process as by default.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ipfib.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_ether.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#define BURST 32
/* The DPDK tables' miss: no route index reaches it (checked at load). */
#define MISS_NH ((1u << 24) - 1)
/* Frames --loop keeps in memory, at most. */
#define LOOP_FRAMES_MAX (1u << 26)
/* rte_lpm6's next hops are 21 bits wide. */
#define LPM6_NH_LIMIT (1u << 21)

enum lpm_kind { LPM_IPFIB, LPM_FIB, LPM_LPM };

struct lpm {
    enum lpm_kind kind;
    ipfib_table *table;
    struct rte_fib *fib;
    struct rte_fib6 *fib6;
    struct rte_lpm *lpm4;
    struct rte_lpm6 *lpm6;
    /* rte_lpm and rte_lpm6 refuse a /0: its route index answers their
     * misses instead (MISS_NH when the table has none). */
    uint32_t default4, default6;
};

/* Route index -> neighbour id, per family; neighbour id -> MAC. */
struct neighbours {
    uint32_t *of4, *of6;
    size_t n4, n6;
    struct rte_ether_addr *mac;
    size_t count;
};

struct counts {
    uint64_t packets, forwarded, miss, ttl, other, tx_full;
    uint64_t lookup_cycles;
    uint64_t last; /* TSC after the last burst (finite runs) */
    uint64_t refill_cycles; /* --loop: in the emulated DMA */
};

static volatile sig_atomic_t stop, running;

/* Before forwarding starts (loading a table, building DPDK's: minutes for
 * rte_lpm6), a signal ends the process at once, as by default; once
 * forwarding, it ends the pass in progress. */
static void on_signal(int sig) {
    if (!running) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop = 1;
}

static void die(const char *msg, const char *arg) {
    fprintf(stderr, "dpdk-forward: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(2);
}

static void die_ipfib(const char *what, ipfib_status s) {
    fprintf(stderr, "dpdk-forward: %s: %s: %s\n", what, ipfib_status_name(s), ipfib_last_error());
    exit(2);
}

/* ---- neighbours: one id per distinct route value ------------------------ */

struct slot {
    const char *value;
    size_t len;
    uint32_t id;
};

struct value_map {
    struct slot *slots;
    size_t cap, used;
};

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
    return h;
}

static uint32_t value_id(struct value_map *m, const char *v, size_t len) {
    if (2 * (m->used + 1) > m->cap) {
        struct value_map g = {calloc(m->cap ? 2 * m->cap : 1024, sizeof *g.slots),
                              m->cap ? 2 * m->cap : 1024, 0};
        if (!g.slots)
            die("out of memory", NULL);
        for (size_t i = 0; i < m->cap; i++) {
            struct slot s = m->slots[i];
            if (!s.value)
                continue;
            size_t j = hash_bytes(s.value, s.len) & (g.cap - 1);
            while (g.slots[j].value)
                j = (j + 1) & (g.cap - 1);
            g.slots[j] = s;
            g.used++;
        }
        free(m->slots);
        *m = g;
    }
    size_t j = hash_bytes(v, len) & (m->cap - 1);
    while (m->slots[j].value) {
        if (m->slots[j].len == len && !memcmp(m->slots[j].value, v, len))
            return m->slots[j].id;
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (struct slot){v, len, (uint32_t)m->used};
    return (uint32_t)m->used++;
}

static size_t route_count(const ipfib_table *t, uint8_t family) {
    size_t n;
    ipfib_status s = ipfib_route_count(t, family, &n);
    if (s != IPFIB_STATUS_OK)
        die_ipfib("ipfib_route_count", s);
    if (n >= MISS_NH)
        die("more routes in a family than the DPDK tables' next hops can index", NULL);
    return n;
}

static struct neighbours neighbours(const ipfib_table *t, const char *out_path) {
    struct neighbours nb = {0};
    struct value_map m = {0};
    nb.n4 = route_count(t, IPFIB_FAMILY_V4);
    nb.n6 = route_count(t, IPFIB_FAMILY_V6);
    nb.of4 = malloc((nb.n4 + 1) * sizeof *nb.of4);
    nb.of6 = malloc((nb.n6 + 1) * sizeof *nb.of6);
    if (!nb.of4 || !nb.of6)
        die("out of memory", NULL);
    for (int f = 0; f < 2; f++) {
        uint8_t family = f ? IPFIB_FAMILY_V6 : IPFIB_FAMILY_V4;
        size_t n = f ? nb.n6 : nb.n4;
        uint32_t *of = f ? nb.of6 : nb.of4;
        for (size_t i = 0; i < n; i++) {
            const char *v;
            size_t len;
            ipfib_status s = ipfib_route_value(t, family, (uint32_t)i, &v, &len);
            if (s != IPFIB_STATUS_OK)
                die_ipfib("ipfib_route_value", s);
            of[i] = value_id(&m, v, len);
        }
    }
    nb.count = m.used;
    nb.mac = calloc(nb.count + 1, sizeof *nb.mac);
    if (!nb.mac)
        die("out of memory", NULL);
    FILE *out = NULL;
    if (out_path && !(out = fopen(out_path, "w")))
        die("cannot write the neighbours file", out_path);
    for (size_t i = 0; i < m.cap; i++) {
        struct slot s = m.slots[i];
        if (!s.value)
            continue;
        uint8_t *a = nb.mac[s.id].addr_bytes;
        a[0] = 0x02;
        a[1] = 0x00;
        a[2] = (uint8_t)(s.id >> 24);
        a[3] = (uint8_t)(s.id >> 16);
        a[4] = (uint8_t)(s.id >> 8);
        a[5] = (uint8_t)s.id;
        if (out)
            fprintf(out, "%02x:%02x:%02x:%02x:%02x:%02x %.*s\n", a[0], a[1], a[2], a[3], a[4],
                    a[5], (int)s.len, s.value);
    }
    if (out && fclose(out) != 0)
        die("cannot write the neighbours file", out_path);
    free(m.slots);
    return nb;
}

/* ---- the LPM step ----------------------------------------------------- */

static uint32_t tbl8_groups(const ipfib_table *t, uint8_t family, size_t n, unsigned base) {
    /* An upper bound on the tbl8 groups the routes longer than the base
     * table's bits can need: one group per 8 bits beyond it per route. */
    size_t need = 1024;
    for (size_t i = 0; i < n; i++) {
        uint8_t len;
        ipfib_status s;
        if (family == IPFIB_FAMILY_V4) {
            uint32_t a;
            s = ipfib_route_prefix_v4(t, (uint32_t)i, &a, &len);
        } else {
            uint8_t a[16];
            s = ipfib_route_prefix_v6(t, (uint32_t)i, a, &len);
        }
        if (s != IPFIB_STATUS_OK)
            die_ipfib("ipfib_route_prefix", s);
        if (len > base)
            need += (len - base + 7) / 8;
    }
    return need < (1u << 24) ? (uint32_t)need : (1u << 24);
}

static void build_dpdk(struct lpm *l, const struct neighbours *nb) {
    const ipfib_table *t = l->table;
    uint32_t g4 = tbl8_groups(t, IPFIB_FAMILY_V4, nb->n4, 24);
    uint32_t g6 = tbl8_groups(t, IPFIB_FAMILY_V6, nb->n6, 24);
    if (l->kind == LPM_FIB) {
        struct rte_fib_conf c = {.type = RTE_FIB_DIR24_8, .default_nh = MISS_NH,
                                 .max_routes = (int)nb->n4 + 1,
                                 .dir24_8 = {.nh_sz = RTE_FIB_DIR24_8_4B, .num_tbl8 = g4}};
        struct rte_fib6_conf c6 = {.type = RTE_FIB6_TRIE, .default_nh = MISS_NH,
                                   .max_routes = (int)nb->n6 + 1,
                                   .trie = {.nh_sz = RTE_FIB6_TRIE_4B, .num_tbl8 = g6}};
        if (!(l->fib = rte_fib_create("forward4", SOCKET_ID_ANY, &c)))
            die("rte_fib_create failed", rte_strerror(rte_errno));
        if (!(l->fib6 = rte_fib6_create("forward6", SOCKET_ID_ANY, &c6)))
            die("rte_fib6_create failed", rte_strerror(rte_errno));
        if (rte_fib_select_lookup(l->fib, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512) != 0)
            rte_fib_select_lookup(l->fib, RTE_FIB_LOOKUP_DEFAULT);
        if (rte_fib6_select_lookup(l->fib6, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512) != 0)
            rte_fib6_select_lookup(l->fib6, RTE_FIB6_LOOKUP_DEFAULT);
    } else {
        /* rte_lpm6 keeps 21-bit next hops (and at most 2^21 tbl8 groups):
         * a larger route index would be cut silently. */
        if (nb->n6 >= LPM6_NH_LIMIT)
            die("--lpm lpm: rte_lpm6 holds next hops below 2^21, and the table has more IPv6 "
                "routes",
                NULL);
        if (g6 > LPM6_NH_LIMIT)
            g6 = LPM6_NH_LIMIT;
        struct rte_lpm_config c = {.max_rules = (uint32_t)nb->n4 + 1, .number_tbl8s = g4};
        struct rte_lpm6_config c6 = {.max_rules = (uint32_t)nb->n6 + 1, .number_tbl8s = g6};
        if (!(l->lpm4 = rte_lpm_create("forward4", SOCKET_ID_ANY, &c)))
            die("rte_lpm_create failed", rte_strerror(rte_errno));
        if (!(l->lpm6 = rte_lpm6_create("forward6", SOCKET_ID_ANY, &c6)))
            die("rte_lpm6_create failed", rte_strerror(rte_errno));
    }
    for (size_t i = 0; i < nb->n4; i++) {
        uint32_t a;
        uint8_t len;
        ipfib_status s = ipfib_route_prefix_v4(t, (uint32_t)i, &a, &len);
        if (s != IPFIB_STATUS_OK)
            die_ipfib("ipfib_route_prefix_v4", s);
        if (!l->fib && len == 0) {
            l->default4 = (uint32_t)i;
            continue;
        }
        int r = l->fib ? rte_fib_add(l->fib, a, len, i) : rte_lpm_add(l->lpm4, a, len, (uint32_t)i);
        if (r != 0)
            die("adding an IPv4 route to the DPDK table failed", rte_strerror(-r));
    }
    for (size_t i = 0; i < nb->n6; i++) {
        uint8_t a[16], len;
        ipfib_status s = ipfib_route_prefix_v6(t, (uint32_t)i, a, &len);
        if (s != IPFIB_STATUS_OK)
            die_ipfib("ipfib_route_prefix_v6", s);
        if (!l->fib6 && len == 0) {
            l->default6 = (uint32_t)i;
            continue;
        }
        int r = l->fib6 ? rte_fib6_add(l->fib6, a, len, i) : rte_lpm6_add(l->lpm6, a, len, (uint32_t)i);
        if (r != 0)
            die("adding an IPv6 route to the DPDK table failed", rte_strerror(-r));
    }
}

/* Route indexes of n4 IPv4 addresses (host order) and n6 IPv6 addresses
 * into idx4 / idx6; a miss is MISS_NH. */
static void lookup(const struct lpm *l, uint32_t *a4, unsigned n4, uint32_t *idx4,
                   uint8_t (*a6)[16], unsigned n6, uint32_t *idx6) {
    switch (l->kind) {
    case LPM_IPFIB: {
        if (n4) {
            ipfib_status s = ipfib_lookup_v4_batch(l->table, a4, n4, idx4, NULL);
            if (s != IPFIB_STATUS_OK)
                die_ipfib("ipfib_lookup_v4_batch", s);
        }
        if (n6) {
            ipfib_status s = ipfib_lookup_v6_batch(l->table, &a6[0][0], n6, idx6, NULL);
            if (s != IPFIB_STATUS_OK)
                die_ipfib("ipfib_lookup_v6_batch", s);
        }
        /* IPFIB_NO_ROUTE -> MISS_NH, so every engine's miss is one value. */
        for (unsigned i = 0; i < n4; i++)
            idx4[i] = idx4[i] == IPFIB_NO_ROUTE ? MISS_NH : idx4[i];
        for (unsigned i = 0; i < n6; i++)
            idx6[i] = idx6[i] == IPFIB_NO_ROUTE ? MISS_NH : idx6[i];
        break;
    }
    case LPM_FIB: {
        uint64_t nh[BURST];
        if (n4) {
            rte_fib_lookup_bulk(l->fib, a4, nh, (int)n4);
            for (unsigned i = 0; i < n4; i++)
                idx4[i] = (uint32_t)nh[i];
        }
        if (n6) {
            rte_fib6_lookup_bulk(l->fib6, a6, nh, (int)n6);
            for (unsigned i = 0; i < n6; i++)
                idx6[i] = (uint32_t)nh[i];
        }
        break;
    }
    case LPM_LPM: {
        if (n4) {
            rte_lpm_lookup_bulk(l->lpm4, a4, idx4, n4);
            for (unsigned i = 0; i < n4; i++)
                idx4[i] = idx4[i] & RTE_LPM_LOOKUP_SUCCESS ? idx4[i] & 0x00FFFFFF : l->default4;
        }
        if (n6) {
            int32_t nh6[BURST];
            rte_lpm6_lookup_bulk_func(l->lpm6, a6, nh6, n6);
            for (unsigned i = 0; i < n6; i++)
                idx6[i] = nh6[i] < 0 ? l->default6 : (uint32_t)nh6[i];
        }
        break;
    }
    }
}

/* ---- the pipeline ------------------------------------------------------ */

/* One burst: parse, look up, rewrite; the packets to send into out[],
 * the rest freed and counted. Returns how many to send. */
static unsigned forward_burst(const struct lpm *l, const struct neighbours *nb,
                              const struct rte_ether_addr *own, struct rte_mbuf **pkts,
                              unsigned n, struct rte_mbuf **out, struct counts *c) {
    uint32_t a4[BURST], idx4[BURST], idx6[BURST];
    uint8_t a6[BURST][16];
    uint8_t fam[BURST]; /* 4, 6, or 0: dropped */
    unsigned n4 = 0, n6 = 0;
    /* The burst's mbuf headers, then their frames, are fetched ahead of
     * the parse (as DPDK's l3fwd does): a packet's two lines are then in
     * flight together instead of missed one after another. */
    for (unsigned i = 0; i < n; i++)
        rte_prefetch0(pkts[i]);
    for (unsigned i = 0; i < n; i++)
        rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
    for (unsigned i = 0; i < n; i++) {
        struct rte_mbuf *m = pkts[i];
        struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
        uint32_t len = rte_pktmbuf_data_len(m);
        fam[i] = 0;
        if (len < sizeof *eth)
            continue;
        uint16_t type = rte_be_to_cpu_16(eth->ether_type);
        if (type == RTE_ETHER_TYPE_IPV4 && len >= sizeof *eth + sizeof(struct rte_ipv4_hdr)) {
            struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
            /* As DPDK's l3fwd: version 4, a header of 20 bytes or more that
             * the frame holds, and a total length that covers it. */
            uint32_t hlen = 4u * (ip->version_ihl & 15);
            if ((ip->version_ihl >> 4) != 4 || hlen < 20 || hlen > len - sizeof *eth ||
                rte_be_to_cpu_16(ip->total_length) < hlen)
                continue;
            fam[i] = 4;
            a4[n4++] = rte_be_to_cpu_32(ip->dst_addr);
        } else if (type == RTE_ETHER_TYPE_IPV6 &&
                   len >= sizeof *eth + sizeof(struct rte_ipv6_hdr)) {
            struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
            if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6)
                continue;
            fam[i] = 6;
            memcpy(a6[n6++], ip->dst_addr, 16);
        }
    }
    uint64_t t0 = rte_rdtsc();
    lookup(l, a4, n4, idx4, a6, n6, idx6);
    c->lookup_cycles += rte_rdtsc() - t0;
    /* Route -> neighbour is 4 bytes a route (4.4 MB for a full IPv4
     * table: a miss a packet), neighbour -> MAC 6 bytes a neighbour:
     * both fetched ahead for the whole burst, as the mbufs were. */
    uint32_t nbr4[BURST], nbr6[BURST];
    for (unsigned i = 0; i < n4; i++)
        if (idx4[i] < nb->n4)
            rte_prefetch0(&nb->of4[idx4[i]]);
    for (unsigned i = 0; i < n6; i++)
        if (idx6[i] < nb->n6)
            rte_prefetch0(&nb->of6[idx6[i]]);
    for (unsigned i = 0; i < n4; i++)
        if (idx4[i] < nb->n4)
            rte_prefetch0(&nb->mac[nbr4[i] = nb->of4[idx4[i]]]);
    for (unsigned i = 0; i < n6; i++)
        if (idx6[i] < nb->n6)
            rte_prefetch0(&nb->mac[nbr6[i] = nb->of6[idx6[i]]]);
    unsigned k4 = 0, k6 = 0, sent = 0;
    for (unsigned i = 0; i < n; i++) {
        struct rte_mbuf *m = pkts[i];
        struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
        uint32_t nbr;
        if (fam[i] == 4) {
            unsigned k = k4++;
            uint32_t r = idx4[k];
            if (r == MISS_NH || r >= nb->n4) {
                c->miss++;
                rte_pktmbuf_free(m);
                continue;
            }
            struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
            if (ip->time_to_live <= 1) {
                c->ttl++;
                rte_pktmbuf_free(m);
                continue;
            }
            /* RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word
             * holding TTL and protocol; right in the -0 case too. */
            uint16_t m = (uint16_t)(ip->time_to_live << 8 | ip->next_proto_id);
            ip->time_to_live--;
            uint16_t m2 = (uint16_t)(m - 0x0100);
            uint32_t sum = (uint16_t)~rte_be_to_cpu_16(ip->hdr_checksum) + (uint16_t)~m + m2;
            sum = (sum & 0xFFFF) + (sum >> 16);
            sum = (sum & 0xFFFF) + (sum >> 16);
            ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)~sum);
            nbr = nbr4[k];
        } else if (fam[i] == 6) {
            unsigned k = k6++;
            uint32_t r = idx6[k];
            if (r == MISS_NH || r >= nb->n6) {
                c->miss++;
                rte_pktmbuf_free(m);
                continue;
            }
            struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(eth + 1);
            if (ip->hop_limits <= 1) {
                c->ttl++;
                rte_pktmbuf_free(m);
                continue;
            }
            ip->hop_limits--;
            nbr = nbr6[k];
        } else {
            c->other++;
            rte_pktmbuf_free(m);
            continue;
        }
        rte_ether_addr_copy(&nb->mac[nbr], &eth->dst_addr);
        rte_ether_addr_copy(own, &eth->src_addr);
        out[sent++] = m;
    }
    return sent;
}

static void port_start(uint16_t port, struct rte_mempool *pool) {
    struct rte_eth_conf conf = {0};
    int r;
    if ((r = rte_eth_dev_configure(port, 1, 1, &conf)) != 0)
        die("rte_eth_dev_configure failed", rte_strerror(-r));
    if ((r = rte_eth_rx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL, pool)) != 0)
        die("rte_eth_rx_queue_setup failed", rte_strerror(-r));
    if ((r = rte_eth_tx_queue_setup(port, 0, 1024, rte_eth_dev_socket_id(port), NULL)) != 0)
        die("rte_eth_tx_queue_setup failed", rte_strerror(-r));
    if ((r = rte_eth_dev_start(port)) != 0)
        die("rte_eth_dev_start failed", rte_strerror(-r));
}

/* --loop: the capture's frames (frame k: len[k] bytes at data + off[k],
 * each start 16-byte aligned), and the next one to send. */
struct replay {
    uint8_t *data;
    size_t *off;
    uint16_t *len;
    size_t count, next;
};

/* Overwrites each mbuf with the replay's next frame; the frames a burst
 * ahead are prefetched (a NIC's DMA would not wait on them either). */
static void refill(struct replay *rp, struct rte_mbuf **pkts, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        struct rte_mbuf *m = pkts[i];
        size_t k = rp->next;
        rp->next = k + 1 == rp->count ? 0 : k + 1;
        size_t ahead = (k + BURST) % rp->count;
        /* Non-temporal: the frames stream past once a round, and a NIC's
         * DMA would not push the tables out of the caches for them. */
        rte_prefetch_non_temporal(rp->data + rp->off[ahead]);
        rte_memcpy(rte_pktmbuf_mtod(m, void *), rp->data + rp->off[k], rp->len[k]);
        m->data_len = m->pkt_len = rp->len[k];
    }
}

/* Reads port 0 until it has given nothing for `idle` polls in a row. */
static int drained(unsigned *idle_polls, unsigned n) {
    *idle_polls = n ? 0 : *idle_polls + 1;
    return *idle_polls > 100000;
}

/* Forwards from rx to tx until stop, `until` TSC (0: none) or, when
 * `finite`, rx ran dry. With a replay (--loop), received mbufs are
 * refilled first, and as many fresh mbufs as were dropped are sent into
 * the ring, so the same number keeps going round. */
static void run(const struct lpm *l, const struct neighbours *nb, uint16_t rx, uint16_t tx,
                const struct rte_ether_addr *own, uint64_t until, int finite,
                struct replay *rp, struct rte_mempool *pool, struct counts *c) {
    struct rte_mbuf *pkts[BURST], *out[BURST];
    unsigned idle = 0;
    /* The deadline is checked before a burst is taken: a burst received is
     * always forwarded and counted (with --loop, one left behind would
     * leave the ring for good). */
    while (!stop && !(until && rte_rdtsc() >= until)) {
        unsigned n = rte_eth_rx_burst(rx, 0, pkts, BURST);
        if (finite && drained(&idle, n))
            break;
        if (!n)
            continue;
        if (rp) {
            uint64_t t = rte_rdtsc();
            refill(rp, pkts, n);
            c->refill_cycles += rte_rdtsc() - t;
        }
        c->packets += n;
        unsigned k = forward_burst(l, nb, own, pkts, n, out, c);
        unsigned sent = rte_eth_tx_burst(tx, 0, out, (uint16_t)k);
        c->forwarded += sent;
        if (sent < k) {
            c->tx_full += k - sent;
            rte_pktmbuf_free_bulk(out + sent, k - sent);
        }
        if (rp && sent < n && rte_pktmbuf_alloc_bulk(pool, out, n - sent) == 0) {
            unsigned back = rte_eth_tx_burst(tx, 0, out, (uint16_t)(n - sent));
            if (back < n - sent)
                rte_pktmbuf_free_bulk(out + back, n - sent - back);
        }
        if (finite)
            c->last = rte_rdtsc();
    }
}

static void report(const char *lpm, const struct counts *c, uint64_t cycles, uint64_t hz,
                   const struct rte_ether_addr *own) {
    double secs = (double)cycles / (double)hz;
    double per = c->packets ? (double)cycles / (double)c->packets : 0;
    printf("forward lpm=%s packets=%" PRIu64 " forwarded=%" PRIu64 " miss=%" PRIu64
           " ttl=%" PRIu64 " other=%" PRIu64 " tx_full=%" PRIu64
           " seconds=%.3f mpps=%.3f cycles_per_packet=%.1f lookup_cycles_per_packet=%.1f"
           " lookup_share=%.3f refill_cycles_per_packet=%.1f tx_mac=%02x:%02x:%02x:%02x:%02x:%02x\n",
           lpm, c->packets, c->forwarded, c->miss, c->ttl, c->other, c->tx_full, secs,
           secs > 0 ? (double)c->packets / secs / 1e6 : 0, per,
           c->packets ? (double)c->lookup_cycles / (double)c->packets : 0,
           cycles ? (double)c->lookup_cycles / (double)cycles : 0,
           c->packets ? (double)c->refill_cycles / (double)c->packets : 0, own->addr_bytes[0],
           own->addr_bytes[1], own->addr_bytes[2], own->addr_bytes[3], own->addr_bytes[4],
           own->addr_bytes[5]);
}

int main(int argc, char **argv) {
    /* EAL goes on when a --vdev cannot be made (a missing capture, an
     * unwritable output): the ports are counted against the --vdev
     * arguments before EAL's (up to "--"). */
    unsigned vdevs = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        /* EAL's getopt takes "--vd", "--vde" and "--vdev", "=VALUE" or not. */
        size_t k = strcspn(argv[i], "=");
        vdevs += k >= 4 && k <= 6 && !strncmp(argv[i], "--vdev", k);
    }
    int eal = rte_eal_init(argc, argv);
    if (eal < 0)
        die("rte_eal_init failed", rte_strerror(rte_errno));
    argc -= eal;
    argv += eal;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    const char *table_path = NULL, *lpm_name = "ipfib", *nb_path = NULL;
    double seconds = 0, warmup = 0;
    int loop = 0;
    unsigned long inflight = 4096;
    unsigned long passes = 1;
    unsigned long mbufs = 65535, room = 2048;
    static const char *const with_value[] = {"--table", "--lpm", "--neighbours", "--seconds",
                                             "--warmup", "--passes", "--inflight", "--mbufs",
                                             "--room"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--loop")) {
            loop = 1;
            continue;
        }
        int known = 0;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            known |= !strcmp(a, with_value[k]);
        if (!known)
            die("unknown option (--table, --lpm, --neighbours, --seconds, --warmup, --passes, "
                "--loop, --inflight, --mbufs, --room)",
                a);
        if (i + 1 >= argc)
            die("a value is missing after", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--table"))
            table_path = v;
        else if (!strcmp(a, "--lpm"))
            lpm_name = v;
        else if (!strcmp(a, "--neighbours"))
            nb_path = v;
        else if (!strcmp(a, "--seconds") || !strcmp(a, "--warmup")) {
            char *end;
            double d = strtod(v, &end);
            int secs = a[2] == 's';
            /* Digits first (no sign, space or empty text); --seconds from
             * a millisecond, --warmup from 0, both below a million. */
            if (!(*v >= '0' && *v <= '9') || *end || !(d < 1e6) || (secs ? d < 1e-3 : d < 0))
                die(secs ? "--seconds wants 0.001 to 999999" : "--warmup wants 0 to 999999", v);
            *(secs ? &seconds : &warmup) = d;
        } else {
            unsigned long lo = 1, hi = 1000, *to = &passes;
            const char *what = "--passes wants 1 to 1000";
            if (!strcmp(a, "--inflight"))
                lo = BURST, hi = 1ul << 24, to = &inflight, what = "--inflight wants 32 to 16777216";
            else if (!strcmp(a, "--mbufs"))
                lo = 2048, hi = 1ul << 26, to = &mbufs, what = "--mbufs wants 2048 to 67108864";
            else if (!strcmp(a, "--room"))
                lo = 64, hi = 65535 - RTE_PKTMBUF_HEADROOM, to = &room,
                what = "--room wants 64 to 65407 bytes";
            char *end;
            errno = 0;
            unsigned long x = strtoul(v, &end, 10);
            if (!(*v >= '0' && *v <= '9') || *end || errno || x < lo || x > hi)
                die(what, v);
            *to = x;
        }
    }
    if (!table_path)
        die("--table FILE is required", NULL);
    if ((passes > 1 || warmup > 0) && seconds <= 0)
        die("--passes and --warmup want --seconds (a capture file read to its end is one pass)",
            NULL);
    if (loop && seconds <= 0)
        die("--loop wants --seconds (the ring never runs dry)", NULL);
    uint16_t ports = rte_eth_dev_count_avail();
    if (ports == 0)
        die("no port: give one with --vdev (e.g. net_pcap0,rx_pcap=FILE)", NULL);
    if (ports < vdevs)
        die("a --vdev port was not made (every --vdev must be an ethdev port; DPDK's message "
            "above says why one failed)",
            NULL);
    struct lpm l = {.default4 = MISS_NH, .default6 = MISS_NH};
    if (!strcmp(lpm_name, "ipfib"))
        l.kind = LPM_IPFIB;
    else if (!strcmp(lpm_name, "fib"))
        l.kind = LPM_FIB;
    else if (!strcmp(lpm_name, "lpm"))
        l.kind = LPM_LPM;
    else
        die("unknown --lpm (ipfib, fib, lpm)", lpm_name);
    /* Strict: a damaged table is an error, not half a table forwarding. */
    ipfib_status s = ipfib_table_open(table_path, NULL, NULL, IPFIB_OPEN_STRICT, &l.table);
    if (s != IPFIB_STATUS_OK)
        die_ipfib(table_path, s);
    struct neighbours nb = neighbours(l.table, nb_path);
    if (l.kind != LPM_IPFIB)
        build_dpdk(&l, &nb);

    /* Each mbuf holds --room bytes of frame past its headroom (a larger
     * frame is chained or dropped by the PMD): with the default 2048, a
     * pool of a million needs -m 2600 or more; 64-byte frames need 64. */
    struct rte_mempool *pool = rte_pktmbuf_pool_create(
        "forward", (unsigned)mbufs, 256, 0, (uint16_t)(room + RTE_PKTMBUF_HEADROOM),
        rte_socket_id());
    if (!pool)
        die("rte_pktmbuf_pool_create failed (more -m memory, or fewer --mbufs)",
            rte_strerror(rte_errno));
    uint16_t rx = 0, tx = ports > 1 ? 1 : 0;
    port_start(rx, pool);
    if (tx != rx)
        port_start(tx, pool);
    struct rte_ether_addr own;
    rte_eth_macaddr_get(tx, &own);

    struct replay rp = {0};
    running = 1;
    if (loop) {
        /* Every frame of the capture, in order, into memory. */
        size_t cap = 0, bytes = 0, used = 0;
        struct rte_mbuf *pkts[BURST];
        unsigned idle = 0;
        while (!stop) {
            unsigned n = rte_eth_rx_burst(rx, 0, pkts, BURST);
            if (drained(&idle, n))
                break;
            for (unsigned i = 0; i < n; i++) {
                struct rte_mbuf *m = pkts[i];
                if (m->nb_segs != 1 || m->data_len > room)
                    die("--loop wants frames of at most --room bytes", NULL);
                if (rp.count == LOOP_FRAMES_MAX)
                    die("--loop holds at most 67,108,864 frames (it wants a capture file, "
                        "not an endless port)",
                        NULL);
                size_t need = (m->data_len + 15u) & ~(size_t)15;
                if (rp.count == cap) {
                    cap = cap ? 2 * cap : 65536;
                    rp.off = realloc(rp.off, cap * sizeof *rp.off);
                    rp.len = realloc(rp.len, cap * sizeof *rp.len);
                }
                if (!rp.data || used + need > bytes) {
                    bytes = bytes ? 2 * bytes : 1u << 22;
                    rp.data = realloc(rp.data, bytes);
                }
                if (!rp.data || !rp.off || !rp.len)
                    die("out of memory for the capture's frames", NULL);
                memcpy(rp.data + used, rte_pktmbuf_mtod(m, void *), m->data_len);
                rp.off[rp.count] = used;
                rp.len[rp.count++] = m->data_len;
                used += need;
            }
            rte_pktmbuf_free_bulk(pkts, n);
        }
        if (stop) {
            fprintf(stderr, "dpdk-forward: interrupted while reading the capture\n");
            exit(1);
        }
        if (!rp.count)
            die("port 0 gave no frame to loop over", NULL);
        /* --inflight mbufs into a ring that is both RX and TX of one port:
         * what is sent comes round again (and is refilled on the way). */
        unsigned size = 1;
        while (size <= inflight)
            size <<= 1;
        struct rte_ring *ring = rte_ring_create("forward-loop", size, rte_socket_id(),
                                                RING_F_SP_ENQ | RING_F_SC_DEQ);
        if (!ring)
            die("rte_ring_create failed", rte_strerror(rte_errno));
        for (unsigned long i = 0; i < inflight; i++) {
            struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
            if (!m)
                die("fewer mbufs than --inflight (raise --mbufs)", NULL);
            if (rte_ring_enqueue(ring, m) != 0)
                die("the ring is full", NULL);
        }
        int port = rte_eth_from_ring(ring);
        if (port < 0)
            die("rte_eth_from_ring failed", rte_strerror(rte_errno));
        rx = tx = (uint16_t)port;
        port_start(rx, pool);
    }
    uint64_t hz = rte_get_tsc_hz();
    if (warmup > 0) {
        struct counts w = {0};
        run(&l, &nb, rx, tx, &own, rte_rdtsc() + (uint64_t)(warmup * hz), 0, loop ? &rp : NULL,
            pool, &w);
    }
    int got_any = 0, status = 0;
    for (unsigned long p = 0; p < passes && !stop; p++) {
        struct counts c = {0};
        uint64_t t0 = rte_rdtsc();
        run(&l, &nb, rx, tx, &own, seconds > 0 ? t0 + (uint64_t)(seconds * hz) : 0, seconds <= 0,
            loop ? &rp : NULL, pool, &c);
        /* A finite run's time ends at its last burst, not after the idle
         * polls that found the capture's end. */
        uint64_t t1 = seconds > 0 ? rte_rdtsc() : c.last > t0 ? c.last : t0;
        report(lpm_name, &c, t1 - t0, hz, &own);
        got_any |= c.packets > 0;
    }
    fflush(stdout);
    if (!stop && !loop && seconds <= 0 && !got_any) {
        fprintf(stderr, "dpdk-forward: port 0 gave no packet (port 0 is the first --vdev: its "
                        "capture empty or unread?)\n");
        status = 1;
    }
    if (stop)
        fprintf(stderr, "dpdk-forward: interrupted: the last pass printed (if any) was cut "
                        "short\n");
    rte_eth_dev_stop(rx);
    if (tx != rx)
        rte_eth_dev_stop(tx);
    rte_eal_cleanup();
    ipfib_table_free(l.table);
    return stop ? 1 : status;
}
