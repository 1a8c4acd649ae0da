/* mpiucc_bench: speed, ratio and error of every codec the library has, beside memcpy.
 *
 *   mpiucc_bench [-f file.f32 | -g gaussian|laplace|smooth -n N] [-d f32|f64]
 *                [-e 1e-4[,1e-3,...] | -a] [-r reps] [-c codec,...] [-s generic|avx2|all] [--csv]
 *
 * Input is raw little-endian float32 (-f), by default bench/data/grads_gpt.f32 when it exists
 * (python bench/make_gradients.py writes it), else synthetic. Each row is one engine on one SIMD
 * path: the best of reps timed calls after one warm-up; MB/s are uncompressed bytes (1e6) per
 * second in both directions. Codecs that the library reports unsupported are skipped.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpiucc.h"

#define DEFAULT_FILE "bench/data/grads_gpt.f32"
#define MAX_BOUNDS 8
#define MAX_ENGINES 64
#define QSGD_LEVELS 7 /* qsgd rows: 7 levels (4-bit codes), stochastic rounding */
#define TOPK_K 3      /* topk rows: 3 of each default block of 256 (about 1 %) */

static const char *const codec_names[MPIUCC_CODEC_COUNT_] = {
    "raw", "ebq", "fp16", "bf16", "int8", "int4", "sign", "qsgd", "topk"};

typedef struct {
    const char *file;   /* NULL: synthetic */
    const char *gen;    /* gaussian, laplace, smooth */
    size_t n;           /* synthetic element count */
    mpiucc_dtype dtype; /* F32 or F64 */
    double bounds[MAX_BOUNDS];
    int n_bounds;
    int reps;
    int use_codec[MPIUCC_CODEC_COUNT_];
    int simd_from, simd_to; /* range of mpiucc_simd levels */
    int csv;
} options;

typedef struct {
    void *src, *out, *residual, *frame, *ref_frame;
    size_t n, bytes, capacity, ref_size;
    mpiucc_dtype dtype;
    double vmin, vmax;
    int reps;
} bench_state;

typedef struct {
    double comp_s, decomp_s; /* best times */
    size_t frame_size;
    double max_err, bound, psnr;
} result;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xalloc(size_t size) {
    void *p = NULL;
    if (posix_memalign(&p, 64, size ? size : 64) != 0) {
        fprintf(stderr, "mpiucc_bench: out of memory (%zu bytes)\n", size);
        exit(2);
    }
    memset(p, 0, size ? size : 64);
    return p;
}

