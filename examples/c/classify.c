/*
 * classify: per-network traffic of a capture, through the ipfib C ABI.
 *
 *   classify NETWORKS PCAP
 *
 * NETWORKS is any table file ipfib reads (text "PREFIX/LEN HOSTGROUP",
 * compiled, ...); PCAP a capture libpcap reads. Every IPv4 and IPv6 packet
 * (Ethernet with any 802.1Q / 802.1ad / QinQ tags, Linux cooked capture
 * SLL; other frames skipped) has its source and destination looked up,
 * in batches, and its direction decided:
 *   incoming  the destination is in a network, the source is not
 *   outgoing  the source is, the destination is not
 *   internal  both are (counted under the destination's network)
 *   other     neither (not counted)
 * Bytes are each frame's wire length (the pcap record's original length).
 * Output: one line per network (the matched route's prefix) that saw
 * traffic, IPv4 networks first, each family in address order:
 *   PREFIX in_packets in_bytes out_packets out_bytes internal_packets internal_bytes
 * then "# skipped non_ip=N truncated=N": non_ip counts frames that are not
 * IPv4/IPv6 (including a wrong IP version or header length, and frames of
 * link types not read), truncated those cut by the snap length inside the
 * link or IP header. IPv6 addresses are looked up as IPv6 (no unmapping of
 * ::ffff:a.b.c.d), as `ipfib classify` does.
 *
 * Build: make (examples/c/Makefile, with pkg-config for ipfib and libpcap).
 */
#include <ipfib.h>
#include <pcap/pcap.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DLT_LINUX_SLL
#define DLT_LINUX_SLL 113
#endif

enum { IN, OUT, INTERNAL, DIRECTIONS };
#define BATCH 256 /* packets per family per batch of lookups */

struct counts {
    uint64_t packets[DIRECTIONS];
    uint64_t bytes[DIRECTIONS];
};

struct family {
    uint8_t family;         /* IPFIB_FAMILY_V4 or IPFIB_FAMILY_V6 */
    size_t routes;
    struct counts *by_route; /* indexed by route index */
    size_t n;               /* packets waiting for their lookups */
    uint32_t v4[2 * BATCH]; /* sources, then destinations */
    uint8_t v6[2 * BATCH][16];
    uint32_t wire[BATCH];
    uint32_t route[2 * BATCH];
};

static const ipfib_table *table;
static struct family fam4 = {.family = IPFIB_FAMILY_V4};
static struct family fam6 = {.family = IPFIB_FAMILY_V6};
static uint64_t non_ip, truncated;

static void die(const char *what, ipfib_status s) {
    fprintf(stderr, "classify: %s: %s (%s)\n", what, ipfib_last_error(), ipfib_status_name((int)s));
    exit(2);
}

/* Look up the waiting packets' addresses and count them. */
static void flush(struct family *f) {
    if (f->n == 0)
        return;
    /* Destinations follow the sources: move them up against them. */
    ipfib_status s;
    if (f->family == IPFIB_FAMILY_V4) {
        memmove(&f->v4[f->n], &f->v4[BATCH], f->n * sizeof f->v4[0]);
        s = ipfib_lookup_v4_batch(table, f->v4, 2 * f->n, f->route, NULL);
    } else {
        memmove(&f->v6[f->n], &f->v6[BATCH], f->n * sizeof f->v6[0]);
        s = ipfib_lookup_v6_batch(table, &f->v6[0][0], 2 * f->n, f->route, NULL);
    }
    if (s != IPFIB_STATUS_OK)
        die("lookup", s);
    for (size_t i = 0; i < f->n; i++) {
        uint32_t src = f->route[i], dst = f->route[f->n + i];
        int dir;
        uint32_t net;
        if (dst != IPFIB_NO_ROUTE && src == IPFIB_NO_ROUTE) {
            dir = IN, net = dst;
        } else if (src != IPFIB_NO_ROUTE && dst == IPFIB_NO_ROUTE) {
            dir = OUT, net = src;
        } else if (src != IPFIB_NO_ROUTE) {
            dir = INTERNAL, net = dst;
        } else {
            continue; /* other */
        }
        f->by_route[net].packets[dir]++;
        f->by_route[net].bytes[dir] += f->wire[i];
    }
    f->n = 0;
}

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

