/* threads.c: per-call threads (threads.h) and the default thread count. */
#define _GNU_SOURCE
#include "threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpiucc.h"

typedef struct {
    void (*fn)(void *, int);
    void *ctx;
    int t;
} task;

static void *run_task(void *arg) {
    task *k = (task *)arg;
    k->fn(k->ctx, k->t);
    return NULL;
}

void mpiucc_parallel(int n, void (*fn)(void *ctx, int t), void *ctx) {
    pthread_t tid[MPIUCC_MAX_THREADS];
    task tasks[MPIUCC_MAX_THREADS];
    int started[MPIUCC_MAX_THREADS] = {0};
    if (n > MPIUCC_MAX_THREADS) n = MPIUCC_MAX_THREADS;
    for (int t = 1; t < n; t++) {
        tasks[t] = (task){fn, ctx, t};
        started[t] = pthread_create(&tid[t], NULL, run_task, &tasks[t]) == 0;
    }
    fn(ctx, 0);
    for (int t = 1; t < n; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            fn(ctx, t);
    }
}

/* A positive integer from the environment variable name, else 0. */
static unsigned env_count(const char *name) {
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v <= 0 ? 0 : v > MPIUCC_MAX_THREADS ? MPIUCC_MAX_THREADS : (unsigned)v;
}

unsigned mpiucc_default_threads(void) {
    unsigned forced = env_count("MPIUCC_THREADS");
    if (forced) return forced;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned cores = online > 0 ? (unsigned)online : 1;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        cores = (unsigned)CPU_COUNT(&set);
#endif
    /* Ranks that were not bound by their launcher all see every core: share them. */
    if (online > 0 && cores >= (unsigned)online) {
        static const char *const local_size[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                                 "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE"};
        for (size_t i = 0; i < sizeof local_size / sizeof *local_size; i++) {
            unsigned k = env_count(local_size[i]);
            if (k) {
                cores = cores / k ? cores / k : 1;
                break;
            }
        }
    }
    return cores > MPIUCC_MAX_THREADS ? MPIUCC_MAX_THREADS : cores;
}

int mpiucc_threads_for(unsigned requested, size_t count) {
    /* An explicit count is honoured down to one kernel chunk per thread (tests use it on small
     * arrays to reach every segment edge); the default starts threads only where they pay. */
    size_t by_size = count / (requested ? MPIUCC_MIN_SEGMENT : MPIUCC_MIN_PER_THREAD);
    if (by_size <= 1) return 1; /* small arrays: no thread start, no affinity query */
    unsigned t = requested ? requested : mpiucc_default_threads();
    if (t > MPIUCC_MAX_THREADS) t = MPIUCC_MAX_THREADS;
    return (int)(t < by_size ? t : by_size);
}
