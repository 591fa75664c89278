/*
 * Every call of the C ABI, from C: good and bad arguments, both families,
 * single against batch, values and prefixes, then real tables against the
 * answers of the Rust oracle (`Table::lookup`, the radix trie), and the
 * same lookups from several threads at once.
 *
 * Usage: test_capi TMPDIR [ORACLE V4_TABLE V6_TABLE IMAGE]
 *   TMPDIR    a writable directory (small bad table files are made there)
 *   ORACLE    lines "4 ADDR PADDR PLEN VALUE" (decimal) and
 *             "6 ADDRHEX PADDRHEX PLEN VALUE" (32 hex digits), "- - -" for
 *             a miss, as tests/c_abi.rs writes them
 *   V4_TABLE  an IPv4 table file (loaded with format NULL: sniffed)
 *   V6_TABLE  an IPv6 table file (loaded with format "text")
 *   IMAGE     a compiled table file holding both (mapped)
 * Without the last four, only the synthetic part runs.
 * Exit status 0 when every check passed; each failure is printed.
 */
#define _POSIX_C_SOURCE 200809L
#include "ipfib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n",     \
                    __FILE__, __LINE__, #cond, ipfib_last_error());           \
        }                                                                     \
    } while (0)

/* A call that must return `want`; on an error status, the thread's
 * message must be non-empty. */
#define EXPECT(want, call)                                                    \
    do {                                                                      \
        ipfib_status got_ = (call);                                           \
        if (got_ != (want)) {                                                 \
            failures++;                                                       \
            fprintf(stderr, "%s:%d: %s returned %s, not %s (last error: %s)\n", \
                    __FILE__, __LINE__, #call, ipfib_status_name((int)got_),  \
                    ipfib_status_name((int)(want)), ipfib_last_error());      \
        } else if ((want) != IPFIB_STATUS_OK && ipfib_last_error()[0] == 0) {  \
            failures++;                                                       \
            fprintf(stderr, "%s:%d: %s failed without a message\n", __FILE__, \
                    __LINE__, #call);                                         \
        }                                                                     \
    } while (0)

#define OK(call) EXPECT(IPFIB_STATUS_OK, call)

static uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
    return (uint32_t)a << 24 | (uint32_t)b << 16 | (uint32_t)c << 8 | d;
}

/* Parse 32 hex digits into 16 bytes; 0 on bad text. */
static int hex16(const char *s, uint8_t out[16]) {
    if (strlen(s) != 32)
        return 0;
    for (int i = 0; i < 16; i++) {
        unsigned x;
        if (sscanf(s + 2 * i, "%2x", &x) != 1)
            return 0;
        out[i] = (uint8_t)x;
    }
    return 1;
}

static int value_is(const ipfib_table *t, uint8_t fam, uint32_t ri, const char *want) {
    const char *v = NULL;
    size_t len = 0;
    if (ipfib_route_value(t, fam, ri, &v, &len) != IPFIB_STATUS_OK)
        return 0;
    return len == strlen(want) && memcmp(v, want, len) == 0;
}

