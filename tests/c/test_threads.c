/* Every codec called from several threads at once (compress, compress_ef, decompress,
 * decompress_add on shared inputs, private outputs) gives the single-threaded bytes. */
#include <pthread.h>

#include "q_testlib.h"

#define THREADS 4
#define N 100003

static const uint32_t codecs[] = {MPIUCC_CODEC_RAW,  MPIUCC_CODEC_EBQ,  MPIUCC_CODEC_FP16,
                                  MPIUCC_CODEC_BF16, MPIUCC_CODEC_INT8, MPIUCC_CODEC_INT4,
                                  MPIUCC_CODEC_SIGN, MPIUCC_CODEC_QSGD, MPIUCC_CODEC_TOPK};
#define NCODECS (sizeof codecs / sizeof codecs[0])

static float x[N], r0[N];

typedef struct {
    mpiucc_params p;
    uint8_t *frame, *frame_ef; /* the single-threaded results */
    size_t size, size_ef;
    float res_ef[N], y[N], y_add[N];
} reference;

static reference refs[NCODECS];
static pthread_barrier_t start;
static int thread_failures[THREADS];

static void run(const reference *ref, uint8_t *buf, size_t cap, float *res, float *y, int *bad) {
    size_t size;
    *bad |= mpiucc_compress(&ref->p, x, N, buf, cap, &size) != MPIUCC_OK || size != ref->size ||
            memcmp(buf, ref->frame, size);
    memcpy(res, r0, sizeof r0);
    *bad |= mpiucc_compress_ef(&ref->p, x, res, N, buf, cap, &size) != MPIUCC_OK ||
            size != ref->size_ef || memcmp(buf, ref->frame_ef, size) ||
            memcmp(res, ref->res_ef, sizeof r0);
    *bad |= mpiucc_decompress(ref->frame, ref->size, y, sizeof r0, NULL) != MPIUCC_OK ||
            memcmp(y, ref->y, sizeof r0);
    for (size_t i = 0; i < N; i++) y[i] = 1.0f;
    *bad |= mpiucc_decompress_add(ref->frame, ref->size, y, sizeof r0, NULL) != MPIUCC_OK ||
            memcmp(y, ref->y_add, sizeof r0);
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg, bad = 0;
    float *res = malloc(sizeof r0), *y = malloc(sizeof r0);
    pthread_barrier_wait(&start);
    for (int round = 0; round < 3; round++)
        for (size_t c = 0; c < NCODECS; c++) {
            size_t cap = mpiucc_compress_bound(&refs[c].p, N);
            uint8_t *buf = malloc(cap);
            run(&refs[c], buf, cap, res, y, &bad);
            free(buf);
        }
    thread_failures[id] = bad;
    free(res), free(y);
    return NULL;
}

int main(void) {
    q_fill(x, N);
    q_fill(r0, N);
    for (size_t i = 0; i < N; i++) r0[i] *= 1e-2f;
    x[17] = NAN, x[N / 2] = INFINITY;
    for (size_t c = 0; c < NCODECS; c++) { /* the single-threaded references */
        reference *ref = &refs[c];
        ref->p = q_params(codecs[c], MPIUCC_DTYPE_F32);
        if (codecs[c] == MPIUCC_CODEC_EBQ) ref->p.error_bound = 1e-3;
        mpiucc_status st;
        ref->frame = q_compress(&ref->p, x, NULL, N, &ref->size, &st);
        memcpy(ref->res_ef, r0, sizeof r0);
        ref->frame_ef = q_compress(&ref->p, x, ref->res_ef, N, &ref->size_ef, &st);
        CHECK(ref->frame && ref->frame_ef);
        if (!ref->frame || !ref->frame_ef) return 1;
        CHECK(mpiucc_decompress(ref->frame, ref->size, ref->y, sizeof r0, NULL) == MPIUCC_OK);
        for (size_t i = 0; i < N; i++) ref->y_add[i] = 1.0f;
        CHECK(mpiucc_decompress_add(ref->frame, ref->size, ref->y_add, sizeof r0, NULL) ==
              MPIUCC_OK);
    }
    pthread_t threads[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECKF(!thread_failures[t], "thread %d got other results than a single thread", t);
    }
    pthread_barrier_destroy(&start);
    for (size_t c = 0; c < NCODECS; c++) free(refs[c].frame), free(refs[c].frame_ef);
    if (q_failures) {
        fprintf(stderr, "test_threads: %d failures\n", q_failures);
        return 1;
    }
    printf("test_threads: ok\n");
    return 0;
}
