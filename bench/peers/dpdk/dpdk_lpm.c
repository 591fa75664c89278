/*
 * DPDK's LPM libraries driven on ipfib's table and trace files
 * (bench/peers/make_inputs.py writes them), so their figures sit beside
 * ipfib's in one run: rte_fib (DIR-24-8) and rte_lpm for IPv4, rte_fib6
 * (trie) and rte_lpm6 for IPv6, each with its fastest lookup DPDK offers
 * on this CPU (rte_fib/rte_fib6: AVX-512 when available).
 *
 * Usage: dpdk_lpm ALGO TABLE TRACE [RUNS]
 *   ALGO   fib | lpm (IPv4), fib6 | lpm6 (IPv6)
 *   TABLE  `PREFIX/LEN VALUE` lines, VALUE an integer (the value index)
 *   TRACE  IPFIBTR1 trace file of the same family
 * Prints one line:
 *   dpdk-ALGO FAMILY TRACE_LEN min median max build_ms bytes checksum
 * where bytes is what the structure reserves (tbl24 plus the tbl8 groups
 * sized below), not what the routes fill.
 * with MLPS over RUNS timed passes after one warm-up, and the checksum
 * ipfib bench computes (a miss counts as value 2^32 - 1), so agreement
 * with ipfib is checked by comparing checksums.
 *
 * EAL runs without huge pages (--no-huge), as the issue asks: DPDK then
 * allocates its tables from ordinary memory.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_eal.h>
#include <rte_fib.h>
#include <rte_fib6.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>
#include <rte_vect.h>

#define NO_ROUTE 0xFFFFFFFFu
/* Default next hop: a value no route carries (values are < 2^24). */
#define MISS_NH ((1u << 24) - 1)
#define BULK 64

struct route {
    uint8_t addr[16];
    uint8_t len;
    uint32_t value;
};

static void die(const char *msg, const char *arg) {
    fprintf(stderr, "dpdk_lpm: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(2);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static struct route *read_table(const char *path, int family, size_t *n_out) {
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open table", path);
    size_t cap = 1 << 16, n = 0;
    struct route *r = malloc(cap * sizeof *r);
    char line[256], pfx[128];
    unsigned len;
    unsigned long value;
    size_t line_no = 0;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        if (sscanf(line, "%127[^/]/%u %lu", pfx, &len, &value) != 3) {
            fprintf(stderr, "dpdk_lpm: %s:%zu: expected PREFIX/LEN VALUE\n", path, line_no);
            exit(2);
        }
        if (n == cap)
            r = realloc(r, (cap *= 2) * sizeof *r);
        memset(&r[n], 0, sizeof r[n]);
        if (inet_pton(family == 4 ? AF_INET : AF_INET6, pfx, r[n].addr) != 1 ||
            len > (family == 4 ? 32u : 128u) || value >= MISS_NH) {
            fprintf(stderr, "dpdk_lpm: %s:%zu: bad route\n", path, line_no);
            exit(2);
        }
        r[n].len = (uint8_t)len;
        r[n].value = (uint32_t)value;
        n++;
    }
    fclose(f);
    *n_out = n;
    return r;
}

static uint8_t *read_trace(const char *path, int family, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open trace", path);
    uint8_t hdr[16];
    if (fread(hdr, 1, 16, f) != 16 || memcmp(hdr, "IPFIBTR1", 8) != 0 || hdr[8] != family)
        die("not an IPFIBTR1 trace of this family", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f) - 16;
    fseek(f, 16, SEEK_SET);
    size_t width = family == 4 ? 4 : 16;
    uint8_t *buf = malloc(size);
    if (fread(buf, 1, size, f) != (size_t)size)
        die("short trace", path);
    fclose(f);
    *n_out = size / width;
    return buf;
}