static int prefix_text_is(const ipfib_table *t, uint8_t fam, uint32_t ri, const char *want) {
    char buf[IPFIB_PREFIX_TEXT_MAX];
    if (ipfib_route_prefix_text(t, fam, ri, buf, sizeof buf) != IPFIB_STATUS_OK)
        return 0;
    return strcmp(buf, want) == 0;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

/* ---- synthetic tables: every call, good and bad arguments ---------------- */

static void test_misc(void) {
    CHECK(strcmp(ipfib_version(), "0.1.0") == 0);
    CHECK(strcmp(ipfib_status_name(IPFIB_STATUS_OK), "IPFIB_STATUS_OK") == 0);
    CHECK(strcmp(ipfib_status_name(IPFIB_STATUS_PARSE), "IPFIB_STATUS_PARSE") == 0);
    CHECK(strcmp(ipfib_status_name(99), "IPFIB_STATUS_UNKNOWN") == 0);
    CHECK(strcmp(ipfib_status_name(-1), "IPFIB_STATUS_UNKNOWN") == 0);
    ipfib_table_free(NULL);
    ipfib_builder_free(NULL);
}

static ipfib_table *build_small(void) {
    ipfib_builder *b = ipfib_builder_new();
    CHECK(b != NULL);
    OK(ipfib_builder_add(b, "10.0.0.0/8", "ten"));
    OK(ipfib_builder_add(b, "10.1.0.0/16", "ten-one"));
    OK(ipfib_builder_add(b, "10.1.2.0/24", "old"));
    OK(ipfib_builder_add(b, "10.1.2.0/24", "ten-one-two")); /* replaces */
    OK(ipfib_builder_add(b, "192.0.2.255/32", "host"));
    OK(ipfib_builder_add(b, "2001:db8::/32", "doc"));
    OK(ipfib_builder_add(b, "2001:db8:1::/48", "doc-one"));
    OK(ipfib_builder_add(b, "::ffff:0:0/96", "mapped-v6"));
    OK(ipfib_builder_add(b, "2001:db8:1:2:3:4:5:6/128", "v6-host"));
    OK(ipfib_builder_add(b, "20.0.0.0/8", "caf\xc3\xa9")); /* UTF-8 value */

    /* Bad arguments leave the builder as it was. */
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_builder_add(b, "10.0.0.1/8", "host bits"));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_builder_add(b, "10.0.0.0/33", "x"));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_builder_add(b, "10.0.0.0", "x"));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_builder_add(b, "bogus/8", "x"));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_builder_add(b, "2001:db8::/129", "x"));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_builder_add(b, "30.0.0.0/8", "\xff\xfe"));
    CHECK(strstr(ipfib_last_error(), "UTF-8") != NULL);
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_builder_add(NULL, "10.0.0.0/8", "x"));
    CHECK(strstr(ipfib_last_error(), "builder is NULL") != NULL);
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_builder_add(b, NULL, "x"));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_builder_add(b, "10.0.0.0/8", NULL));

    ipfib_table *t = (ipfib_table *)0x1;
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_builder_compile(NULL, &t));
    CHECK(t == NULL); /* *out is NULL on error */
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_builder_compile(b, NULL));
    OK(ipfib_builder_compile(b, &t));
    CHECK(t != NULL);

    /* The builder lives on: a later route is in a later table only. */
    OK(ipfib_builder_add(b, "0.0.0.0/0", "default"));
    ipfib_table *t2 = NULL;
    OK(ipfib_builder_compile(b, &t2));
    uint32_t ri = 0;
    uint8_t len = 99;
    OK(ipfib_lookup_v4(t, v4(8, 8, 8, 8), &ri, &len));
    CHECK(ri == IPFIB_NO_ROUTE && len == 0);
    OK(ipfib_lookup_v4(t2, v4(8, 8, 8, 8), &ri, &len));
    CHECK(ri != IPFIB_NO_ROUTE && len == 0 && value_is(t2, IPFIB_FAMILY_V4, ri, "default"));
    ipfib_builder_free(b); /* t2 does not depend on it */
    CHECK(value_is(t2, IPFIB_FAMILY_V4, ri, "default"));
    ipfib_table_free(t2);

    /* An empty builder compiles to a table that misses everything. */
    ipfib_builder *e = ipfib_builder_new();
    ipfib_table *te = NULL;
    OK(ipfib_builder_compile(e, &te));
    size_t count = 7;
    OK(ipfib_route_count(te, IPFIB_FAMILY_V4, &count));
    CHECK(count == 0);
    OK(ipfib_lookup_v4(te, v4(10, 0, 0, 1), &ri, &len));
    CHECK(ri == IPFIB_NO_ROUTE);
    uint8_t zero6[16] = {0};
    OK(ipfib_lookup_v6(te, zero6, &ri, NULL));
    CHECK(ri == IPFIB_NO_ROUTE);
    ipfib_table_free(te);
    ipfib_builder_free(e);
    return t;
}