static double get(const bench_state *b, const void *p, size_t i) {
    return b->dtype == MPIUCC_DTYPE_F64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* ---- input data ---- */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { /* in (0, 1) */
    return ((double)(splitmix(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double gaussian(uint64_t *s) {
    double u = uniform(s), v = uniform(s);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static int synth(const char *gen, float *x, size_t n) {
    uint64_t s = 42;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(gen, "gaussian")) {
            x[i] = (float)gaussian(&s);
        } else if (!strcmp(gen, "laplace")) {
            double u = uniform(&s) - 0.5;
            x[i] = (float)(u < 0 ? log(1.0 + 2.0 * u) : -log(1.0 - 2.0 * u));
        } else if (!strcmp(gen, "smooth")) {
            double t = (double)i;
            x[i] = (float)(sin(t * 6.283185307179586 / 4096.0) +
                           0.5 * sin(t * 6.283185307179586 / 337.0) + 0.01 * gaussian(&s));
        } else {
            return -1;
        }
    }
    return 0;
}

static float *read_f32(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    float *x = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size > 0 && size % 4 == 0 && fseek(f, 0, SEEK_SET) == 0) {
        *n = (size_t)size / 4;
        x = xalloc((size_t)size);
        if (fread(x, 4, *n, f) != *n) {
            free(x);
            x = NULL;
        }
        for (size_t i = 0; x && i < *n; i++) { /* the file is little-endian */
            uint8_t *p = (uint8_t *)&x[i];
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            memcpy(&x[i], &u, 4);
        }
    }
    fclose(f);
    return x;
}

/* ---- one measurement ---- */

typedef mpiucc_status (*comp_fn)(const bench_state *b, const mpiucc_params *p, size_t *size);

static mpiucc_status do_compress(const bench_state *b, const mpiucc_params *p, size_t *size) {
    return mpiucc_compress(p, b->src, b->n, b->frame, b->capacity, size);
}

static mpiucc_status do_compress_ef(const bench_state *b, const mpiucc_params *p, size_t *size) {
    return mpiucc_compress_ef(p, b->src, b->residual, b->n, b->frame, b->capacity, size);
}

/* Compress, decompress and compare; *frame_same tells whether the frame equals ref_frame.
 * For error feedback the measured frame starts from a zero residual, so it is comparable. */
static mpiucc_status measure(bench_state *b, const mpiucc_params *p, int ef, result *r) {
    comp_fn fn = ef ? do_compress_ef : do_compress;
    size_t size = 0, count = 0;
    mpiucc_status st;
    r->comp_s = r->decomp_s = INFINITY;
    for (int k = -1; k < b->reps; k++) { /* k = -1: warm-up */
        double t0 = now();
        st = fn(b, p, &size);
        double t = now() - t0;
        if (st != MPIUCC_OK) return st;
        if (k >= 0 && t < r->comp_s) r->comp_s = t;
    }
    if (ef) {
        memset(b->residual, 0, b->bytes);
        if ((st = fn(b, p, &size)) != MPIUCC_OK) return st;
    }
    r->frame_size = size;
    for (int k = -1; k < b->reps; k++) {
        double t0 = now();
        st = mpiucc_decompress(b->frame, size, b->out, b->bytes, &count);
        double t = now() - t0;
        if (st != MPIUCC_OK) return st;
        if (k >= 0 && t < r->decomp_s) r->decomp_s = t;
    }
    if (count != b->n) return MPIUCC_ERR_CORRUPT;
    mpiucc_header h;
    if ((st = mpiucc_read_header(b->frame, size, &h)) != MPIUCC_OK) return st;
    r->bound = h.bound;
    double max_err = 0, sq = 0;
    for (size_t i = 0; i < b->n; i++) {
        double e = fabs(get(b, b->src, i) - get(b, b->out, i));
        if (e > max_err || e != e) max_err = e != e ? INFINITY : e;
        sq += e * e;
    }
    r->max_err = max_err;
    double rmse = b->n ? sqrt(sq / (double)b->n) : 0;
    r->psnr = rmse > 0 ? 20.0 * log10((b->vmax - b->vmin) / rmse) : INFINITY;
    return MPIUCC_OK;
}

/* ---- output ---- */

static void print_header(const options *o) {
    if (o->csv)
        printf("engine,simd,comp_MBps,decomp_MBps,ratio,frame_bytes,max_abs_err,bound,"
               "err_over_bound,psnr_db\n");
    else
        printf("%-32s %-7s %10s %11s %8s %12s %9s %8s\n", "engine", "simd", "comp MB/s",
               "decomp MB/s", "ratio", "max abs err", "err/bound", "PSNR dB");
}

static void print_row(const options *o, const bench_state *b, const char *engine,
                      const char *simd, const result *r, const char *note) {
    double mb = (double)b->bytes / 1e6;
    double ratio = (double)b->bytes / (double)r->frame_size;
    double rel = r->bound > 0 && isfinite(r->bound) ? r->max_err / r->bound : NAN;
    char relbuf[16] = "", psnrbuf[16] = "inf";
    if (rel == rel) snprintf(relbuf, sizeof relbuf, o->csv ? "%.6g" : "%.3f", rel);
    if (o->csv) {
        printf("%s,%s,%.1f,%.1f,%.4f,%zu,%.6g,%.6g,%s,%.2f\n", engine, simd, mb / r->comp_s,
               mb / r->decomp_s, ratio, r->frame_size, r->max_err, r->bound, relbuf, r->psnr);
        return;
    }
    if (rel != rel) strcpy(relbuf, "-");
    if (isfinite(r->psnr)) snprintf(psnrbuf, sizeof psnrbuf, "%.1f", r->psnr);
    printf("%-32s %-7s %10.1f %11.1f %8.2f %12.3g %9s %8s%s\n", engine, simd, mb / r->comp_s,
           mb / r->decomp_s, ratio, r->max_err, relbuf, psnrbuf, note);
}

/* ---- the table ---- */

typedef struct {
    char name[48];
    mpiucc_params p;
    int ef;
} engine;

static int list_engines(const options *o, mpiucc_dtype dtype, engine *e, int max) {
    int n = 0;
    for (int c = 0; c < MPIUCC_CODEC_COUNT_; c++) {
        if (!o->use_codec[c]) continue;
        mpiucc_params base = MPIUCC_PARAMS_INIT;
        base.codec = (uint32_t)c;
        base.dtype = (uint32_t)dtype;
        if (c == MPIUCC_CODEC_EBQ) {
            static const char *const lv[] = {"fast", "dense"}, *const pr[] = {"none", "delta"};
            for (int bi = 0; bi < o->n_bounds; bi++)
                for (int l = 0; l < 2; l++)
                    for (int q = 0; q < 2 + (bi == 0 && l == 0); q++) {
                        if (n == max) return n;
                        e[n].p = base;
                        e[n].p.error_bound = o->bounds[bi];
                        e[n].p.mode = MPIUCC_MODE_REL;
                        e[n].p.level = (uint32_t)l;
                        e[n].p.predictor = (uint32_t)(q & 1);
                        e[n].ef = q == 2; /* one EF row: fast, no predictor */
                        snprintf(e[n].name, sizeof e[n].name, "ebq %s/%s rel=%g%s", lv[l],
                                 pr[q & 1], o->bounds[bi], e[n].ef ? " +ef" : "");
                        n++;
                    }
        } else {
            char what[24] = "";
            if (c == MPIUCC_CODEC_QSGD) { /* levels has no default: the usual choices */
                base.levels = QSGD_LEVELS;
                base.rounding = MPIUCC_ROUND_STOCHASTIC;
                base.seed = 1;
                snprintf(what, sizeof what, " s=%d", QSGD_LEVELS);
            } else if (c == MPIUCC_CODEC_TOPK) {
                base.levels = TOPK_K;
                snprintf(what, sizeof what, " k=%d/block", TOPK_K);
            }
            for (int ef = 0; ef < 1 + (c != MPIUCC_CODEC_RAW); ef++) {
                if (n == max) return n;
                e[n].p = base;
                e[n].ef = ef;
                snprintf(e[n].name, sizeof e[n].name, "%s%s%s", codec_names[c], what,
                         ef ? " +ef" : "");
                n++;
            }
        }
    }
    return n;
}

static void run_memcpy(const options *o, bench_state *b) {
    result r = {INFINITY, INFINITY, b->bytes, 0, 0, INFINITY};
    for (int k = -3; k < 3 * b->reps; k++) { /* the limit: more tries than the rows */
        double t0 = now();
        memcpy(b->frame, b->src, b->bytes);
        double t1 = now();
        memcpy(b->out, b->frame, b->bytes);
        double t2 = now();
        if (k >= 0 && t1 - t0 < r.comp_s) r.comp_s = t1 - t0;
        if (k >= 0 && t2 - t1 < r.decomp_s) r.decomp_s = t2 - t1;
    }
    print_row(o, b, "memcpy (limit)", "-", &r, "");
}

static void run_table(const options *o, bench_state *b, engine *engines, int n_eng) {
    char skipped[256] = "";
    mpiucc_simd initial = mpiucc_simd_level();
    print_header(o);
    run_memcpy(o, b);
    for (int i = 0; i < n_eng; i++) {
        engine *e = &engines[i];
        size_t cap = mpiucc_compress_bound(&e->p, b->n), probe_size;
        if (cap == 0) { /* find out why: skip the codecs this library does not have */
            mpiucc_status st = mpiucc_compress(&e->p, b->src, b->n < 64 ? b->n : 64, b->frame,
                                               b->capacity, &probe_size);
            if (st == MPIUCC_ERR_UNSUPPORTED) {
                const char *c = codec_names[e->p.codec];
                if (!strstr(skipped, c) && strlen(skipped) + strlen(c) + 3 < sizeof skipped)
                    strcat(strcat(skipped, skipped[0] ? ", " : ""), c);
            } else {
                fprintf(stderr, "%s: %s\n", e->name, mpiucc_status_string(st));
            }
            continue;
        }
        if (cap > b->capacity) {
            fprintf(stderr, "%s: frame bound %zu exceeds the buffer\n", e->name, cap);
            continue;
        }
        for (int s = o->simd_from; s <= o->simd_to; s++) {
            if ((int)mpiucc_set_simd_level((mpiucc_simd)s) != s) continue;
            result r;
            mpiucc_status st = measure(b, &e->p, e->ef, &r);
            if (st == MPIUCC_ERR_UNSUPPORTED) break;
            if (st != MPIUCC_OK) {
                fprintf(stderr, "%s (%s): %s\n", e->name, mpiucc_simd_name((mpiucc_simd)s),
                        mpiucc_status_string(st));
                continue;
            }
            const char *note = "";
            if (s == o->simd_from) {
                memcpy(b->ref_frame, b->frame, r.frame_size);
                b->ref_size = r.frame_size;
            } else if (r.frame_size != b->ref_size ||
                       memcmp(b->ref_frame, b->frame, r.frame_size)) {
                note = "  (frame differs from generic!)";
            }
            print_row(o, b, e->name, mpiucc_simd_name((mpiucc_simd)s), &r, note);
        }
    }
    mpiucc_set_simd_level(initial);
    if (skipped[0]) fprintf(o->csv ? stderr : stdout, "not in this build: %s\n", skipped);
}

/* ---- command line ---- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: mpiucc_bench [-f file.f32 | -g gaussian|laplace|smooth -n N] [-d f32|f64]\n"
            "                    [-e REL[,REL...] | -a] [-r reps] [-c codec,...]\n"
            "                    [-s generic|avx2|all] [--csv]\n"
            "  -f  raw little-endian float32 input (default " DEFAULT_FILE " if present)\n"
            "  -g  synthetic input instead (default gaussian when no file), -n elements (4M)\n"
            "  -d  element type to compress (the input is converted), default f32\n"
            "  -e  ebq relative bounds (default 1e-4); -a: 1e-4,1e-3,1e-2\n"
            "  -r  timed repetitions per row, best kept (default 5)\n"
            "  -c  codecs: raw,ebq,fp16,bf16,int8,int4,sign,qsgd,topk (default all)\n"
            "  -s  SIMD paths to run (default all the CPU has)\n");
}

static int parse_codecs(options *o, char *list) {
    memset(o->use_codec, 0, sizeof o->use_codec);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 0; c < MPIUCC_CODEC_COUNT_; c++)
            if (!strcmp(tok, codec_names[c])) o->use_codec[c] = found = 1;
        if (!found) {
            fprintf(stderr, "mpiucc_bench: unknown codec '%s'\n", tok);
            return -1;
        }
    }
    return 0;
}

static int parse_bounds(options *o, char *list) {
    o->n_bounds = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        double v = strtod(tok, &end);
        if (*end || !(v > 0) || o->n_bounds == MAX_BOUNDS) return -1;
        o->bounds[o->n_bounds++] = v;
    }
    return o->n_bounds ? 0 : -1;
}

static int parse_args(int argc, char **argv, options *o) {
    static const struct option longs[] = {{"csv", no_argument, NULL, 'C'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "f:g:n:d:e:ar:c:s:h", longs, NULL)) != -1) {
        switch (ch) {
        case 'f': o->file = optarg; break;
        case 'g': o->gen = optarg; o->file = NULL; break;
        case 'n': o->n = (size_t)strtoull(optarg, NULL, 0); break;
        case 'd':
            if (!strcmp(optarg, "f32")) o->dtype = MPIUCC_DTYPE_F32;
            else if (!strcmp(optarg, "f64")) o->dtype = MPIUCC_DTYPE_F64;
            else return -1;
            break;
        case 'e': if (parse_bounds(o, optarg)) return -1; break;
        case 'a': o->bounds[0] = 1e-4; o->bounds[1] = 1e-3; o->bounds[2] = 1e-2;
                  o->n_bounds = 3; break;
        case 'r': o->reps = atoi(optarg); if (o->reps < 1) return -1; break;
        case 'c': if (parse_codecs(o, optarg)) return -1; break;
        case 's':
            if (!strcmp(optarg, "generic")) o->simd_from = o->simd_to = MPIUCC_SIMD_GENERIC;
            else if (!strcmp(optarg, "avx2")) o->simd_from = o->simd_to = MPIUCC_SIMD_AVX2;
            else if (!strcmp(optarg, "all")) o->simd_from = MPIUCC_SIMD_GENERIC,
                                             o->simd_to = MPIUCC_SIMD_AVX2;
            else return -1;
            break;
        case 'C': o->csv = 1; break;
        case 'h': usage(stdout); exit(0);
        default: return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

int main(int argc, char **argv) {
    options o = {NULL, NULL, (size_t)1 << 22, MPIUCC_DTYPE_F32, {1e-4}, 1, 5, {0},
                 MPIUCC_SIMD_GENERIC, MPIUCC_SIMD_AVX2, 0};
    for (int c = 0; c < MPIUCC_CODEC_COUNT_; c++) o.use_codec[c] = 1;
    FILE *probe = fopen(DEFAULT_FILE, "rb");
    if (probe) {
        o.file = DEFAULT_FILE;
        fclose(probe);
    }
    if (parse_args(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    size_t n = o.n;
    float *x;
    if (o.file) {
        x = read_f32(o.file, &n);
        if (!x) {
            fprintf(stderr, "mpiucc_bench: cannot read %s (%s)\n", o.file,
                    errno ? strerror(errno) : "empty or not float32");
            return 1;
        }
    } else {
        x = xalloc(n * sizeof(float));
        if (synth(o.gen ? o.gen : "gaussian", x, n)) {
            fprintf(stderr, "mpiucc_bench: unknown generator '%s'\n", o.gen);
            return 2;
        }
    }

    bench_state b = {0};
    b.n = n;
    b.dtype = o.dtype;
    b.reps = o.reps;
    b.bytes = n * mpiucc_dtype_size(o.dtype);
    if (o.dtype == MPIUCC_DTYPE_F64) {
        double *d = xalloc(b.bytes);
        for (size_t i = 0; i < n; i++) d[i] = x[i];
        free(x);
        b.src = d;
    } else {
        b.src = x;
    }
    b.vmin = INFINITY;
    b.vmax = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = get(&b, b.src, i);
        if (v < b.vmin) b.vmin = v;
        if (v > b.vmax) b.vmax = v;
    }
    engine engines[MAX_ENGINES];
    int n_eng = list_engines(&o, o.dtype, engines, MAX_ENGINES);
    b.capacity = b.bytes + MPIUCC_HEADER_SIZE + 64; /* memcpy, and room for the probes */
    for (int i = 0; i < n_eng; i++) {
        size_t cap = mpiucc_compress_bound(&engines[i].p, n);
        if (cap > b.capacity) b.capacity = cap;
    }
    b.out = xalloc(b.bytes);
    b.residual = xalloc(b.bytes);
    b.frame = xalloc(b.capacity);
    b.ref_frame = xalloc(b.capacity);

    if (!o.csv)
        printf("mpiucc_bench: %s%s, %zu x %s (%.1f MB), range [%.4g, %.4g], best of %d, "
               "cpu %s, mpiucc %d.%d.%d\n",
               o.file ? o.file : o.gen ? o.gen : "gaussian", o.file ? "" : " (synthetic)", n,
               o.dtype == MPIUCC_DTYPE_F64 ? "f64" : "f32", (double)b.bytes / 1e6, b.vmin,
               b.vmax, o.reps, mpiucc_simd_name(mpiucc_simd_level()), MPIUCC_VERSION_MAJOR,
               MPIUCC_VERSION_MINOR, MPIUCC_VERSION_PATCH);
    run_table(&o, &b, engines, n_eng);
    free(b.src);
    free(b.out);
    free(b.residual);
    free(b.frame);
    free(b.ref_frame);
    return 0;
}
