# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Thin binding of the mpiucc C library.

Every function takes contiguous byte buffers (typed memoryviews), calls one C function with the
GIL released, and turns a non-OK status into CodecError. Dtypes, shapes, torch tensors and the
choice of output buffers are handled by the Python modules above this one.
"""
from cpython.bytearray cimport PyByteArray_FromStringAndSize


HEADER_SIZE = MPIUCC_HEADER_SIZE
FORMAT_VERSION = MPIUCC_FORMAT_VERSION
FLAG_PAYLOAD_CHECKSUM = MPIUCC_FLAG_PAYLOAD_CHECKSUM
FLAG_NONFINITE = MPIUCC_FLAG_NONFINITE

STATUS_NAMES = (
    "MPIUCC_OK", "MPIUCC_ERR_ARG", "MPIUCC_ERR_CAPACITY", "MPIUCC_ERR_TRUNCATED",
    "MPIUCC_ERR_MAGIC", "MPIUCC_ERR_VERSION", "MPIUCC_ERR_HEADER_CHECKSUM",
    "MPIUCC_ERR_PAYLOAD_CHECKSUM", "MPIUCC_ERR_CORRUPT", "MPIUCC_ERR_UNSUPPORTED",
    "MPIUCC_ERR_MISMATCH", "MPIUCC_ERR_OVERFLOW", "MPIUCC_ERR_NOMEM",
)
ERR_CAPACITY = MPIUCC_ERR_CAPACITY
ERR_MISMATCH = MPIUCC_ERR_MISMATCH


class CodecError(Exception):
    """A status other than OK from the C library, or a frame refused by the caller's limits
    (codec, dtype, count, size); .status is the pinned value, .detail what was found."""

    def __init__(self, status, detail=None):
        status = int(status)
        self.status = status
        self.status_name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "unknown"
        self.detail = detail
        text = mpiucc_status_string(<mpiucc_status>status).decode()
        Exception.__init__(self, f"{text}: {detail}" if detail else text)

    def __reduce__(self):
        return (type(self), (self.status, self.detail))


cdef inline int check(mpiucc_status status) except -1:
    if status != MPIUCC_OK:
        raise CodecError(status)
    return 0


# Pointers for empty buffers: valid addresses with zero capacity, so the C library reports
# capacity or truncation instead of a NULL argument.
cdef unsigned char empty_[8]


cdef inline const void *rptr(const unsigned char[::1] b) noexcept:
    return <const void *>&b[0] if b.shape[0] else <const void *>empty_


cdef inline void *wptr(unsigned char[::1] b) noexcept:
    return <void *>&b[0] if b.shape[0] else <void *>empty_


cdef inline int check_count(const mpiucc_params *p, size_t count, size_t nbytes) except -1:
    cdef size_t es = mpiucc_dtype_size(<mpiucc_dtype>p.dtype)
    if es and count > nbytes // es:
        raise ValueError(f"buffer of {nbytes} bytes holds fewer than {count} elements")
    return 0


cdef class Params:
    """An mpiucc_params struct (reserved fields zero). Immutable once made."""

    def __cinit__(self, uint32_t codec, uint32_t dtype, double error_bound, uint32_t mode,
                  uint32_t level, uint32_t predictor, uint32_t block_size, uint32_t levels,
                  uint32_t rounding, uint64_t seed, uint32_t flags, uint32_t threads=0):
        self.c.codec = codec
        self.c.dtype = dtype
        self.c.error_bound = error_bound
        self.c.mode = mode
        self.c.level = level
        self.c.predictor = predictor
        self.c.block_size = block_size
        self.c.levels = levels
        self.c.rounding = rounding
        self.c.seed = seed
        self.c.flags = flags
        self.c.threads = threads

    @property
    def dtype(self):
        return self.c.dtype

    def __repr__(self):
        c = self.c
        return (f"Params(codec={c.codec}, dtype={c.dtype}, error_bound={c.error_bound!r}, "
                f"mode={c.mode}, level={c.level}, predictor={c.predictor}, "
                f"block_size={c.block_size}, levels={c.levels}, rounding={c.rounding}, "
                f"seed={c.seed}, flags={c.flags}, threads={c.threads})")


def empty_bytearray(Py_ssize_t size):
    """A bytearray of size bytes, left uninitialised (it is about to be overwritten)."""
    return PyByteArray_FromStringAndSize(NULL, size)


def compress_bound(Params p, size_t count):
    """Frame size that always suffices; CodecError with the reason when params are invalid."""
    cdef size_t bound, size = 0
    cdef unsigned char scratch[256]
    cdef mpiucc_status st
    with nogil:
        bound = mpiucc_compress_bound(&p.c, count)
    if bound:
        return bound
    with nogil:  # learn why: the same params on no elements report their status
        st = mpiucc_compress(&p.c, NULL, 0, scratch, sizeof(scratch), &size)
    check(st)
    raise OverflowError(f"a frame of {count} elements would not fit in memory")


def compress(Params p, const unsigned char[::1] src, size_t count, unsigned char[::1] dst):
    """Compress count elements of src into dst; returns the frame size."""
    cdef size_t size = 0
    cdef mpiucc_status st
    check_count(&p.c, count, src.shape[0])
    cdef const void *s = rptr(src)
    cdef void *d = wptr(dst)
    with nogil:
        st = mpiucc_compress(&p.c, s, count, d, dst.shape[0], &size)
    check(st)
    return size


def compress_ef(Params p, const unsigned char[::1] src, unsigned char[::1] residual,
                size_t count, unsigned char[::1] dst):
    """Compress src + residual into dst and overwrite residual; returns the frame size."""
    cdef size_t size = 0
    cdef mpiucc_status st
    check_count(&p.c, count, src.shape[0])
    check_count(&p.c, count, residual.shape[0])
    cdef const void *s = rptr(src)
    cdef void *r = wptr(residual)
    cdef void *d = wptr(dst)
    with nogil:
        st = mpiucc_compress_ef(&p.c, s, r, count, d, dst.shape[0], &size)
    check(st)
    return size


def read_header(const unsigned char[::1] frame):
    """The validated header as a tuple (version, codec, dtype, flags, count, bound, param,
    payload_size, block, aux, payload_checksum)."""
    cdef mpiucc_header h
    cdef mpiucc_status st
    cdef const void *s = rptr(frame)
    with nogil:
        st = mpiucc_read_header(s, frame.shape[0], &h)
    check(st)
    return (h.version, h.codec, h.dtype, h.flags, h.count, h.bound, h.param, h.payload_size,
            h.block, h.aux, h.payload_checksum)


cdef size_t scratch_size(const void *src, size_t src_size) noexcept nogil:
    cdef mpiucc_header h
    if mpiucc_read_header(src, src_size, &h) != MPIUCC_OK:
        return 0
    return mpiucc_decompress_scratch_size(&h)


cdef decode(const unsigned char[::1] frame, unsigned char[::1] dst, int add, unsigned threads):
    """Decode (add 0) or add (1) the frame into dst, with a scratch buffer of the size the
    frame asks (count bytes for an ebq dense frame: the one-pass path) when dst holds the
    frame's output, so that the scratch never exceeds a quarter of dst."""
    cdef size_t count = 0, need
    cdef mpiucc_status st
    cdef const void *s = rptr(frame)
    cdef void *d = wptr(dst)
    cdef unsigned char[::1] scratch
    cdef void *sp = NULL
    with nogil:
        need = scratch_size(s, frame.shape[0])
    if need and need <= <size_t>dst.shape[0] // 4:
        scratch = PyByteArray_FromStringAndSize(NULL, need)  # uninitialised
        sp = <void *>&scratch[0]
    with nogil:
        st = mpiucc_decompress_threads(s, frame.shape[0], d, dst.shape[0], sp, need, add,
                                       threads, &count)
    check(st)
    return count