static void test_lookups(const ipfib_table *t) {
    uint32_t ri;
    uint8_t len, fam;
    size_t n4 = 0, n6 = 0;
    OK(ipfib_route_count(t, IPFIB_FAMILY_V4, &n4));
    OK(ipfib_route_count(t, IPFIB_FAMILY_V6, &n6));
    CHECK(n4 == 5 && n6 == 4);
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_route_count(t, 5, &n4));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_count(NULL, IPFIB_FAMILY_V4, &n4));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_count(t, IPFIB_FAMILY_V4, NULL));

    /* IPv4 single lookups: most specific wins; prefix_len optional. */
    struct { uint32_t a; const char *value; const char *prefix; uint8_t len; } c4[] = {
        {v4(10, 9, 9, 9), "ten", "10.0.0.0/8", 8},
        {v4(10, 1, 9, 9), "ten-one", "10.1.0.0/16", 16},
        {v4(10, 1, 2, 3), "ten-one-two", "10.1.2.0/24", 24},
        {v4(10, 1, 2, 255), "ten-one-two", "10.1.2.0/24", 24},
        {v4(192, 0, 2, 255), "host", "192.0.2.255/32", 32},
        {v4(20, 255, 255, 255), "caf\xc3\xa9", "20.0.0.0/8", 8},
        {v4(192, 0, 2, 254), NULL, NULL, 0},
        {v4(0, 0, 0, 0), NULL, NULL, 0},
        {v4(255, 255, 255, 255), NULL, NULL, 0},
    };
    size_t k4 = sizeof c4 / sizeof c4[0];
    uint32_t addrs4[16], ris[16];
    uint8_t lens[16];
    for (size_t i = 0; i < k4; i++) {
        addrs4[i] = c4[i].a;
        OK(ipfib_lookup_v4(t, c4[i].a, &ri, &len));
        if (c4[i].value) {
            CHECK(ri < n4 && len == c4[i].len);
            CHECK(value_is(t, IPFIB_FAMILY_V4, ri, c4[i].value));
            CHECK(prefix_text_is(t, IPFIB_FAMILY_V4, ri, c4[i].prefix));
            uint32_t pa = 0;
            uint8_t pl = 0;
            OK(ipfib_route_prefix_v4(t, ri, &pa, &pl));
            CHECK(pl == c4[i].len && (c4[i].a & (pl ? ~0u << (32 - pl) : 0)) == pa);
        } else {
            CHECK(ri == IPFIB_NO_ROUTE && len == 0);
        }
        uint32_t ri2;
        OK(ipfib_lookup_v4(t, c4[i].a, &ri2, NULL));
        CHECK(ri2 == ri);
    }
    /* Batch agrees with single, with and without prefix lengths. */
    OK(ipfib_lookup_v4_batch(t, addrs4, k4, ris, lens));
    for (size_t i = 0; i < k4; i++) {
        OK(ipfib_lookup_v4(t, addrs4[i], &ri, &len));
        CHECK(ris[i] == ri && lens[i] == len);
    }
    memset(ris, 0, sizeof ris);
    OK(ipfib_lookup_v4_batch(t, addrs4, k4, ris, NULL));
    for (size_t i = 0; i < k4; i++) {
        OK(ipfib_lookup_v4(t, addrs4[i], &ri, NULL));
        CHECK(ris[i] == ri);
    }

    /* IPv6. */
    struct { const char *text; const char *value; const char *prefix; uint8_t len; } c6[] = {
        {"2001:db8::1", "doc", "2001:db8::/32", 32},
        {"2001:db8:1::1", "doc-one", "2001:db8:1::/48", 48},
        {"2001:db8:1:2:3:4:5:6", "v6-host", "2001:db8:1:2:3:4:5:6/128", 128},
        {"2001:db8:1:2:3:4:5:7", "doc-one", "2001:db8:1::/48", 48},
        {"::ffff:10.1.2.3", "mapped-v6", "::ffff:0.0.0.0/96", 96},
        {"2001:db9::", NULL, NULL, 0},
        {"::", NULL, NULL, 0},
    };
    size_t k6 = sizeof c6 / sizeof c6[0];
    uint8_t addrs6[16][16];
    for (size_t i = 0; i < k6; i++) {
        /* The address bytes from an independent parser. */
        CHECK(inet_pton(AF_INET6, c6[i].text, addrs6[i]) == 1);
        OK(ipfib_lookup_v6(t, addrs6[i], &ri, &len));
        if (c6[i].value) {
            CHECK(ri < n6 && len == c6[i].len);
            CHECK(value_is(t, IPFIB_FAMILY_V6, ri, c6[i].value));
            CHECK(prefix_text_is(t, IPFIB_FAMILY_V6, ri, c6[i].prefix));
            uint8_t pa[16], pl = 0;
            OK(ipfib_route_prefix_v6(t, ri, pa, &pl));
            CHECK(pl == c6[i].len);
            for (int j = 0; j < 16; j++) {
                int bits = pl - 8 * j;
                uint8_t mask = bits >= 8 ? 0xff : bits <= 0 ? 0 : (uint8_t)(0xff << (8 - bits));
                CHECK((addrs6[i][j] & mask) == pa[j]);
            }
        } else {
            CHECK(ri == IPFIB_NO_ROUTE && len == 0);
        }
    }
    OK(ipfib_lookup_v6_batch(t, &addrs6[0][0], k6, ris, lens));
    for (size_t i = 0; i < k6; i++) {
        OK(ipfib_lookup_v6(t, addrs6[i], &ri, &len));
        CHECK(ris[i] == ri && lens[i] == len);
    }
    OK(ipfib_lookup_v6_batch(t, &addrs6[0][0], k6, ris, NULL));
    for (size_t i = 0; i < k6; i++) {
        OK(ipfib_lookup_v6(t, addrs6[i], &ri, NULL));
        CHECK(ris[i] == ri);
    }

    /* Text: either family; IPv4-mapped text goes to the IPv4 table. */
    OK(ipfib_lookup_text(t, "10.1.2.3", &fam, &ri, &len));
    CHECK(fam == IPFIB_FAMILY_V4 && len == 24 && value_is(t, fam, ri, "ten-one-two"));
    OK(ipfib_lookup_text(t, "  2001:db8:1::9\n", &fam, &ri, &len));
    CHECK(fam == IPFIB_FAMILY_V6 && len == 48 && value_is(t, fam, ri, "doc-one"));
    OK(ipfib_lookup_text(t, "::ffff:10.1.2.3", &fam, &ri, NULL));
    CHECK(fam == IPFIB_FAMILY_V4 && value_is(t, fam, ri, "ten-one-two"));
    OK(ipfib_lookup_text(t, "::ffff:11.1.2.3", &fam, &ri, &len));
    CHECK(fam == IPFIB_FAMILY_V4 && ri == IPFIB_NO_ROUTE && len == 0);
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_text(t, "10.1.2", &fam, &ri, &len));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_text(t, "", &fam, &ri, &len));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_text(t, "10.1.2.3/8", &fam, &ri, &len));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_text(t, "\xff", &fam, &ri, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_text(NULL, "10.1.2.3", &fam, &ri, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_text(t, NULL, &fam, &ri, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_text(t, "10.1.2.3", NULL, &ri, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_text(t, "10.1.2.3", &fam, NULL, &len));

    /* NULL and bad arguments of the lookups. */
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v4(NULL, 1, &ri, &len));
    CHECK(strstr(ipfib_last_error(), "ipfib_lookup_v4: table is NULL") != NULL);
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v4(t, 1, NULL, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6(NULL, addrs6[0], &ri, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6(t, NULL, &ri, &len));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6(t, addrs6[0], NULL, &len));
    /* n = 0: nothing to do, pointers may be NULL; the table may not. */
    OK(ipfib_lookup_v4_batch(t, NULL, 0, NULL, NULL));
    OK(ipfib_lookup_v6_batch(t, NULL, 0, NULL, NULL));
    OK(ipfib_lookup_v4_batch_mt(t, NULL, 0, NULL, NULL, 4));
    OK(ipfib_lookup_v6_batch_mt(t, NULL, 0, NULL, NULL, 0));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v4_batch_mt(NULL, addrs4, 1, ris, lens, 2));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6_batch_mt(t, NULL, 1, ris, lens, 2));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_v4_batch_mt(t, addrs4, SIZE_MAX, ris, lens, 2));
    /* Many shares without the data files: the small table's addresses
     * tiled (and walked through every address of 10.x), on 0-4 threads
     * against single lookups. */
    {
        const size_t big = 200003;
        uint32_t *a = malloc(big * sizeof *a), *r = malloc(big * sizeof *r);
        uint8_t *l = malloc(big);
        for (size_t i = 0; i < big; i++)
            a[i] = (i % 3 == 0) ? addrs4[i % k4] : (uint32_t)(0x0a000000u + i * 2654435761u % 0x01000000u);
        for (size_t threads = 0; threads <= 4; threads++) {
            memset(r, 0xee, big * sizeof *r);
            OK(ipfib_lookup_v4_batch_mt(t, a, big, r, l, threads));
            for (size_t i = 0; i < big; i += 7) {
                uint32_t r1;
                uint8_t l1;
                OK(ipfib_lookup_v4(t, a[i], &r1, &l1));
                CHECK(r[i] == r1 && l[i] == l1);
            }
            CHECK(r[big - 1] != 0xeeeeeeeeu);
        }
        free(a);
        free(r);
        free(l);
    }
    /* Small inputs: one share on the calling thread, the batch's answers. */
    OK(ipfib_lookup_v4_batch_mt(t, addrs4, k4, ris, lens, 8));
    for (size_t i = 0; i < k4; i++) {
        uint32_t r;
        uint8_t l;
        OK(ipfib_lookup_v4(t, addrs4[i], &r, &l));
        CHECK(r == ris[i] && l == lens[i]);
    }
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v4_batch(NULL, addrs4, 1, ris, lens));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v4_batch(t, NULL, 1, ris, lens));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v4_batch(t, addrs4, 1, NULL, lens));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6_batch(NULL, &addrs6[0][0], 1, ris, lens));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6_batch(t, NULL, 1, ris, lens));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_lookup_v6_batch(t, &addrs6[0][0], 1, NULL, lens));
    /* Counts whose byte size overflows: refused before any access. */
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_v4_batch(t, addrs4, SIZE_MAX, ris, lens));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_v6_batch(t, &addrs6[0][0], SIZE_MAX / 8, ris, lens));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_lookup_v4_batch(t, addrs4, SIZE_MAX / 2, ris, lens));
    /* Misaligned arrays. */
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT,
           ipfib_lookup_v4_batch(t, (const uint32_t *)((const char *)addrs4 + 1), 2, ris, lens));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT,
           ipfib_lookup_v4_batch(t, addrs4, 2, (uint32_t *)((char *)ris + 2), lens));

    /* Routes: values, prefixes, bad indexes and families. */
    const char *v = NULL;
    size_t vlen = 0;
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_value(t, IPFIB_FAMILY_V4, IPFIB_NO_ROUTE, &v, &vlen));
    CHECK(strstr(ipfib_last_error(), "IPFIB_NO_ROUTE") != NULL);
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_value(t, IPFIB_FAMILY_V4, (uint32_t)n4, &v, &vlen));
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_value(t, IPFIB_FAMILY_V6, (uint32_t)n6, &v, &vlen));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_route_value(t, 0, 0, &v, &vlen));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_value(NULL, IPFIB_FAMILY_V4, 0, &v, &vlen));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_value(t, IPFIB_FAMILY_V4, 0, NULL, &vlen));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_value(t, IPFIB_FAMILY_V4, 0, &v, NULL));
    uint32_t pa;
    uint8_t pl, pa6[16];
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_prefix_v4(t, (uint32_t)n4, &pa, &pl));
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_prefix_v4(t, IPFIB_NO_ROUTE, &pa, &pl));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_v4(NULL, 0, &pa, &pl));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_v4(t, 0, NULL, &pl));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_v4(t, 0, &pa, NULL));
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_prefix_v6(t, (uint32_t)n6, pa6, &pl));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_v6(NULL, 0, pa6, &pl));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_v6(t, 0, NULL, &pl));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_v6(t, 0, pa6, NULL));
    /* Route order: address order, covering before covered. */
    char buf[IPFIB_PREFIX_TEXT_MAX];
    const char *order4[] = {"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "20.0.0.0/8", "192.0.2.255/32"};
    for (uint32_t i = 0; i < 5; i++)
        CHECK(prefix_text_is(t, IPFIB_FAMILY_V4, i, order4[i]));
    const char *order6[] = {"::ffff:0.0.0.0/96", "2001:db8::/32", "2001:db8:1::/48", "2001:db8:1:2:3:4:5:6/128"};
    for (uint32_t i = 0; i < 4; i++)
        CHECK(prefix_text_is(t, IPFIB_FAMILY_V6, i, order6[i]));
    /* Text into a buffer: exactly enough, one byte short (left as it was). */
    OK(ipfib_route_prefix_text(t, IPFIB_FAMILY_V4, 0, buf, 11));
    CHECK(strcmp(buf, "10.0.0.0/8") == 0);
    memset(buf, 'x', sizeof buf);
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_route_prefix_text(t, IPFIB_FAMILY_V4, 0, buf, 10));
    CHECK(buf[0] == 'x');
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_text(t, IPFIB_FAMILY_V4, 0, NULL, 48));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_route_prefix_text(NULL, IPFIB_FAMILY_V4, 0, buf, 48));
    EXPECT(IPFIB_STATUS_OUT_OF_RANGE, ipfib_route_prefix_text(t, IPFIB_FAMILY_V6, 99, buf, 48));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_route_prefix_text(t, 7, 0, buf, 48));
    /* A builder table loaded nothing leniently. */
    const char *rep = "x";
    size_t rlen = 9;
    OK(ipfib_table_load_report(t, &rep, &rlen));
    CHECK(rlen == 0);
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_table_load_report(NULL, &rep, &rlen));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_table_load_report(t, NULL, &rlen));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_table_load_report(t, &rep, NULL));
}

