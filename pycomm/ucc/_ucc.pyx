# cython: language_level=3, boundscheck=False, wraparound=False
"""A thin binding of UCC's C API: one library context, teams, posted collectives.

No algorithm lives here: pycomm.ucc.team makes the teams (its out-of-band allgather runs over
the MPI communicator, in Python), pycomm.distributed.ucc_ops picks buffers, types and counts.
Buffers are given by address; the caller keeps them alive until the collective completes.
Every UCC call runs without the GIL; the out-of-band callbacks take it.
"""

from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport uint64_t
from libc.string cimport memset


class UccError(RuntimeError):
    """A UCC call failed; ``status`` is UCC's code (``ucc_status_t``)."""

    def __init__(self, int status, str what) -> None:
        self.status = status
        text = ucc_status_string(<ucc_status_t>status).decode()
        super().__init__(f"UCC: {what} failed: {text} ({status})")


cdef inline int check(ucc_status_t status, str what) except -1:
    if status < 0:
        raise UccError(status, what)
    return 0


def version() -> str:
    """The version of the UCC library loaded at run time."""
    return ucc_get_version_string().decode()


#: UCC's datatypes, collective types and reduction ops by name (pycomm.distributed.ucc_ops).
DATATYPES = {
    "int8": UCC_DT_INT8, "int16": UCC_DT_INT16, "int32": UCC_DT_INT32, "int64": UCC_DT_INT64,
    "uint8": UCC_DT_UINT8, "uint16": UCC_DT_UINT16, "uint32": UCC_DT_UINT32,
    "uint64": UCC_DT_UINT64, "float16": UCC_DT_FLOAT16, "bfloat16": UCC_DT_BFLOAT16,
    "float32": UCC_DT_FLOAT32, "float64": UCC_DT_FLOAT64,
}
COLLECTIVES = {
    "allgather": UCC_COLL_TYPE_ALLGATHER, "allgatherv": UCC_COLL_TYPE_ALLGATHERV,
    "allreduce": UCC_COLL_TYPE_ALLREDUCE, "alltoall": UCC_COLL_TYPE_ALLTOALL,
    "alltoallv": UCC_COLL_TYPE_ALLTOALLV, "barrier": UCC_COLL_TYPE_BARRIER,
    "bcast": UCC_COLL_TYPE_BCAST, "gather": UCC_COLL_TYPE_GATHER,
    "gatherv": UCC_COLL_TYPE_GATHERV, "reduce": UCC_COLL_TYPE_REDUCE,
    "reduce_scatter": UCC_COLL_TYPE_REDUCE_SCATTER,
    "reduce_scatterv": UCC_COLL_TYPE_REDUCE_SCATTERV, "scatter": UCC_COLL_TYPE_SCATTER,
    "scatterv": UCC_COLL_TYPE_SCATTERV,
}
OPS = {
    "sum": UCC_OP_SUM, "prod": UCC_OP_PROD, "max": UCC_OP_MAX, "min": UCC_OP_MIN,
    "land": UCC_OP_LAND, "lor": UCC_OP_LOR, "lxor": UCC_OP_LXOR, "band": UCC_OP_BAND,
    "bor": UCC_OP_BOR, "bxor": UCC_OP_BXOR,
}
THREAD_MODES = {UCC_THREAD_SINGLE: "single", UCC_THREAD_FUNNELED: "funneled",
                UCC_THREAD_MULTIPLE: "multiple"}


