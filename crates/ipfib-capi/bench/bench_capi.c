/*
 * The C side of the C ABI benchmark (README.md, "Benchmark"): the
 * addresses capi-bench-rust wrote, looked up through libipfib in the
 * compiled table file it wrote (the same engines).
 *
 *   bench_capi IMAGE ADDRS FAMILY(4|6) PASSES
 *
 * Per pass: one ipfib_lookup_*_batch call over all addresses (as the Rust
 * side's one lookup_batch::<32> call), the same in calls of 256 addresses,
 * the batch with prefix lengths, and one ipfib_lookup_* call per address.
 * Prints each rate's median and range in million lookups per second, and
 * the checksum of the route indexes (equal to the Rust side's).
 */
#define _POSIX_C_SOURCE 200809L
#include "ipfib.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *rates, int n) {
    qsort(rates, (size_t)n, sizeof *rates, cmp);
    printf("%s: median %.1f M/s [%.1f-%.1f] over %d passes\n", what, rates[n / 2], rates[0],
           rates[n - 1], n);
}

static void check(ipfib_status s, const char *what) {
    if (s != IPFIB_STATUS_OK) {
        fprintf(stderr, "bench_capi: %s: %s\n", what, ipfib_last_error());
        exit(2);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s IMAGE ADDRS FAMILY(4|6) PASSES\n", argv[0]);
        return 2;
    }
    int fam = atoi(argv[3]), passes = atoi(argv[4]);
    if ((fam != 4 && fam != 6) || passes < 1 || passes > 100)
        return 2;
    size_t width = fam == 4 ? 4 : 16;
    ipfib_table *t = NULL;
    check(ipfib_table_open(argv[1], NULL, NULL, 0, &t), argv[1]);
    FILE *f = fopen(argv[2], "rb");
    if (!f)
        return 2;
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f) / width;
    fseek(f, 0, SEEK_SET);
    uint8_t *addrs = aligned_alloc(64, n * width + 64);
    if (!addrs || fread(addrs, width, n, f) != n)
        return 2;
    fclose(f);
    uint32_t *ri = aligned_alloc(64, n * 4 + 64);
    uint8_t *len = malloc(n);
    double r_all[100], r_256[100], r_len[100], r_single[100];
    uint64_t sum = 0;
    for (int p = 0; p < passes; p++) {
        double t0 = now();
        if (fam == 4)
            check(ipfib_lookup_v4_batch(t, (const uint32_t *)addrs, n, ri, NULL), "batch");
        else
            check(ipfib_lookup_v6_batch(t, addrs, n, ri, NULL), "batch");
        r_all[p] = (double)n / (now() - t0) / 1e6;
        sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += ri[i];

        t0 = now();
        for (size_t i = 0; i < n; i += 256) {
            size_t k = n - i < 256 ? n - i : 256;
            if (fam == 4)
                check(ipfib_lookup_v4_batch(t, (const uint32_t *)addrs + i, k, ri + i, NULL), "batch");
            else
                check(ipfib_lookup_v6_batch(t, addrs + 16 * i, k, ri + i, NULL), "batch");
        }
        r_256[p] = (double)n / (now() - t0) / 1e6;

        t0 = now();
        if (fam == 4)
            check(ipfib_lookup_v4_batch(t, (const uint32_t *)addrs, n, ri, len), "batch");
        else
            check(ipfib_lookup_v6_batch(t, addrs, n, ri, len), "batch");
        r_len[p] = (double)n / (now() - t0) / 1e6;

        uint64_t s = 0;
        t0 = now();
        for (size_t i = 0; i < n; i++) {
            uint32_t r;
            if (fam == 4)
                check(ipfib_lookup_v4(t, ((const uint32_t *)addrs)[i], &r, NULL), "single");
            else
                check(ipfib_lookup_v6(t, addrs + 16 * i, &r, NULL), "single");
            s += r;
        }
        r_single[p] = (double)n / (now() - t0) / 1e6;
        if (s != sum) {
            fprintf(stderr, "bench_capi: single and batch disagree\n");
            return 1;
        }
    }
    printf("%zu addresses, checksum %llu\n", n, (unsigned long long)sum);
    report("C batch (one call)", r_all, passes);
    report("C batch (256 per call)", r_256, passes);
    report("C batch with prefix_len", r_len, passes);
    report("C single ipfib_lookup", r_single, passes);
    ipfib_table_free(t);
    free(addrs);
    free(ri);
    free(len);
    return 0;
}