def decompress(const unsigned char[::1] frame, unsigned char[::1] dst, unsigned threads=0):
    """Decode the frame into dst on up to threads threads (0: the default); returns the
    element count."""
    return decode(frame, dst, 0, threads)


def decompress_add(const unsigned char[::1] frame, unsigned char[::1] dst,
                   unsigned threads=0):
    """dst += decoded frame; returns the element count."""
    return decode(frame, dst, 1, threads)


def default_threads():
    """The thread count a call with threads=0 may use (MPIUCC_THREADS, else the cores)."""
    return mpiucc_default_threads()


def ebq_quantize(Params p, const unsigned char[::1] src, size_t count, int32_t[::1] indices,
                 uint64_t[::1] outlier_pos):
    """Grid indices of count elements into indices; returns the number of outliers, whose
    positions go to outlier_pos."""
    cdef size_t n_outliers = 0
    cdef mpiucc_status st
    check_count(&p.c, count, src.shape[0])
    if <size_t>indices.shape[0] < count:
        raise ValueError(f"indices holds fewer than {count} elements")
    cdef const void *s = rptr(src)
    cdef int32_t *idx = &indices[0] if indices.shape[0] else <int32_t *>empty_
    cdef uint64_t *pos = &outlier_pos[0] if outlier_pos.shape[0] else <uint64_t *>empty_
    with nogil:
        st = mpiucc_ebq_quantize(&p.c, s, count, idx, pos, outlier_pos.shape[0], &n_outliers)
    check(st)
    return n_outliers