def library_collectives() -> list[str]:
    """The collectives (keys of COLLECTIVES) that UCC's library supports with the components
    it loads here: a library of its own is initialised, asked (``ucc_lib_get_attr``) and
    finalised."""
    cdef ucc_lib_config_h config = NULL
    cdef ucc_lib_params_t params
    cdef ucc_lib_attr_t attr
    cdef ucc_lib_h lib
    cdef ucc_status_t st
    memset(&params, 0, sizeof(params))
    memset(&attr, 0, sizeof(attr))
    params.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE
    params.thread_mode = UCC_THREAD_MULTIPLE
    attr.mask = UCC_LIB_ATTR_FIELD_COLL_TYPES
    with nogil:
        st = ucc_lib_config_read(NULL, NULL, &config)
    check(st, "reading the library configuration")
    with nogil:
        st = ucc_init(&params, config, &lib)
        ucc_lib_config_release(config)
    check(st, "ucc_init")
    with nogil:
        st = ucc_lib_get_attr(lib, &attr)
        ucc_finalize(lib)
    check(st, "ucc_lib_get_attr")
    return [name for name, bit in COLLECTIVES.items() if attr.coll_types & bit]


cdef class Context:
    """UCC's library and one context. One per process.

    With ``oob`` (as Team's, over ``size`` processes of which this is ``rank``) the context is
    made collectively and its processes exchange addresses once: UCX may then connect them
    over shared memory. Without, each team exchanges its members' addresses, and UCC asks UCX
    for endpoints that report peer failures, which its shared-memory transports do not do.
    """

    cdef ucc_lib_h lib
    cdef ucc_context_h ctx
    cdef readonly str thread_mode
    cdef readonly object oob
    cdef public object oob_error

    def __cinit__(self, oob=None, int rank=0, int size=1):
        cdef ucc_lib_config_h lib_config = NULL
        cdef ucc_context_config_h ctx_config = NULL
        cdef ucc_lib_params_t lib_params
        cdef ucc_lib_attr_t attr
        cdef ucc_context_params_t ctx_params
        cdef ucc_status_t st
        memset(&lib_params, 0, sizeof(lib_params))
        memset(&attr, 0, sizeof(attr))
        memset(&ctx_params, 0, sizeof(ctx_params))
        lib_params.mask = UCC_LIB_PARAM_FIELD_THREAD_MODE
        lib_params.thread_mode = UCC_THREAD_MULTIPLE  # several groups' engine threads
        with nogil:
            st = ucc_lib_config_read(NULL, NULL, &lib_config)
        check(st, "reading the library configuration")
        with nogil:
            st = ucc_init(&lib_params, lib_config, &self.lib)
            ucc_lib_config_release(lib_config)
        check(st, "ucc_init")
        attr.mask = UCC_LIB_ATTR_FIELD_THREAD_MODE
        with nogil:
            st = ucc_lib_get_attr(self.lib, &attr)
        check(st, "ucc_lib_get_attr")
        self.thread_mode = THREAD_MODES.get(attr.thread_mode, str(attr.thread_mode))
        ctx_params.mask = UCC_CONTEXT_PARAM_FIELD_TYPE
        ctx_params.type = UCC_CONTEXT_EXCLUSIVE
        self.oob = oob
        if oob is not None:
            ctx_params.mask |= UCC_CONTEXT_PARAM_FIELD_OOB
            ctx_params.oob.allgather = _oob_allgather
            ctx_params.oob.req_test = _oob_test
            ctx_params.oob.req_free = _oob_free
            ctx_params.oob.coll_info = <void *>self
            ctx_params.oob.n_oob_eps = size
            ctx_params.oob.oob_ep = rank
        with nogil:
            st = ucc_context_config_read(self.lib, NULL, &ctx_config)
        check(st, "reading the context configuration")
        with nogil:
            st = ucc_context_create(self.lib, &ctx_params, ctx_config, &self.ctx)
            ucc_context_config_release(ctx_config)
        if self.oob_error is not None:
            error, self.oob_error = self.oob_error, None
            raise error
        check(st, "ucc_context_create")

    def progress(self) -> None:
        with nogil:
            ucc_context_progress(self.ctx)


