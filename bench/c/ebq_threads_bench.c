/* ebq_threads_bench: ebq compress, decompress and ebq_add on 1..T threads, side by side.
 *
 *   ebq_threads_bench [-f file.f32] [-n N] [-e REL] [-t 1,2,...] [-r reps]
 *
 * Input: raw little-endian float32 (-f), else N Laplace values (default 2^24: 64 MiB). Each
 * round times every (level, operation, thread count) once, in turn, so that load from other
 * processes falls on every column alike; the best of reps rounds is kept. MB/s are input bytes
 * (1e6) per second; "x" is the speed over the first thread count's. Also checks that every
 * thread count gives the same bytes. "cpu ms" is the process's CPU time per call (user and
 * system, all threads), the mean of the rounds (ideal: the same figure at every thread count;
 * other jobs on the same cores inflate it too, through caches and migrations).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpiucc.h"

#define MAX_T 16

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static float *load(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *n = (size_t)size / 4;
    float *x = malloc(*n * 4 + 4);
    if (x && fread(x, 4, *n, f) != *n) *n = 0;
    fclose(f);
    return x;
}

int main(int argc, char **argv) {
    const char *file = NULL;
    size_t n = (size_t)1 << 24;
    double rel = 1e-3;
    unsigned tlist[MAX_T] = {1, 2};
    int nt = 2, reps = 5, ch;
    while ((ch = getopt(argc, argv, "f:n:e:t:r:")) != -1) {
        switch (ch) {
        case 'f': file = optarg; break;
        case 'n': n = (size_t)strtoull(optarg, NULL, 0); break;
        case 'e': rel = strtod(optarg, NULL); break;
        case 'r': reps = atoi(optarg); break;
        case 't':
            nt = 0;
            for (char *tok = strtok(optarg, ","); tok && nt < MAX_T; tok = strtok(NULL, ","))
                tlist[nt++] = (unsigned)atoi(tok);
            break;
        default:
            fprintf(stderr, "usage: ebq_threads_bench [-f file.f32] [-n N] [-e REL] [-t 1,2] [-r reps]\n");
            return 2;
        }
    }
    float *x = file ? load(file, &n) : malloc(n * 4 + 4);
    if (!x || !n) return 2;
    if (!file) {
        uint64_t s = 29;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double u = ((double)(s >> 11) + 0.5) * 0x1p-53 - 0.5;
            x[i] = (float)(-0.01 * copysign(log(1 - 2 * fabs(u)), u));
        }
    }
    float *y = malloc(n * 4 + 4), *x2 = malloc(n * 4 + 4);
    uint8_t *scratch = malloc(n + 1); /* dense one-pass decoding, as pycodecs does */
    for (size_t i = 0; i < n; i++) x2[i] = x[(i * 7919) % n];
    printf("ebq_threads_bench: %zu f32 (%.1f MB) %s, rel bound %g, best of %d rounds, "
           "default threads here %u\n",
           n, n * 4e-6, file ? file : "laplace", rel, reps, mpiucc_default_threads());
    printf("%-6s %-10s", "level", "operation");
    for (int t = 0; t < nt; t++) printf("   t=%-2u MB/s      x", tlist[t]);
    printf("\n");
    for (int level = 0; level < 2; level++) {
        mpiucc_params p = MPIUCC_PARAMS_INIT;
        p.level = (uint32_t)level;
        p.mode = MPIUCC_MODE_REL;
        p.error_bound = rel;
        size_t cap = mpiucc_compress_bound(&p, n), sa = 0, sb = 0, ss = 0, ref = 0;
        uint8_t *fa = malloc(cap), *fb = malloc(cap), *first = malloc(cap), *sum = NULL;
        double best[3][MAX_T], cpus[3][MAX_T];
        for (int o = 0; o < 3; o++)
            for (int t = 0; t < nt; t++) best[o][t] = INFINITY, cpus[o][t] = 0;
        /* ebq_add needs one grid: b takes a's absolute bound */
        mpiucc_compress(&p, x, n, fa, cap, &sa);
        mpiucc_header h;
        mpiucc_read_header(fa, sa, &h);
        mpiucc_params pb = p;
        pb.mode = MPIUCC_MODE_ABS;
        pb.error_bound = h.bound;
        mpiucc_compress(&pb, x2, n, fb, cap, &sb);
        size_t acap = mpiucc_ebq_add_bound(fa, sa, fb, sb);
        sum = malloc(acap);
        int same = 1;
        for (int r = -1; r < reps; r++) {
            for (int t = 0; t < nt; t++) {
                p.threads = tlist[t];
                double c0 = cpu(), t0 = now();
                mpiucc_compress(&p, x, n, fa, cap, &sa);
                double c1 = cpu(), t1 = now();
                mpiucc_decompress_threads(fa, sa, y, n * 4, scratch, n, 0, tlist[t], NULL);
                double c2 = cpu(), t2 = now();
                mpiucc_ebq_add_threads(fa, sa, fb, sb, sum, acap, tlist[t], &ss);
                double c3 = cpu(), t3 = now();
                if (r < 0) continue;
                double d[3] = {t1 - t0, t2 - t1, t3 - t2}, c[3] = {c1 - c0, c2 - c1, c3 - c2};
                for (int o = 0; o < 3; o++) {
                    if (d[o] < best[o][t]) best[o][t] = d[o];
                    cpus[o][t] += c[o] / reps;
                }
                if (t == 0) {
                    memcpy(first, fa, sa);
                    ref = sa;
                } else {
                    same &= sa == ref && !memcmp(first, fa, sa);
                }
            }
        }
        static const char *ops[3] = {"compress", "decompress", "ebq_add"};
        for (int o = 0; o < 3; o++) {
            printf("%-6s %-10s", level ? "dense" : "fast", ops[o]);
            for (int t = 0; t < nt; t++)
                printf("  %9.0f  %5.2f", n * 4e-6 / best[o][t], best[o][0] / best[o][t]);
            printf("\n");
        }
        for (int o = 0; o < 3; o++) {
            printf("%-6s %-10s", level ? "dense" : "fast", ops[o]);
            for (int t = 0; t < nt; t++) printf("  cpu ms %7.2f", 1e3 * cpus[o][t]);
            printf("\n");
        }
        printf("%-6s ratio %.2f, frames identical across thread counts: %s\n",
               level ? "dense" : "fast", (double)n * 4 / (double)ref, same ? "yes" : "NO");
        free(fa);
        free(fb);
        free(first);
        free(sum);
    }
    free(x);
    free(x2);
    free(y);
    free(scratch);
    return 0;
}
