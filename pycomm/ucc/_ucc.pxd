# Declarations of UCC's C API (ucc/api/ucc.h, UCC 1.x) that pycomm.ucc uses, for Cython.
from libc.stdint cimport int64_t, uint16_t, uint32_t, uint64_t


cdef extern from "ucc/api/ucc.h" nogil:
    ctypedef enum ucc_status_t:
        UCC_OK
        UCC_INPROGRESS
        UCC_OPERATION_INITIALIZED
        UCC_ERR_NOT_SUPPORTED
        UCC_ERR_INVALID_PARAM
        UCC_ERR_NO_MESSAGE
        UCC_ERR_TIMED_OUT
    const char *ucc_status_string(ucc_status_t status)

    ctypedef struct ucc_lib_info:
        pass
    ctypedef ucc_lib_info *ucc_lib_h
    ctypedef struct ucc_context:
        pass
    ctypedef ucc_context *ucc_context_h
    ctypedef struct ucc_team:
        pass
    ctypedef ucc_team *ucc_team_h
    ctypedef struct ucc_coll_req:
        ucc_status_t status
    ctypedef ucc_coll_req *ucc_coll_req_h
    ctypedef struct ucc_lib_config:
        pass
    ctypedef ucc_lib_config *ucc_lib_config_h
    ctypedef struct ucc_context_config:
        pass
    ctypedef ucc_context_config *ucc_context_config_h

    ctypedef uint64_t ucc_datatype_t
    ctypedef uint64_t ucc_count_t
    ctypedef uint64_t ucc_aint_t
    ucc_datatype_t UCC_DT_INT8, UCC_DT_INT16, UCC_DT_INT32, UCC_DT_INT64
    ucc_datatype_t UCC_DT_UINT8, UCC_DT_UINT16, UCC_DT_UINT32, UCC_DT_UINT64
    ucc_datatype_t UCC_DT_FLOAT16, UCC_DT_FLOAT32, UCC_DT_FLOAT64, UCC_DT_BFLOAT16

    ctypedef enum ucc_coll_type_t:
        UCC_COLL_TYPE_ALLGATHER
        UCC_COLL_TYPE_ALLGATHERV
        UCC_COLL_TYPE_ALLREDUCE
        UCC_COLL_TYPE_ALLTOALL
        UCC_COLL_TYPE_ALLTOALLV
        UCC_COLL_TYPE_BARRIER
        UCC_COLL_TYPE_BCAST
        UCC_COLL_TYPE_GATHER
        UCC_COLL_TYPE_GATHERV
        UCC_COLL_TYPE_REDUCE
        UCC_COLL_TYPE_REDUCE_SCATTER
        UCC_COLL_TYPE_REDUCE_SCATTERV
        UCC_COLL_TYPE_SCATTER
        UCC_COLL_TYPE_SCATTERV

    ctypedef enum ucc_memory_type_t:
        UCC_MEMORY_TYPE_HOST

    ctypedef enum ucc_reduction_op_t:
        UCC_OP_SUM
        UCC_OP_PROD
        UCC_OP_MAX
        UCC_OP_MIN
        UCC_OP_LAND
        UCC_OP_LOR
        UCC_OP_LXOR
        UCC_OP_BAND
        UCC_OP_BOR
        UCC_OP_BXOR

    ctypedef enum ucc_thread_mode_t:
        UCC_THREAD_SINGLE
        UCC_THREAD_FUNNELED
        UCC_THREAD_MULTIPLE

    uint64_t UCC_LIB_PARAM_FIELD_THREAD_MODE
    uint64_t UCC_LIB_ATTR_FIELD_THREAD_MODE
    uint64_t UCC_LIB_ATTR_FIELD_COLL_TYPES
    ctypedef struct ucc_lib_params_t:
        uint64_t mask
        ucc_thread_mode_t thread_mode
    ctypedef struct ucc_lib_attr_t:
        uint64_t mask
        ucc_thread_mode_t thread_mode
        uint64_t coll_types

    ctypedef struct ucc_oob_coll_t:
        ucc_status_t (*allgather)(void *src_buf, void *recv_buf, size_t size,
                                  void *allgather_info, void **request)
        ucc_status_t (*req_test)(void *request)
        ucc_status_t (*req_free)(void *request)
        void *coll_info
        uint32_t n_oob_eps
        uint32_t oob_ep

    ctypedef enum ucc_context_type_t:
        UCC_CONTEXT_EXCLUSIVE
        UCC_CONTEXT_SHARED
    uint64_t UCC_CONTEXT_PARAM_FIELD_TYPE
    uint64_t UCC_CONTEXT_PARAM_FIELD_OOB
    ctypedef struct ucc_context_params_t:
        uint64_t mask
        ucc_context_type_t type
        ucc_oob_coll_t oob

    ctypedef enum ucc_ep_range_type_t:
        UCC_COLLECTIVE_EP_RANGE_CONTIG
    uint64_t UCC_TEAM_PARAM_FIELD_EP
    uint64_t UCC_TEAM_PARAM_FIELD_EP_RANGE
    uint64_t UCC_TEAM_PARAM_FIELD_OOB
    uint64_t UCC_TEAM_PARAM_FIELD_TEAM_SIZE
    ctypedef struct ucc_team_params_t:
        uint64_t mask
        uint64_t ep
        ucc_ep_range_type_t ep_range
        uint64_t team_size
        ucc_oob_coll_t oob

    ctypedef struct ucc_coll_buffer_info_t:
        void *buffer
        ucc_count_t count
        ucc_datatype_t datatype
        ucc_memory_type_t mem_type
    ctypedef struct ucc_coll_buffer_info_v_t:
        void *buffer
        ucc_count_t *counts
        ucc_aint_t *displacements
        ucc_datatype_t datatype
        ucc_memory_type_t mem_type
    # the anonymous union of src and dst; its name is never emitted
    ctypedef union ucc_coll_buffer_t "pycomm_ucc_buffer_union_unused":
        ucc_coll_buffer_info_t info
        ucc_coll_buffer_info_v_t info_v

    uint64_t UCC_COLL_ARGS_FIELD_FLAGS
    uint64_t UCC_COLL_ARGS_FLAG_IN_PLACE
    uint64_t UCC_COLL_ARGS_FLAG_COUNT_64BIT
    uint64_t UCC_COLL_ARGS_FLAG_DISPLACEMENTS_64BIT
    uint64_t UCC_COLL_ARGS_FLAG_CONTIG_SRC_BUFFER
    uint64_t UCC_COLL_ARGS_FLAG_CONTIG_DST_BUFFER
    ctypedef struct ucc_coll_args_t:
        uint64_t mask
        ucc_coll_type_t coll_type
        ucc_coll_buffer_t src
        ucc_coll_buffer_t dst
        ucc_reduction_op_t op
        uint64_t flags
        uint64_t root

    ucc_status_t ucc_lib_config_read(const char *env_prefix, const char *filename,
                                     ucc_lib_config_h *config)
    void ucc_lib_config_release(ucc_lib_config_h config)
    ucc_status_t ucc_init(const ucc_lib_params_t *params, const ucc_lib_config_h config,
                          ucc_lib_h *lib_p)
    ucc_status_t ucc_finalize(ucc_lib_h lib_p)
    ucc_status_t ucc_lib_get_attr(ucc_lib_h lib_p, ucc_lib_attr_t *lib_attr)
    const char *ucc_get_version_string()

    ucc_status_t ucc_context_config_read(ucc_lib_h lib_handle, const char *filename,
                                         ucc_context_config_h *config)
    void ucc_context_config_release(ucc_context_config_h config)
    ucc_status_t ucc_context_create(ucc_lib_h lib_handle, const ucc_context_params_t *params,
                                    const ucc_context_config_h config, ucc_context_h *context)
    ucc_status_t ucc_context_progress(ucc_context_h context)
    ucc_status_t ucc_context_destroy(ucc_context_h context)

    ucc_status_t ucc_team_create_post(ucc_context_h *contexts, uint32_t num_contexts,
                                      const ucc_team_params_t *team_params, ucc_team_h *new_team)
    ucc_status_t ucc_team_create_test(ucc_team_h team)
    ucc_status_t ucc_team_destroy(ucc_team_h team)

    ucc_status_t ucc_collective_init(ucc_coll_args_t *coll_args, ucc_coll_req_h *request,
                                     ucc_team_h team)
    ucc_status_t ucc_collective_post(ucc_coll_req_h request)
    ucc_status_t ucc_collective_test(ucc_coll_req_h request)
    ucc_status_t ucc_collective_finalize(ucc_coll_req_h request)
