# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled path of a settled uncompressed allreduce (``hot``): the agreement, MPI's own sum
and the mean, with MPI called from C and the GIL released while it works.

Built against the MPI found at build time, once per MPI family (``_hot_mpich``,
``_hot_openmpi``, as mpi4py's own extension); ``hot`` loads the one of the MPI mpi4py runs on.
A call either returns None before it has sent anything (the Python path then runs it, and
raises what is to be raised), a verdict with the agreement made (the Python path finishes it),
or completes the call: waits longer than the patient spin go back to the engine's Python wait
(its timeout, its broken mark, Ctrl-C), an agreement's errors to the engine's judge.
"""
from cpython.buffer cimport (
    PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer,
)
from libc.math cimport fabs
from libc.string cimport memset
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec
from mpi4py cimport MPI
from mpi4py import MPI
from mpi4py.libmpi cimport (
    MPI_DOUBLE, MPI_Datatype, MPI_FLOAT, MPI_IN_PLACE, MPI_Iallreduce, MPI_MAX, MPI_Op,
    MPI_Request, MPI_STATUS_IGNORE, MPI_SUM, MPI_Test,
)

import time

import numpy as np

cdef extern from "<sched.h>" nogil:
    int sched_yield()

cdef extern from "mpiucc.h" nogil:
    ctypedef enum mpiucc_dtype:
        MPIUCC_DTYPE_F32
        MPIUCC_DTYPE_F64
    ctypedef struct mpiucc_stats:
        double min
        double max
    int mpiucc_finite_stats(const void *src, size_t count, mpiucc_dtype dtype, double scale,
                            mpiucc_stats *stats)

from pycomm.collectives import agreement as _agreement

#: Room for the agreement record; its layout is ``agreement.RECORD``'s, read at import.
DEF CAPACITY = 32
if _agreement.LENGTH > CAPACITY:
    raise ImportError("the agreement record outgrew the compiled path's room: rebuild it larger")
cdef int LENGTH = _agreement.LENGTH
cdef Py_ssize_t AT_SETTINGS = _agreement.offset("settings")
cdef Py_ssize_t AT_NEG_SETTINGS = _agreement.offset("neg_settings")
cdef Py_ssize_t AT_INVALID = _agreement.offset("invalid")
cdef Py_ssize_t AT_TOKEN = _agreement.offset("token")
cdef Py_ssize_t AT_NEG_TOKEN = _agreement.offset("neg_token")
cdef Py_ssize_t AT_ELAPSED = _agreement.offset("elapsed")
cdef Py_ssize_t AT_STATISTICS = _agreement.offset("statistics")
#: Tests of a request before the spin starts yielding the core (``waits._SPINS``).
DEF TIGHT_SPINS = 16


cdef inline double _now() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return t.tv_sec + 1e-9 * t.tv_nsec


cdef int _spin(MPI_Request *req, double seconds, int *done) noexcept nogil:
    """MPI_Test until done or ``seconds`` have passed (tight, then yielding the core); MPI's
    error code."""
    cdef int err, tests = 0
    cdef double until = 0.0
    while True:
        err = MPI_Test(req, done, MPI_STATUS_IGNORE)
        if err or done[0]:
            return err
        tests += 1
        if tests < TIGHT_SPINS:
            continue
        if tests == TIGHT_SPINS:
            until = _now() + seconds
        elif _now() > until:
            return 0
        sched_yield()


#: What a call that did not run returns (its agreement made, in ``Allreduce.agreed``):
#: the ranks' chooser states differ or the kept raw measured slower (``REDECIDE``), or the
#: agreed range no longer proves the sum in the dtype (``STATISTICS``). Declined calls, which
#: sent nothing, return None.
REDECIDE, STATISTICS = 1, 2
#: Room for a kept pick's recent call times (``Knobs.strikes``).
DEF RING = 8


cdef class Allreduce:
    """One settled kind of call (communicator, dtype, count, op, settings digest): uncompressed,
    summed by MPI in the dtype, divided for a mean, after the agreement. The caller holds the
    engine. ``run`` returns the result, None where it declines before sending anything (a
    buffer not the kind's, a broken engine, a retired plan, a keep that is over), or a verdict
    (``REDECIDE``, ``STATISTICS``) with the agreement made: the Python path finishes the call.

    ``state`` (codec="auto"): the key's chooser state, copied at settle time
    (``Chooser.compiled_state``: the token at since 0 and its step per call, since, keep,
    give_up, strikes, recent times); the plan keeps it in C fields, carries the token and the
    kept calls' time in the agreement, and hands it back when retired (``retire``: the Python
    path then owns the key again). ``raw_proof`` (per_range, per_const, largest): the agreement
    carries this rank's finite max and -min too, as the Python path's does, and the sum stays in
    the dtype only where the agreed largest |x| (top) and range prove it within the bound:
    ranks * top <= largest and top <= per_range * range + per_const (``cost.raw_proof``).
    ``record(agree_s, data_s)`` is called on sampled calls.
    """

    cdef MPI_Datatype dtype
    cdef Py_ssize_t count, nbytes
    cdef bint mean, is_double, minmax, auto, valid
    cdef double per_range, per_const, largest
    cdef double ranks, sig
    cdef double token_base, token_step, give_up
    cdef long since, keep
    cdef int strikes, recent_n, recent_at
    cdef double recent[RING]
    cdef double agreement[CAPACITY]
    cdef readonly unsigned long calls  # made on this path
    cdef unsigned long sampling
    cdef double spin_s
    cdef char fmt
    cdef readonly object engine, comm, label, np_dtype, agreed
    cdef object record

    def __cinit__(self, engine, MPI.Comm comm, dtype, Py_ssize_t count, bint mean, double sig,
                  label, state=None, record=None, unsigned long sampling=1,
                  double spin_s=0.01, raw_proof=None):
        self.np_dtype = np.dtype(dtype)
        if self.np_dtype == np.float32:
            self.dtype, self.is_double, self.fmt = MPI_FLOAT, False, b"f"
        elif self.np_dtype == np.float64:
            self.dtype, self.is_double, self.fmt = MPI_DOUBLE, True, b"d"
        else:
            raise TypeError(f"the compiled path sums float32 or float64, not {self.np_dtype}")
        self.engine, self.comm, self.label = engine, comm, label
        self.count, self.nbytes = count, count * self.np_dtype.itemsize
        self.mean, self.sig = mean, sig
        self.ranks = comm.Get_size()
        self.record = record
        self.sampling, self.spin_s = max(1, sampling), spin_s
        self.minmax = raw_proof is not None
        if self.minmax:
            self.per_range, self.per_const, self.largest = raw_proof
        self.adopt(state)

    def adopt(self, state):
        """Take calls again, counting on ``state`` (``Chooser.compiled_state``, or None for
        codec="none")."""
        self.valid, self.auto = True, state is not None
        if self.auto:
            base, step, since, keep, give_up, strikes, recent = state
            if strikes > RING:
                raise ValueError(f"the compiled path keeps {RING} recent times, not {strikes}")
            self.token_base, self.token_step, self.give_up = base, step, give_up
            self.since, self.keep, self.strikes = since, keep, strikes
            self.recent_n = self.recent_at = 0
            for t in recent:
                self._remember(t)

    def retire(self):
        """Stop taking calls; the chooser state it held: (since, recent times, oldest first)."""
        self.valid = False
        n = self.recent_n
        start = (self.recent_at - n) % self.strikes if self.strikes else 0
        return self.since, [self.recent[(start + i) % self.strikes] for i in range(n)]

    def run(self, x, out, stats):
        """Allreduce x (a flat ndarray) into out (one, or None: a new array); see the class."""
        cdef Py_buffer xv, ov
        cdef bint in_place
        cdef object res
        if not self.valid or (self.auto and self.since >= self.keep):
            return None
        if self.engine.broken is not None:
            return None
        try:
            PyObject_GetBuffer(x, &xv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
        except (BufferError, TypeError, ValueError):  # the Python path raises on every rank
            return None
        try:
            if not _matches(&xv, self.nbytes, self.fmt):
                return None
            res = np.empty(self.count, self.np_dtype) if out is None else out
            try:
                PyObject_GetBuffer(res, &ov, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE)
            except (BufferError, TypeError, ValueError):
                return None
            try:
                if not _matches(&ov, self.nbytes, self.fmt):
                    return None
                in_place = xv.buf == ov.buf
                if not in_place and _overlap(&xv, &ov):
                    return None
                return self._run(res, stats, &xv, &ov, in_place)
            finally:
                PyBuffer_Release(&ov)
        finally:
            PyBuffer_Release(&xv)

    cdef object _run(self, res, stats, Py_buffer *xv, Py_buffer *ov, bint in_place):
        cdef MPI_Request req
        cdef int err = 0, done = 0
        cdef double t0 = _now(), t1, agreeing = 0.0
        cdef double *v = self.agreement
        cdef MPI.Comm comm = self.comm
        memset(v, 0, sizeof(self.agreement))
        v[AT_SETTINGS], v[AT_NEG_SETTINGS] = self.sig, -self.sig
        if self.auto:
            v[AT_TOKEN] = self.token_base + self.since * self.token_step
            v[AT_NEG_TOKEN] = -v[AT_TOKEN]
            v[AT_ELAPSED] = self._kept_time()
        if self.minmax and _min_max(xv.buf, self.count, self.is_double, &v[AT_STATISTICS]):
            return None  # the C library refused: the Python path takes its statistics
        agreeing = _now()
        with nogil:
            err = MPI_Iallreduce(MPI_IN_PLACE, v, LENGTH, MPI_DOUBLE, MPI_MAX, comm.ob_mpi, &req)
            if not err:
                err = _spin(&req, self.spin_s, &done)
        _finish(self.engine, err, done, &req, "settings check of " + self.label, None)
        agreeing = _now() - agreeing
        if v[AT_INVALID] != 0 or v[AT_SETTINGS] != -v[AT_NEG_SETTINGS]:
            self.engine.judge(self._agreed(), self.label)
        # the ranks remember the key differently, or raw measured slower than another
        if self.auto and (v[AT_TOKEN] != -v[AT_NEG_TOKEN] or v[AT_ELAPSED] > self.give_up):
            self.agreed = self._agreed()
            return REDECIDE
        if self.minmax and not self._raw_holds(v[AT_STATISTICS], v[AT_STATISTICS + 1]):
            self.agreed = self._agreed()
            return STATISTICS
        t1 = _now()
        done = 0
        with nogil:
            err = MPI_Iallreduce(MPI_IN_PLACE if in_place else xv.buf, ov.buf,
                                 <int>self.count, self.dtype, MPI_SUM, comm.ob_mpi, &req)
            if not err:
                err = _spin(&req, self.spin_s, &done)
        _finish(self.engine, err, done, &req, "allreduce", None)
        if self.mean:
            with nogil:
                _divide(ov.buf, self.count, self.ranks, self.is_double)
        if self.auto:
            self.since += 1
            self._remember(_now() - t0 - agreeing)  # as ``auto_state.ran`` counts
        self.calls += 1
        if self.record is not None and self.calls % self.sampling == 1 % self.sampling:
            self.record(t1 - t0, _now() - t1)
        if stats is not None:
            _count(stats, self.nbytes, self.ranks, _now() - t0)
        return res

    cdef void _remember(self, double seconds) noexcept:
        if self.strikes:
            self.recent[self.recent_at] = seconds
            self.recent_at = (self.recent_at + 1) % self.strikes
            if self.recent_n < self.strikes:
                self.recent_n += 1

    cdef double _kept_time(self) noexcept:
        """``Chooser.kept_time``: the fastest of the last ``strikes`` kept calls, 0 before."""
        cdef int i
        cdef double best
        if not self.strikes or self.recent_n < self.strikes:
            return 0.0
        best = self.recent[0]
        for i in range(1, self.strikes):
            if self.recent[i] < best:
                best = self.recent[i]
        return best

    cdef object _agreed(self):
        """The agreed record, read by field name in Python (``agreement.of``)."""
        return _agreement.of([self.agreement[i] for i in range(LENGTH)])

    cdef bint _raw_holds(self, double hi, double neg_lo) noexcept:
        """Whether MPI's sum in the dtype keeps the bound, from the agreed max and -min."""
        cdef double top = fabs(hi) if fabs(hi) > fabs(neg_lo) else fabs(neg_lo)
        if self.ranks * top > self.largest:
            return False
        return top <= self.per_range * (hi + neg_lo) + self.per_const


cdef bint _min_max(void *buf, Py_ssize_t count, bint is_double, double *out) noexcept:
    """out[0], out[1] = the finite max and -min of buf (0, 0 if none is finite), as
    ``buffers.finite_min_max``; True on a failure of the C library."""
    cdef mpiucc_stats st
    cdef int err
    with nogil:
        err = mpiucc_finite_stats(buf, count, MPIUCC_DTYPE_F64 if is_double else MPIUCC_DTYPE_F32,
                                  0.0, &st)
    out[0], out[1] = st.max, -st.min
    return err != 0


cdef _finish(engine, int err, int done, MPI_Request *req, what, deadline):
    """After the spin: MPI's error raised (the engine's rule), or the rest of the wait made
    by the engine (its timeout, or ``deadline``, and its broken mark)."""
    cdef MPI.Request pending
    if err:
        exc = MPI.Exception(err)
        engine.failed_in_mpi(what, exc)
        raise exc
    if not done:
        pending = MPI.Request.__new__(MPI.Request)
        pending.ob_mpi = req[0]
        engine.wait([pending], what, deadline)


cdef class InPlace:
    """The torch backend's blocking all_reduce of one CPU tensor, unchecked (torch's
    convention): one in-place MPI allreduce of a datatype and op MPI reduces itself, spun on,
    then waited for by the engine until ``timeout_s``. The caller holds the engine."""

    cdef MPI_Datatype dtype
    cdef MPI_Op op
    cdef Py_ssize_t extent
    cdef double spin_s
    cdef readonly object engine, comm
    cdef object timeout_of

    def __cinit__(self, engine, MPI.Comm comm, MPI.Datatype dtype, MPI.Op op, timeout_of,
                  double spin_s=0.01):
        self.engine, self.comm, self.timeout_of = engine, comm, timeout_of
        self.dtype, self.op, self.spin_s = dtype.ob_mpi, op.ob_mpi, spin_s
        self.extent = dtype.Get_size()

    def run(self, size_t address, Py_ssize_t nbytes, opts):
        """Reduce the nbytes at address in place; ``timeout_of(opts)``: the seconds the wait
        may last once the spin is over."""
        cdef MPI_Request req
        cdef int err = 0, done = 0
        cdef int count = <int>(nbytes // self.extent)
        cdef MPI.Comm comm = self.comm
        with nogil:
            err = MPI_Iallreduce(MPI_IN_PLACE, <void *>address, count, self.dtype, self.op,
                                 comm.ob_mpi, &req)
            if not err:
                err = _spin(&req, self.spin_s, &done)
        if err or not done:
            deadline = None if err else time.monotonic() + self.timeout_of(opts)
            _finish(self.engine, err, done, &req, "allreduce", deadline)


cdef bint _matches(Py_buffer *b, Py_ssize_t nbytes, char fmt) noexcept:
    return b.len == nbytes and b.format != NULL and b.format[0] == fmt and b.format[1] == 0


cdef bint _overlap(Py_buffer *a, Py_buffer *b) noexcept:
    cdef char *pa = <char *>a.buf
    cdef char *pb = <char *>b.buf
    return pa < pb + b.len and pb < pa + a.len


cdef void _divide(void *buf, Py_ssize_t count, double ranks, bint is_double) noexcept nogil:
    cdef Py_ssize_t i
    cdef double *d
    cdef float *f
    cdef float franks = <float>ranks
    if is_double:
        d = <double *>buf
        for i in range(count):
            d[i] = d[i] / ranks
    else:
        f = <float *>buf
        for i in range(count):
            f[i] = f[i] / franks


cdef void _count(stats, Py_ssize_t nbytes, double ranks, double seconds):
    """What ``plain.allreduce`` and ``reduction`` count of an uncompressed call."""
    cdef Py_ssize_t ring = <Py_ssize_t>(2 * (ranks - 1)) * nbytes // <Py_ssize_t>ranks
    stats.moved(ring, ring)
    stats.calls += 1
    stats.raw_bytes += nbytes
    stats.frame_bytes += nbytes
    stats.total_seconds += seconds
