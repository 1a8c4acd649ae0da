/* ebq_segments.h: one ebq payload written by several threads (ebq_segments.c). */
#ifndef MPIUCC_EBQ_SEGMENTS_H
#define MPIUCC_EBQ_SEGMENTS_H

#include "ebq.h"
#include "threads.h"

#define EBQ_ENCODE_MAX_WIDTH_ADD 32 /* widest block of any writer (ebq_add sums) */

typedef struct {
    size_t i0, i1;   /* elements [i0, i1): whole kernel chunks but the last */
    ebq_writer *w;   /* segment 0: the payload's writer; others: own */
    ebq_writer own;  /* segments > 0 */
    uint8_t *tmp;    /* segments > 0: packed blocks or escapes, then staged outliers */
    int32_t prev;    /* DELTA: the index before i0 (0 for an outlier) */
    mpiucc_status st;
} ebq_seg;

typedef struct {
    ebq_seg seg[MPIUCC_MAX_THREADS + 1];
    int count;
    ebq_writer *w0; /* the payload's writer (ebq_writer_init over all n elements) */
} ebq_segs;

/* Cut n elements into count segments of whole EBQ_CHUNKs (seg[t].i0, .i1). */
void ebq_segs_bounds(ebq_segs *S, size_t n, int count);
/* Segments over w0 and buffers for segments 1..count-1; 0 when an allocation failed (then
 * nothing is held and w0 is as it was). max_width > 0 (fast level): no block is wider, and
 * where w0's capacity holds every segment's widest blocks plus a payload bound's outliers, the
 * segments write their blocks into the payload itself, each in an area of its own after the
 * one before, and their buffers take only outliers (so they are not touched without any). */
int ebq_segs_open(ebq_segs *S, ebq_writer *w0, size_t n, int count, unsigned max_width);
/* Append the segments' blocks, entropy-code (dense), write the sub-header and the outliers:
 * what ebq_writer_finish does for a single writer. Does not free w0's symbols. */
mpiucc_status ebq_segs_merge(ebq_segs *S, size_t n, size_t *size);
void ebq_segs_close(ebq_segs *S);

/* The quantize pass of ebq_encode over threads into w (ebq_writer_init over n elements),
 * finished as ebq_writer_finish would (but w's symbols are not freed). MPIUCC_ERR_NOMEM
 * before anything is written: the caller then runs the single pass. */
mpiucc_status ebq_encode_threads(const ebq_grid *g, const void *src, void *residual, size_t n,
                                 ebq_writer *w, int threads, size_t *size);

#endif