static uint64_t checksum(const uint32_t *v, size_t n) {
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = h * 0x100000001b3ull + ((uint64_t)v[i] + 1);
    return h;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One engine: build it, then answer a pass over the trace into `out`. */
struct engine {
    void *obj;
    void (*pass)(void *obj, const uint8_t *trace, size_t n, uint32_t *out);
    size_t bytes;
};

static void fib_pass(void *obj, const uint8_t *trace, size_t n, uint32_t *out) {
    uint32_t ips[BULK];
    uint64_t nh[BULK];
    for (size_t i = 0; i < n; i += BULK) {
        size_t m = n - i < BULK ? n - i : BULK;
        for (size_t j = 0; j < m; j++) {
            uint32_t be;
            memcpy(&be, trace + 4 * (i + j), 4);
            ips[j] = ntohl(be);
        }
        rte_fib_lookup_bulk(obj, ips, nh, m);
        for (size_t j = 0; j < m; j++)
            out[i + j] = nh[j] == MISS_NH ? NO_ROUTE : (uint32_t)nh[j];
    }
}

static void lpm_pass(void *obj, const uint8_t *trace, size_t n, uint32_t *out) {
    uint32_t ips[BULK], nh[BULK];
    for (size_t i = 0; i < n; i += BULK) {
        size_t m = n - i < BULK ? n - i : BULK;
        for (size_t j = 0; j < m; j++) {
            uint32_t be;
            memcpy(&be, trace + 4 * (i + j), 4);
            ips[j] = ntohl(be);
        }
        rte_lpm_lookup_bulk(obj, ips, nh, m);
        for (size_t j = 0; j < m; j++)
            out[i + j] = (nh[j] & RTE_LPM_LOOKUP_SUCCESS) ? (nh[j] & 0x00FFFFFF) : NO_ROUTE;
    }
}

static void fib6_pass(void *obj, const uint8_t *trace, size_t n, uint32_t *out) {
    uint64_t nh[BULK];
    for (size_t i = 0; i < n; i += BULK) {
        size_t m = n - i < BULK ? n - i : BULK;
        /* Network-order addresses are what rte_fib6 takes: no copy. */
        rte_fib6_lookup_bulk(obj, (uint8_t(*)[RTE_FIB6_IPV6_ADDR_SIZE])(trace + 16 * i), nh, m);
        for (size_t j = 0; j < m; j++)
            out[i + j] = nh[j] == MISS_NH ? NO_ROUTE : (uint32_t)nh[j];
    }
}

static void lpm6_pass(void *obj, const uint8_t *trace, size_t n, uint32_t *out) {
    int32_t nh[BULK];
    for (size_t i = 0; i < n; i += BULK) {
        size_t m = n - i < BULK ? n - i : BULK;
        rte_lpm6_lookup_bulk_func(obj, (uint8_t(*)[RTE_LPM6_IPV6_ADDR_SIZE])(trace + 16 * i), nh, m);
        for (size_t j = 0; j < m; j++)
            out[i + j] = nh[j] < 0 ? NO_ROUTE : (uint32_t)nh[j];
    }
}

static uint32_t v4(const struct route *r) {
    uint32_t be;
    memcpy(&be, r->addr, 4);
    return ntohl(be);
}

static struct engine build(const char *algo, const struct route *r, size_t n) {
    struct engine e = {0};
    /* tbl8 groups (256 entries each, reserved up front): an upper bound
     * on what the routes longer than /24 can need, one group per 8 bits
     * beyond /24 per route. */
    size_t need = 1024;
    for (size_t i = 0; i < n; i++)
        if (r[i].len > 24)
            need += (r[i].len - 24 + 7) / 8;
    uint32_t tbl8 = need < (1u << 24) ? (uint32_t)need : (1u << 24);
    if (!strcmp(algo, "fib")) {
        struct rte_fib_conf c = {.type = RTE_FIB_DIR24_8, .default_nh = MISS_NH,
                                 .max_routes = (int)n + 1,
                                 .dir24_8 = {.nh_sz = RTE_FIB_DIR24_8_4B, .num_tbl8 = tbl8}};
        struct rte_fib *fib = rte_fib_create("ipfib-peer", SOCKET_ID_ANY, &c);
        if (!fib)
            die("rte_fib_create failed", NULL);
        for (size_t i = 0; i < n; i++)
            if (rte_fib_add(fib, v4(&r[i]), r[i].len, r[i].value) != 0)
                die("rte_fib_add failed", NULL);
        /* The AVX-512 lookup, where the CPU and EAL allow it. */
        if (rte_fib_select_lookup(fib, RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512) != 0)
            rte_fib_select_lookup(fib, RTE_FIB_LOOKUP_DEFAULT);
        e.obj = fib;
        e.pass = fib_pass;
        e.bytes = (1ull << 24) * 4 + (size_t)tbl8 * 256 * 4;
    } else if (!strcmp(algo, "lpm")) {
        struct rte_lpm_config c = {.max_rules = (uint32_t)n + 1, .number_tbl8s = tbl8};
        struct rte_lpm *lpm = rte_lpm_create("ipfib-peer", SOCKET_ID_ANY, &c);
        if (!lpm)
            die("rte_lpm_create failed", NULL);
        for (size_t i = 0; i < n; i++)
            if (rte_lpm_add(lpm, v4(&r[i]), r[i].len, r[i].value) != 0)
                die("rte_lpm_add failed", NULL);
        e.obj = lpm;
        e.pass = lpm_pass;
        e.bytes = (1ull << 24) * 4 + (size_t)tbl8 * 256 * 4;
    } else if (!strcmp(algo, "fib6")) {
        struct rte_fib6_conf c = {.type = RTE_FIB6_TRIE, .default_nh = MISS_NH,
                                  .max_routes = (int)n + 1,
                                  .trie = {.nh_sz = RTE_FIB6_TRIE_4B, .num_tbl8 = tbl8}};
        struct rte_fib6 *fib = rte_fib6_create("ipfib-peer", SOCKET_ID_ANY, &c);
        if (!fib)
            die("rte_fib6_create failed", NULL);
        for (size_t i = 0; i < n; i++)
            if (rte_fib6_add(fib, r[i].addr, r[i].len, r[i].value) != 0)
                die("rte_fib6_add failed", NULL);
        if (rte_fib6_select_lookup(fib, RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512) != 0)
            rte_fib6_select_lookup(fib, RTE_FIB6_LOOKUP_DEFAULT);
        e.obj = fib;
        e.pass = fib6_pass;
        e.bytes = (1ull << 24) * 4 + (size_t)tbl8 * 256 * 4;
    } else if (!strcmp(algo, "lpm6")) {
        struct rte_lpm6_config c = {.max_rules = (uint32_t)n + 1, .number_tbl8s = tbl8};
        struct rte_lpm6 *lpm = rte_lpm6_create("ipfib-peer", SOCKET_ID_ANY, &c);
        if (!lpm)
            die("rte_lpm6_create failed", NULL);
        for (size_t i = 0; i < n; i++)
            if (rte_lpm6_add(lpm, r[i].addr, r[i].len, r[i].value) != 0)
                die("rte_lpm6_add failed", NULL);
        e.obj = lpm;
        e.pass = lpm6_pass;
        e.bytes = (1ull << 24) * 4 + (size_t)tbl8 * 256 * 4;
    } else {
        die("unknown algorithm (fib, lpm, fib6, lpm6)", algo);
    }
    return e;
}

int main(int argc, char **argv) {
    if (argc < 4)
        die("usage: dpdk_lpm fib|lpm|fib6|lpm6 TABLE TRACE [RUNS]", NULL);
    const char *algo = argv[1];
    int family = strchr(algo, '6') ? 6 : 4;
    int runs = argc > 4 ? atoi(argv[4]) : 5;
    if (runs < 1)
        runs = 1;
    char *eal[] = {"dpdk_lpm", "--no-huge", "--no-pci", "-m", "4096", "--log-level=error",
                   "--force-max-simd-bitwidth=512", "--no-telemetry"};
    if (rte_eal_init(sizeof eal / sizeof *eal, eal) < 0)
        die("rte_eal_init failed", NULL);
    size_t n_routes, n_addrs;
    struct route *routes = read_table(argv[2], family, &n_routes);
    uint8_t *trace = read_trace(argv[3], family, &n_addrs);
    double t0 = now_ms();
    struct engine e = build(algo, routes, n_routes);
    double build_ms = now_ms() - t0;
    uint32_t *out = malloc(n_addrs * sizeof *out);
    double *mlps = malloc(runs * sizeof *mlps);
    e.pass(e.obj, trace, n_addrs, out); /* warm-up */
    for (int r = 0; r < runs; r++) {
        double s = now_ms();
        e.pass(e.obj, trace, n_addrs, out);
        mlps[r] = n_addrs / ((now_ms() - s) * 1e3);
    }
    qsort(mlps, runs, sizeof *mlps, cmp_double);
    double median = runs % 2 ? mlps[runs / 2] : (mlps[runs / 2 - 1] + mlps[runs / 2]) / 2;
    printf("dpdk-%s %d %zu %.1f %.1f %.1f %.1f %zu %" PRIu64 "\n", algo, family, n_addrs, mlps[0],
           median, mlps[runs - 1], build_ms, e.bytes, checksum(out, n_addrs));
    rte_eal_cleanup();
    return 0;
}