static void test_open_errors(const char *dir) {
    char path[4096];
    ipfib_table *t = (ipfib_table *)0x1;
    EXPECT(IPFIB_STATUS_IO, ipfib_table_open("/nonexistent/ipfib/table.txt", NULL, NULL, 0, &t));
    CHECK(t == NULL);
    CHECK(strstr(ipfib_last_error(), "/nonexistent/ipfib/table.txt") != NULL);
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_table_open(NULL, NULL, NULL, 0, &t));
    EXPECT(IPFIB_STATUS_NULL_POINTER, ipfib_table_open("x", NULL, NULL, 0, NULL));

    snprintf(path, sizeof path, "%s/good.txt", dir);
    write_file(path, "# networks\n10.0.0.0/8 a\n2001:db8::/32 b\n10.0.0.0/8 c\n");
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_table_open(path, "nonsense", NULL, 0, &t));
    CHECK(t == NULL);
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_table_open(path, NULL, NULL, 0x80, &t));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_table_open(path, "text", "no-such-policy", 0, &t));
    OK(ipfib_table_open(path, "text", NULL, IPFIB_OPEN_STRICT, &t));
    uint32_t ri;
    uint8_t fam;
    OK(ipfib_lookup_text(t, "10.2.3.4", &fam, &ri, NULL));
    CHECK(value_is(t, IPFIB_FAMILY_V4, ri, "c")); /* the later duplicate wins */
    OK(ipfib_lookup_text(t, "2001:db8::5", &fam, &ri, NULL));
    CHECK(fam == IPFIB_FAMILY_V6 && value_is(t, IPFIB_FAMILY_V6, ri, "b"));
    ipfib_table_free(t);

    /* A bad line in a text table: an error naming the line. */
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    write_file(path, "10.0.0.0/8 a\nthis is no route\n");
    t = (ipfib_table *)0x1;
    EXPECT(IPFIB_STATUS_PARSE, ipfib_table_open(path, NULL, NULL, 0, &t));
    CHECK(t == NULL);
    CHECK(strstr(ipfib_last_error(), "bad.txt:2:") != NULL);
    /* Host bits: refused, unless masked. */
    snprintf(path, sizeof path, "%s/hostbits.txt", dir);
    write_file(path, "10.0.0.1/8 a\n");
    EXPECT(IPFIB_STATUS_PARSE, ipfib_table_open(path, NULL, NULL, 0, &t));
    OK(ipfib_table_open(path, NULL, NULL, IPFIB_OPEN_MASK_HOST_BITS, &t));
    char buf[IPFIB_PREFIX_TEXT_MAX];
    OK(ipfib_lookup_text(t, "10.9.9.9", &fam, &ri, NULL));
    CHECK(ipfib_route_prefix_text(t, fam, ri, buf, sizeof buf) == IPFIB_STATUS_OK &&
          strcmp(buf, "10.0.0.0/8") == 0);
    ipfib_table_free(t);
    /* Not a table, and a damaged compiled table file. */
    snprintf(path, sizeof path, "%s/empty.ipfib", dir);
    write_file(path, "IPFIBTBL but then nothing a compiled table file holds");
    EXPECT(IPFIB_STATUS_PARSE, ipfib_table_open(path, NULL, NULL, 0, &t));
    EXPECT(IPFIB_STATUS_PARSE, ipfib_table_open(path, "compiled", NULL, 0, &t));
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT, ipfib_table_open(path, "compiled", "origin-asn", 0, &t));
    EXPECT(IPFIB_STATUS_IO, ipfib_table_open(dir, "compiled", NULL, 0, &t));
}