# The out-of-band allgather of context and team creation: owner.oob(src, dst, nbytes) posts it
# (over MPI) and returns a request with Test(); UCC holds (owner, request) until req_free.
cdef ucc_status_t _oob_allgather(void *src, void *dst, size_t size, void *info,
                                 void **req) noexcept with gil:
    owner = <object>info  # the Team or Context being made
    try:
        pending = (owner, owner.oob(<size_t>src, <size_t>dst, size))
    except BaseException as exc:
        owner.oob_error = exc
        return UCC_ERR_NO_MESSAGE
    Py_INCREF(pending)
    req[0] = <void *>pending
    return UCC_OK


cdef ucc_status_t _oob_test(void *req) noexcept with gil:
    pending = <tuple>req
    try:
        return UCC_OK if pending[1].Test() else UCC_INPROGRESS
    except BaseException as exc:
        pending[0].oob_error = exc
        return UCC_ERR_NO_MESSAGE


cdef ucc_status_t _oob_free(void *req) noexcept with gil:
    Py_DECREF(<object>req)
    return UCC_OK


cdef class Team:
    """A UCC team of ``size`` members; this process is ``rank``. ``oob(src, dst, nbytes)``
    posts the allgather of ``nbytes`` from address src into ``size * nbytes`` at dst and
    returns a request with ``Test()``. Creation is collective: call ``create_test`` until
    True on every member."""

    cdef ucc_team_h team
    cdef Context context
    cdef readonly object oob
    cdef public object oob_error
    cdef readonly int rank, size
    cdef readonly bint ready

    def __cinit__(self, Context context, int rank, int size, oob):
        cdef ucc_team_params_t params
        cdef ucc_status_t st
        if not 0 <= rank < size:
            raise ValueError(f"rank {rank} is not in a team of {size}")
        self.context, self.rank, self.size, self.oob = context, rank, size, oob
        memset(&params, 0, sizeof(params))
        params.mask = (UCC_TEAM_PARAM_FIELD_EP | UCC_TEAM_PARAM_FIELD_EP_RANGE
                       | UCC_TEAM_PARAM_FIELD_OOB | UCC_TEAM_PARAM_FIELD_TEAM_SIZE)
        params.ep = rank
        params.ep_range = UCC_COLLECTIVE_EP_RANGE_CONTIG
        params.team_size = size
        params.oob.allgather = _oob_allgather
        params.oob.req_test = _oob_test
        params.oob.req_free = _oob_free
        params.oob.coll_info = <void *>self
        params.oob.n_oob_eps = size
        params.oob.oob_ep = rank
        with nogil:
            st = ucc_team_create_post(&context.ctx, 1, &params, &self.team)
        self._raise_oob()
        check(st, "ucc_team_create_post")

    def _raise_oob(self):
        if self.oob_error is not None:
            error, self.oob_error = self.oob_error, None
            raise error

    def create_test(self) -> bool:
        """Progress the team's creation once; True when it is made."""
        cdef ucc_status_t st
        if self.ready:
            return True
        with nogil:
            st = ucc_team_create_test(self.team)
        self._raise_oob()
        if st == UCC_INPROGRESS:
            return False
        check(st, "creating a team")
        self.ready = True
        return True

    def destroy(self, int tries=100000) -> bool:
        """Destroy the team (progressing up to ``tries`` times); False if still in progress."""
        cdef ucc_status_t st = UCC_INPROGRESS
        if self.team == NULL:
            return True
        for _ in range(tries):
            with nogil:
                st = ucc_team_destroy(self.team)
                if st == UCC_INPROGRESS:
                    ucc_context_progress(self.context.ctx)
            if st != UCC_INPROGRESS:
                break
        if st == UCC_INPROGRESS:
            return False
        self.team = NULL
        check(st, "ucc_team_destroy")
        return True