def pack_bound(size_t count):
    return mpiucc_pack_bound(count)


def pack_indices(const int32_t[::1] indices, unsigned char[::1] dst):
    """Pack the indices into dst; returns the packed size."""
    cdef size_t size = 0
    cdef mpiucc_status st
    cdef const int32_t *idx = &indices[0] if indices.shape[0] else <const int32_t *>empty_
    cdef void *d = wptr(dst)
    with nogil:
        st = mpiucc_pack_indices(idx, indices.shape[0], d, dst.shape[0], &size)
    check(st)
    return size


def unpack_indices(const unsigned char[::1] src, int32_t[::1] indices):
    """Unpack indices.shape[0] indices from src; returns the bytes of src used."""
    cdef size_t used = 0
    cdef mpiucc_status st
    cdef const void *s = rptr(src)
    cdef int32_t *idx = &indices[0] if indices.shape[0] else <int32_t *>empty_
    with nogil:
        st = mpiucc_unpack_indices(s, src.shape[0], idx, indices.shape[0], &used)
    check(st)
    return used


def ebq_add(const unsigned char[::1] a, const unsigned char[::1] b, unsigned char[::1] dst,
            unsigned threads=0):
    """The ebq frame of the index sums of frames a and b into dst (on up to threads threads,
    0: the default); returns its size."""
    cdef size_t size = 0
    cdef mpiucc_status st
    cdef const void *pa = rptr(a)
    cdef const void *pb = rptr(b)
    cdef void *d = wptr(dst)
    with nogil:
        st = mpiucc_ebq_add_threads(pa, a.shape[0], pb, b.shape[0], d, dst.shape[0], threads,
                                    &size)
    check(st)
    return size


def ebq_add_bound(const unsigned char[::1] a, const unsigned char[::1] b):
    """Size that suffices for ebq_add(a, b); 0 when the frames cannot be added."""
    cdef size_t bound
    cdef const void *pa = rptr(a)
    cdef const void *pb = rptr(b)
    with nogil:
        bound = mpiucc_ebq_add_bound(pa, a.shape[0], pb, b.shape[0])
    return bound


def finite_stats(const unsigned char[::1] src, size_t count, uint32_t dtype, double scale):
    """(min, max, sum of squares, non-finite count) of count elements of src (one pass)."""
    cdef mpiucc_stats got
    cdef mpiucc_status st
    cdef const void *s = rptr(src)
    cdef size_t es = mpiucc_dtype_size(<mpiucc_dtype>dtype)
    if es and count > <size_t>src.shape[0] // es:
        raise ValueError(f"buffer of {src.shape[0]} bytes holds fewer than {count} elements")
    with nogil:
        st = mpiucc_finite_stats(s, count, <mpiucc_dtype>dtype, scale, &got)
    check(st)
    return got.min, got.max, got.sum_squares, got.nonfinite


def simd_level():
    return mpiucc_simd_name(mpiucc_simd_level()).decode()


def set_simd_level(int level):
    return mpiucc_simd_name(mpiucc_set_simd_level(<mpiucc_simd>level)).decode()


def crc32c(const unsigned char[::1] data, uint32_t crc=0):
    """CRC-32C of data, continuing from crc."""
    cdef const void *s = rptr(data)
    with nogil:
        crc = mpiucc_crc32c(crc, s, data.shape[0])
    return crc