/* One frame: its IP header, or a skip counted. */
static void frame(int link, const uint8_t *d, uint32_t caplen, uint32_t wire) {
    uint32_t at;
    uint16_t type;
    if (link == DLT_EN10MB) {
        at = 12;
        if (caplen < at + 2)
            goto cut;
        type = be16(d + at);
        while (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
            at += 4;
            if (caplen < at + 2)
                goto cut;
            type = be16(d + at);
        }
        at += 2;
    } else if (link == DLT_LINUX_SLL) {
        if (caplen < 16)
            goto cut;
        type = be16(d + 14);
        at = 16;
    } else {
        non_ip++; /* a link type this example does not read */
        return;
    }
    const uint8_t *ip = d + at;
    uint32_t len = caplen - at;
    if (type == 0x0800) {
        if (len < 20)
            goto cut;
        if (ip[0] >> 4 != 4 || (ip[0] & 0x0f) < 5) {
            non_ip++;
            return;
        }
        struct family *f = &fam4;
        f->v4[f->n] = (uint32_t)ip[12] << 24 | (uint32_t)ip[13] << 16 | (uint32_t)ip[14] << 8 | ip[15];
        f->v4[BATCH + f->n] = (uint32_t)ip[16] << 24 | (uint32_t)ip[17] << 16 | (uint32_t)ip[18] << 8 | ip[19];
        f->wire[f->n++] = wire;
        if (f->n == BATCH)
            flush(f);
    } else if (type == 0x86dd) {
        if (len < 40)
            goto cut;
        if (ip[0] >> 4 != 6) {
            non_ip++;
            return;
        }
        struct family *f = &fam6;
        memcpy(f->v6[f->n], ip + 8, 16);
        memcpy(f->v6[BATCH + f->n], ip + 24, 16);
        f->wire[f->n++] = wire;
        if (f->n == BATCH)
            flush(f);
    } else {
        non_ip++;
    }
    return;
cut:
    truncated++;
}

static void report(struct family *f) {
    char prefix[IPFIB_PREFIX_TEXT_MAX];
    for (size_t r = 0; r < f->routes; r++) {
        const struct counts *c = &f->by_route[r];
        if (!(c->packets[IN] | c->packets[OUT] | c->packets[INTERNAL]))
            continue;
        ipfib_status s = ipfib_route_prefix_text(table, f->family, (uint32_t)r, prefix, sizeof prefix);
        if (s != IPFIB_STATUS_OK)
            die("prefix", s);
        printf("%s %llu %llu %llu %llu %llu %llu\n", prefix,
               (unsigned long long)c->packets[IN], (unsigned long long)c->bytes[IN],
               (unsigned long long)c->packets[OUT], (unsigned long long)c->bytes[OUT],
               (unsigned long long)c->packets[INTERNAL], (unsigned long long)c->bytes[INTERNAL]);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s NETWORKS PCAP\n", argv[0]);
        return 2;
    }
    ipfib_table *t = NULL;
    ipfib_status s = ipfib_table_open(argv[1], NULL, NULL, 0, &t);
    if (s != IPFIB_STATUS_OK)
        die(argv[1], s);
    table = t;
    struct family *fams[] = {&fam4, &fam6};
    for (int i = 0; i < 2; i++) {
        if ((s = ipfib_route_count(table, fams[i]->family, &fams[i]->routes)) != IPFIB_STATUS_OK)
            die("route count", s);
        fams[i]->by_route = calloc(fams[i]->routes + 1, sizeof(struct counts));
        if (!fams[i]->by_route) {
            fprintf(stderr, "classify: out of memory\n");
            return 2;
        }
    }

    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline(argv[2], err);
    if (!p) {
        fprintf(stderr, "classify: %s: %s\n", argv[2], err);
        return 2;
    }
    int link = pcap_datalink(p);
    struct pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(p, &h, &data)) == 1)
        frame(link, data, h->caplen, h->len);
    if (rc == PCAP_ERROR) {
        fprintf(stderr, "classify: %s: %s\n", argv[2], pcap_geterr(p));
        return 2;
    }
    pcap_close(p);
    flush(&fam4);
    flush(&fam6);

    report(&fam4);
    report(&fam6);
    printf("# skipped non_ip=%llu truncated=%llu\n", (unsigned long long)non_ip,
           (unsigned long long)truncated);
    free(fam4.by_route);
    free(fam6.by_route);
    ipfib_table_free(t);
    return 0;
}
