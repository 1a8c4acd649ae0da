/* threads.h: fork-join parallelism for one codec call.
 *
 * Threads are created by the call that needs them and joined before it returns: no pool, so
 * nothing outlives fork() and nothing is shared between concurrent calls (safe under
 * MPI_THREAD_MULTIPLE and with the GIL released). Work is cut into segments whose results are
 * merged in segment order, so the bytes never depend on how many threads ran them.
 */
#ifndef MPIUCC_THREADS_H
#define MPIUCC_THREADS_H

#include <stddef.h>

#define MPIUCC_MAX_THREADS 64
/* Elements per thread below which another thread does not pay for its start (~50 us). */
#define MPIUCC_MIN_PER_THREAD ((size_t)1 << 18)

/* Elements per thread at least, when the caller asks for a thread count. */
#define MPIUCC_MIN_SEGMENT ((size_t)256)

/* Threads for one call over count elements, at least 1 and at most MPIUCC_MAX_THREADS:
 * requested 0 takes mpiucc_default_threads(), at most one per MPIUCC_MIN_PER_THREAD elements;
 * an explicit request is capped at one per MPIUCC_MIN_SEGMENT elements. */
int mpiucc_threads_for(unsigned requested, size_t count);

/* fn(ctx, t) for t in 0..n-1, task 0 on the calling thread, the others on new threads; returns
 * when all are done. When a thread cannot be created its task runs on the caller. */
void mpiucc_parallel(int n, void (*fn)(void *ctx, int t), void *ctx);

#endif
