# SPDX-License-Identifier: Apache-2.0
# The constants and structs of include/hvd/hvd.h (tests/bindings/binding_coverage.py checks
# every value and every struct layout against what the C compiler says).

const HVD_ABI_VERSION = UInt32(1)
const HVD_MAX_NDIM = 32
const HVD_MAX_NAME = 1024
const HVD_UNIQUE_ID_BYTES = 128

# hvd_status_t
const HVD_OK = Int32(0)
const HVD_INPROGRESS = Int32(1)
const HVD_ERR_INVALID_ARG = Int32(-1)
const HVD_ERR_NO_MEMORY = Int32(-2)
const HVD_ERR_UNSUPPORTED = Int32(-3)
const HVD_ERR_VERSION = Int32(-4)
const HVD_ERR_NOT_READY = Int32(-5)
const HVD_ERR_BUSY = Int32(-6)
const HVD_ERR_MISMATCH = Int32(-7)
const HVD_ERR_TIMED_OUT = Int32(-8)
const HVD_ERR_ABORTED = Int32(-9)
const HVD_ERR_PEER_FAILED = Int32(-10)
const HVD_ERR_DEVICE = Int32(-11)
const HVD_ERR_TRANSPORT = Int32(-12)
const HVD_ERR_INTERNAL = Int32(-13)

# HVD_FEATURE_* bits of features()
const HVD_FEATURE_UCX = UInt64(1) << 0
const HVD_FEATURE_CUDA = UInt64(1) << 1
const HVD_FEATURE_NCCL = UInt64(1) << 2
const HVD_FEATURE_HWLOC = UInt64(1) << 3

# hvd_dtype_t
const HVD_DTYPE_UINT8 = Int32(0)
const HVD_DTYPE_INT8 = Int32(1)
const HVD_DTYPE_UINT16 = Int32(2)
const HVD_DTYPE_INT16 = Int32(3)
const HVD_DTYPE_INT32 = Int32(4)
const HVD_DTYPE_INT64 = Int32(5)
const HVD_DTYPE_FLOAT16 = Int32(6)
const HVD_DTYPE_FLOAT32 = Int32(7)
const HVD_DTYPE_FLOAT64 = Int32(8)
const HVD_DTYPE_BOOL = Int32(9)
const HVD_DTYPE_BFLOAT16 = Int32(10)

# hvd_device_type_t
const HVD_DEVICE_CPU = Int32(1)
const HVD_DEVICE_CUDA = Int32(2)

# hvd_reduce_op_t
const HVD_OP_AVERAGE = Int32(0)
const HVD_OP_SUM = Int32(1)
const HVD_OP_ADASUM = Int32(2)
const HVD_OP_MIN = Int32(3)
const HVD_OP_MAX = Int32(4)
const HVD_OP_PRODUCT = Int32(5)

# field_mask bits
const HVD_TENSOR_FIELD_READY_EVENT = UInt64(1) << 0
const HVD_OP_FIELD_NAME = UInt64(1) << 0
const HVD_OP_FIELD_PROCESS_SET = UInt64(1) << 1
const HVD_OP_FIELD_REDUCE_OP = UInt64(1) << 2
const HVD_OP_FIELD_SCALE = UInt64(1) << 3
const HVD_OP_FIELD_ROOT = UInt64(1) << 4
const HVD_OP_FIELD_SPLITS = UInt64(1) << 5
const HVD_OP_FIELD_TIMEOUT = UInt64(1) << 6
const HVD_OP_FIELD_STREAM = UInt64(1) << 7
const HVD_INIT_FIELD_RANK = UInt64(1) << 0
const HVD_INIT_FIELD_UNIQUE_ID = UInt64(1) << 1
const HVD_INIT_FIELD_TIMEOUT = UInt64(1) << 2

# hvd_config_key_t
const HVD_CONFIG_FUSION_THRESHOLD = Int32(0)
const HVD_CONFIG_CYCLE_TIME = Int32(1)
const HVD_CONFIG_STALL_CHECK_TIME = Int32(2)
const HVD_CONFIG_STALL_SHUTDOWN_TIME = Int32(3)
const HVD_CONFIG_AUTOTUNE = Int32(4)
const HVD_CONFIG_CACHE_CAPACITY = Int32(5)

# hvd_tensor_t
struct HvdTensor
    field_mask::UInt64
    data::Ptr{Cvoid}
    dtype::Int32
    ndim::Int32
    shape::Ptr{Int64}
    device_type::Int32
    device_id::Int32
    ready_event::Ptr{Cvoid}
end

# hvd_op_params_t
struct HvdOpParams
    field_mask::UInt64
    name::Ptr{UInt8}
    process_set::Ptr{Cvoid}
    reduce_op::Int32
    root_rank::Int32
    prescale::Float64
    postscale::Float64
    splits::Ptr{Int32}
    timeout_ms::Int64
    stream::Ptr{Cvoid}
    num_splits::Int32
end

# hvd_unique_id_t
struct HvdUniqueId
    internal::NTuple{128,UInt8}
end

# hvd_init_params_t
struct HvdInitParams
    field_mask::UInt64
    rank::Int32
    size::Int32
    unique_id::HvdUniqueId
    timeout_ms::Int64
end