cdef class Collective:
    """A posted collective: ``Test()`` progresses the context and says whether it completed
    (raising UccError if it failed). The arrays of counts and displacements are kept here."""

    cdef ucc_coll_req_h req
    cdef Context context
    cdef readonly str what
    cdef readonly bint done
    cdef object keep

    def Test(self, status=None) -> bool:  # noqa: N802 (MPI's name: the engine's waits call it)
        cdef ucc_status_t st
        if self.done:
            return True
        with nogil:
            ucc_context_progress(self.context.ctx)
            st = ucc_collective_test(self.req)
        if st == UCC_INPROGRESS or st == UCC_OPERATION_INITIALIZED:
            return False
        self.done = True
        with nogil:
            ucc_collective_finalize(self.req)
        self.req = NULL
        self.keep = None
        check(st, self.what)
        return True
    # A collective dropped before completion stays allocated: UCC may still write its buffers.


cdef inline void _info(ucc_coll_buffer_info_t *info, size_t addr, uint64_t count,
                       ucc_datatype_t dt) noexcept:
    info.buffer = <void *>addr
    info.count = count
    info.datatype = dt
    info.mem_type = UCC_MEMORY_TYPE_HOST


cdef inline void _info_v(ucc_coll_buffer_info_v_t *info, size_t addr, uint64_t[::1] counts,
                         uint64_t[::1] displs, ucc_datatype_t dt) noexcept:
    info.buffer = <void *>addr
    info.counts = <ucc_count_t *>&counts[0]
    info.displacements = <ucc_aint_t *>&displs[0]
    info.datatype = dt
    info.mem_type = UCC_MEMORY_TYPE_HOST


def post(Team team not None, str coll, size_t src=0, uint64_t src_count=0, str src_dtype="uint8",
         size_t dst=0, uint64_t dst_count=0, str dst_dtype="uint8", str op="sum",
         uint64_t root=0, bint in_place=False, src_counts=None, src_displs=None,
         dst_counts=None, dst_displs=None) -> Collective:
    """Post collective ``coll`` (a key of COLLECTIVES) on a made team and return it.

    Counts are elements of the buffers' dtypes (keys of DATATYPES). A side given
    ``*_counts`` and ``*_displs`` (uint64 arrays of the team's size) is a v-side. ``in_place``:
    the source is the destination (UCC's IN_PLACE flag; src is then ignored).
    """
    cdef ucc_coll_args_t args
    cdef Collective req = Collective.__new__(Collective)
    cdef ucc_status_t st
    if not team.ready:
        raise ValueError("the UCC team is not made yet (create_test)")
    for name, counts in (("source", src_counts), ("destination", dst_counts)):
        if counts is not None and len(counts) != team.size:
            raise ValueError(f"{coll}: {len(counts)} {name} counts for {team.size} ranks")
    memset(&args, 0, sizeof(args))
    args.mask = UCC_COLL_ARGS_FIELD_FLAGS
    args.coll_type = COLLECTIVES[coll]
    args.op = OPS[op]
    args.root = root
    args.flags = UCC_COLL_ARGS_FLAG_COUNT_64BIT | UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT
    if in_place:
        args.flags |= UCC_COLL_ARGS_FLAG_IN_PLACE
    if src_counts is None:
        _info(&args.src.info, src, src_count, DATATYPES[src_dtype])
    else:
        _info_v(&args.src.info_v, src, src_counts, src_displs, DATATYPES[src_dtype])
        args.flags |= UCC_COLL_ARGS_FLAG_CONTIG_SRC_BUFFER
    if dst_counts is None:
        _info(&args.dst.info, dst, dst_count, DATATYPES[dst_dtype])
    else:
        _info_v(&args.dst.info_v, dst, dst_counts, dst_displs, DATATYPES[dst_dtype])
        args.flags |= UCC_COLL_ARGS_FLAG_CONTIG_DST_BUFFER
    req.context, req.what = team.context, coll
    req.keep = (src_counts, src_displs, dst_counts, dst_displs)
    with nogil:
        st = ucc_collective_init(&args, &req.req, team.team)
    check(st, f"ucc_collective_init of {coll}")
    with nogil:
        st = ucc_collective_post(req.req)
        if st < 0:
            ucc_collective_finalize(req.req)
    if st < 0:
        req.req = NULL
        req.done = True
    check(st, f"ucc_collective_post of {coll}")
    return req