/* ---- real tables against the oracle ------------------------------------ */

struct want {
    uint8_t family;
    uint8_t addr[16];   /* IPv6 */
    uint32_t addr4;     /* IPv4 */
    int hit;
    uint32_t paddr4;
    uint8_t paddr6[16];
    uint8_t plen;
    char value[64];
};

static struct want *wants;
static size_t nwant, nwant4, nwant6;
static uint32_t *addrs4;
static uint8_t *addrs6;
static struct want **w4, **w6; /* by family, in file order */

static void read_oracle(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot read %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t cap = 1 << 16;
    wants = malloc(cap * sizeof *wants);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (nwant == cap) {
            cap *= 2;
            wants = realloc(wants, cap * sizeof *wants);
        }
        struct want *w = &wants[nwant];
        memset(w, 0, sizeof *w);
        unsigned fam, plen;
        char a[64], p[64], l[16], v[64];
        if (sscanf(line, "%u %63s %63s %15s %63s", &fam, a, p, l, v) != 5) {
            fprintf(stderr, "bad oracle line: %s", line);
            exit(2);
        }
        w->family = (uint8_t)fam;
        w->hit = strcmp(p, "-") != 0;
        if (w->hit) {
            plen = (unsigned)strtoul(l, NULL, 10);
            w->plen = (uint8_t)plen;
            snprintf(w->value, sizeof w->value, "%s", v);
        }
        if (fam == 4) {
            w->addr4 = (uint32_t)strtoul(a, NULL, 10);
            if (w->hit)
                w->paddr4 = (uint32_t)strtoul(p, NULL, 10);
            nwant4++;
        } else if (fam == 6) {
            if (!hex16(a, w->addr) || (w->hit && !hex16(p, w->paddr6))) {
                fprintf(stderr, "bad oracle line: %s", line);
                exit(2);
            }
            nwant6++;
        } else {
            fprintf(stderr, "bad oracle line: %s", line);
            exit(2);
        }
        nwant++;
    }
    fclose(f);
    addrs4 = malloc((nwant4 + 1) * sizeof *addrs4);
    addrs6 = malloc((nwant6 + 1) * 16);
    w4 = malloc((nwant4 + 1) * sizeof *w4);
    w6 = malloc((nwant6 + 1) * sizeof *w6);
    size_t i4 = 0, i6 = 0;
    for (size_t i = 0; i < nwant; i++) {
        if (wants[i].family == 4) {
            addrs4[i4] = wants[i].addr4;
            w4[i4++] = &wants[i];
        } else {
            memcpy(addrs6 + 16 * i6, wants[i].addr, 16);
            w6[i6++] = &wants[i];
        }
    }
}

/* Does route `ri` of `t` answer `w`? (Checked on a hit: prefix and value.) */
static int answers(const ipfib_table *t, const struct want *w, uint32_t ri, uint8_t len) {
    if (!w->hit)
        return ri == IPFIB_NO_ROUTE && len == 0;
    if (ri == IPFIB_NO_ROUTE || len != w->plen || !value_is(t, w->family, ri, w->value))
        return 0;
    uint8_t pl = 0;
    if (w->family == 4) {
        uint32_t pa = 0;
        return ipfib_route_prefix_v4(t, ri, &pa, &pl) == IPFIB_STATUS_OK && pl == w->plen &&
               pa == w->paddr4;
    }
    uint8_t pa[16];
    return ipfib_route_prefix_v6(t, ri, pa, &pl) == IPFIB_STATUS_OK && pl == w->plen &&
           memcmp(pa, w->paddr6, 16) == 0;
}

/* Check every oracle address of the families `t` holds (`fams`: bit 4 for
 * IPv4, bit 6 for IPv6; a family not held must miss). Returns mismatches
 * (this function is also what each thread runs). */
static long check_table(const ipfib_table *t, int fams) {
    long bad = 0;
    uint32_t *ri = malloc((nwant + 1) * sizeof *ri);
    uint8_t *len = malloc(nwant + 1);
    if (ipfib_lookup_v4_batch(t, addrs4, nwant4, ri, len) != IPFIB_STATUS_OK)
        return -1;
    for (size_t i = 0; i < nwant4; i++) {
        uint32_t r1;
        uint8_t l1;
        if (ipfib_lookup_v4(t, addrs4[i], &r1, &l1) != IPFIB_STATUS_OK || r1 != ri[i] || l1 != len[i])
            bad++;
        int ok = (fams & (1 << 4)) ? answers(t, w4[i], ri[i], len[i]) : ri[i] == IPFIB_NO_ROUTE;
        if (!ok && bad++ < 5)
            fprintf(stderr, "IPv4 %08x: route %u /%u, oracle %s /%u %s\n", addrs4[i], ri[i],
                    len[i], w4[i]->hit ? "hit" : "miss", w4[i]->plen, w4[i]->value);
    }
    if (ipfib_lookup_v6_batch(t, addrs6, nwant6, ri, len) != IPFIB_STATUS_OK)
        return -1;
    for (size_t i = 0; i < nwant6; i++) {
        uint32_t r1;
        uint8_t l1;
        if (ipfib_lookup_v6(t, addrs6 + 16 * i, &r1, &l1) != IPFIB_STATUS_OK || r1 != ri[i] ||
            l1 != len[i])
            bad++;
        int ok = (fams & (1 << 6)) ? answers(t, w6[i], ri[i], len[i]) : ri[i] == IPFIB_NO_ROUTE;
        if (!ok && bad++ < 5)
            fprintf(stderr, "IPv6 #%zu: route %u /%u, oracle %s /%u %s\n", i, ri[i], len[i],
                    w6[i]->hit ? "hit" : "miss", w6[i]->plen, w6[i]->value);
    }
    free(ri);
    free(len);
    return bad;
}

/* ipfib_lookup_*_batch_mt: the oracle addresses tiled to 300,000 (several
 * shares of 65,536), on 0 (one per CPU) to 5 threads, with and without
 * lengths, answer as the one-thread batch (itself checked against the
 * oracle by check_table). */
static void check_mt(const ipfib_table *t) {
    const size_t big = 300000;
    uint32_t *a4 = malloc(big * sizeof *a4);
    uint8_t *a6 = malloc(big * 16);
    uint32_t *r1 = malloc(big * sizeof *r1), *rn = malloc(big * sizeof *rn);
    uint8_t *l1 = malloc(big), *ln = malloc(big);
    for (size_t i = 0; i < big; i++) {
        a4[i] = addrs4[i % nwant4];
        memcpy(a6 + 16 * i, addrs6 + 16 * (i % nwant6), 16);
    }
    for (int fam = 4; fam <= 6; fam += 2) {
        if (fam == 4)
            OK(ipfib_lookup_v4_batch(t, a4, big, r1, l1));
        else
            OK(ipfib_lookup_v6_batch(t, a6, big, r1, l1));
        for (size_t threads = 0; threads <= 5; threads++) {
            memset(rn, 0xee, big * sizeof *rn);
            memset(ln, 0xee, big);
            if (fam == 4)
                OK(ipfib_lookup_v4_batch_mt(t, a4, big, rn, ln, threads));
            else
                OK(ipfib_lookup_v6_batch_mt(t, a6, big, rn, ln, threads));
            CHECK(memcmp(r1, rn, big * sizeof *rn) == 0);
            CHECK(memcmp(l1, ln, big) == 0);
            memset(rn, 0xee, big * sizeof *rn);
            if (fam == 4)
                OK(ipfib_lookup_v4_batch_mt(t, a4, big, rn, NULL, threads));
            else
                OK(ipfib_lookup_v6_batch_mt(t, a6, big, rn, NULL, threads));
            CHECK(memcmp(r1, rn, big * sizeof *rn) == 0);
        }
    }
    /* Overlapping outputs are refused before any thread starts. */
    EXPECT(IPFIB_STATUS_INVALID_ARGUMENT,
           ipfib_lookup_v4_batch_mt(t, a4, big, rn, (uint8_t *)rn + 8, 4));
    free(a4);
    free(a6);
    free(r1);
    free(rn);
    free(l1);
    free(ln);
}

struct job {
    const ipfib_table *t;
    int fams;
    long bad;
};

static void *run_job(void *arg) {
    struct job *j = arg;
    j->bad = 0;
    for (int pass = 0; pass < 3 && j->bad == 0; pass++)
        j->bad = check_table(j->t, j->fams);
    return NULL;
}

/* The same lookups from `n` threads at once on one table. */
static void check_threads(const ipfib_table *t, int fams, int n) {
    pthread_t th[8];
    struct job jobs[8];
    for (int i = 0; i < n; i++) {
        jobs[i] = (struct job){t, fams, 0};
        CHECK(pthread_create(&th[i], NULL, run_job, &jobs[i]) == 0);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (jobs[i].bad != 0)
            fprintf(stderr, "thread %d: %ld mismatches\n", i, jobs[i].bad);
        CHECK(jobs[i].bad == 0);
    }
}

/* A failing call on one thread leaves another thread's message alone. */
static void *fail_on_thread(void *arg) {
    (void)arg;
    uint32_t ri;
    ipfib_lookup_v4(NULL, 0, &ri, NULL);
    return strstr(ipfib_last_error(), "ipfib_lookup_v4") ? (void *)1 : NULL;
}

static void test_thread_local_error(void) {
    ipfib_route_count(NULL, IPFIB_FAMILY_V4, NULL);
    CHECK(strstr(ipfib_last_error(), "ipfib_route_count") != NULL);
    pthread_t th;
    void *res = NULL;
    CHECK(pthread_create(&th, NULL, fail_on_thread, NULL) == 0);
    pthread_join(th, &res);
    CHECK(res == (void *)1);
    CHECK(strstr(ipfib_last_error(), "ipfib_route_count") != NULL);
}

static void test_real(const char *oracle, const char *v4path, const char *v6path, const char *image) {
    read_oracle(oracle);
    printf("oracle: %zu IPv4 and %zu IPv6 addresses\n", nwant4, nwant6);
    CHECK(nwant4 > 1000 && nwant6 > 1000);
    ipfib_table *t4 = NULL, *t6 = NULL, *ti = NULL;
    OK(ipfib_table_open(v4path, NULL, NULL, 0, &t4));
    OK(ipfib_table_open(v6path, "text", NULL, 0, &t6));
    OK(ipfib_table_open(image, NULL, NULL, 0, &ti));
    if (!t4 || !t6 || !ti)
        return;
    size_t c4 = 0, c6 = 0, ci4 = 0, ci6 = 0;
    OK(ipfib_route_count(t4, IPFIB_FAMILY_V4, &c4));
    OK(ipfib_route_count(t6, IPFIB_FAMILY_V6, &c6));
    OK(ipfib_route_count(ti, IPFIB_FAMILY_V4, &ci4));
    OK(ipfib_route_count(ti, IPFIB_FAMILY_V6, &ci6));
    printf("tables: %zu IPv4 routes (text), %zu IPv6 (text), %zu + %zu (compiled)\n", c4, c6,
           ci4, ci6);
    CHECK(c4 > 1000000 && c6 > 200000 && ci4 == c4 && ci6 == c6);
    size_t n = 1;
    OK(ipfib_route_count(t4, IPFIB_FAMILY_V6, &n));
    CHECK(n == 0);

    long bad;
    CHECK((bad = check_table(t4, 1 << 4)) == 0);
    CHECK((bad = check_table(t6, 1 << 6)) == 0);
    CHECK((bad = check_table(ti, 1 << 4 | 1 << 6)) == 0);

    /* The same routes give the same indexes, loaded or mapped. */
    uint32_t *ra = malloc((nwant4 + nwant6 + 1) * sizeof *ra);
    uint32_t *rb = malloc((nwant4 + nwant6 + 1) * sizeof *rb);
    OK(ipfib_lookup_v4_batch(t4, addrs4, nwant4, ra, NULL));
    OK(ipfib_lookup_v4_batch(ti, addrs4, nwant4, rb, NULL));
    CHECK(memcmp(ra, rb, nwant4 * sizeof *ra) == 0);
    OK(ipfib_lookup_v6_batch(t6, addrs6, nwant6, ra, NULL));
    OK(ipfib_lookup_v6_batch(ti, addrs6, nwant6, rb, NULL));
    CHECK(memcmp(ra, rb, nwant6 * sizeof *ra) == 0);
    /* Batches of every small size and odd offsets agree with singles. */
    for (size_t k = 1; k <= 70; k++) {
        size_t off = (k * 37) % (nwant4 - 80);
        OK(ipfib_lookup_v4_batch(ti, addrs4 + off, k, ra, NULL));
        for (size_t i = 0; i < k; i++) {
            uint32_t r;
            OK(ipfib_lookup_v4(ti, addrs4[off + i], &r, NULL));
            CHECK(r == ra[i]);
        }
        off = (k * 41) % (nwant6 - 80);
        OK(ipfib_lookup_v6_batch(ti, addrs6 + 16 * off, k, ra, NULL));
        for (size_t i = 0; i < k; i++) {
            uint32_t r;
            OK(ipfib_lookup_v6(ti, addrs6 + 16 * (off + i), &r, NULL));
            CHECK(r == ra[i]);
        }
    }
    free(ra);
    free(rb);
    check_mt(ti);
    check_mt(t4);

    /* Many threads on one table at once (both kinds of table). */
    check_threads(ti, 1 << 4 | 1 << 6, 4);
    check_threads(t4, 1 << 4, 4);

    ipfib_table_free(t4);
    ipfib_table_free(t6);
    ipfib_table_free(ti);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 6) {
        fprintf(stderr, "usage: %s TMPDIR [ORACLE V4_TABLE V6_TABLE IMAGE]\n", argv[0]);
        return 2;
    }
    test_misc();
    ipfib_table *small = build_small();
    if (small)
        test_lookups(small);
    ipfib_table_free(small);
    test_open_errors(argv[1]);
    test_thread_local_error();
    if (argc == 6)
        test_real(argv[2], argv[3], argv[4], argv[5]);
    else
        printf("real tables: not given\n");
    free(wants);
    free(addrs4);
    free(addrs6);
    free(w4);
    free(w6);
    if (failures) {
        fprintf(stderr, "test_capi: %d checks FAILED\n", failures);
        return 1;
    }
    printf("test_capi: all checks passed\n");
    return 0;
}
