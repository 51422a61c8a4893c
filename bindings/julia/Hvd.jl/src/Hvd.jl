# SPDX-License-Identifier: Apache-2.0
"""
    Hvd

Julia binding of libhvd, Horovod's distributed-training engine with a stable C ABI. Every call
goes through `ccall` into `libhvd.so.1`, found through `HVD_LIBRARY_PATH` (a file, or
directories separated by `:`) or else the system's library path.

Julia arrays are column-major: the C ABI's first (row) dimension is a Julia array's *last*
dimension, so allgather, alltoall and reducescatter work along the last dimension. `rank`,
`size`, `finalize` and `broadcast!` are not exported (Base has functions of those names): call
them as `Hvd.rank(ctx)` and so on.

```julia
using Hvd
ctx = Hvd.init()                   # under hvdrun
x = fill(Float32(Hvd.rank(ctx)), 4)
Hvd.allreduce!(ctx, x; op = Hvd.SUM)
Hvd.finalize(ctx)
```
"""
module Hvd

using Libdl

export HvdError, Context, ProcessSet, Request
export allreduce!, allreduce, allgather, allgather_into!, alltoall, reducescatter
export barrier, join!, grouped_allreduce!, grouped_allgather, grouped_reducescatter, test

include("constants.jl")

# ------------------------------------------------------------------ the library

const SONAME = "libhvd.so.1"
const _handle = Ref{Ptr{Cvoid}}(C_NULL)
const _symbols = Dict{Symbol,Ptr{Cvoid}}()
const _lock = ReentrantLock()

function _library_candidates()
    spec = get(ENV, "HVD_LIBRARY_PATH", "")
    isempty(spec) && return [SONAME]
    isfile(spec) && return [spec]
    [joinpath(d, n) for d in split(spec, ':') if !isempty(d) for n in (SONAME, "libhvd.so")]
end

function _library()
    _handle[] != C_NULL && return _handle[]
    lock(_lock) do
        if _handle[] == C_NULL
            for path in _library_candidates()
                h = Libdl.dlopen(path, Libdl.RTLD_LAZY | Libdl.RTLD_GLOBAL; throw_error = false)
                if h !== nothing
                    _handle[] = h
                    break
                end
            end
            _handle[] == C_NULL && error("Hvd: cannot load $(SONAME) (HVD_LIBRARY_PATH=\"",
                                         get(ENV, "HVD_LIBRARY_PATH", ""), "\")")
        end
    end
    _handle[]
end

"The address of an exported hvd_* function."
function _fn(name::Symbol)
    get!(_symbols, name) do
        Libdl.dlsym(_library(), name)
    end
end

# ------------------------------------------------------------------ errors

"""
    HvdError(status, message)

A libhvd call or collective failed: `status` is the `HVD_ERR_*` code, `message` the
library's detail (which rank, which tensor, what disagreed).
"""
struct HvdError <: Exception
    status::Int32
    message::String
end

Base.showerror(io::IO, e::HvdError) = print(io, status_name(e.status), ": ", e.message)

status_name(s::Integer) = unsafe_string(ccall(_fn(:hvd_status_name), Cstring, (Cint,), s))
strerror(s::Integer) = unsafe_string(ccall(_fn(:hvd_strerror), Cstring, (Cint,), s))

"This thread's last error detail (`hvd_last_error`)."
function last_error()
    n = ccall(_fn(:hvd_last_error), Csize_t, (Ptr{UInt8}, Csize_t), C_NULL, 0)
    buf = Vector{UInt8}(undef, n + 1)
    ccall(_fn(:hvd_last_error), Csize_t, (Ptr{UInt8}, Csize_t), buf, length(buf))
    String(buf[1:n])
end

_check(status::Integer) = status < 0 ? throw(HvdError(status, last_error())) : status

# ------------------------------------------------------------------ version, features, config

version() = ccall(_fn(:hvd_version), UInt32, ())
version_string() = unsafe_string(ccall(_fn(:hvd_version_string), Cstring, ()))
"`HVD_FEATURE_*` bits of what this build of libhvd does."
features() = ccall(_fn(:hvd_features), UInt64, ())

# ------------------------------------------------------------------ context

"""
    Context

A libhvd context (`hvd_context_h`): this process's membership of a job. Made by
[`init`](@ref), left by [`finalize`](@ref) (also `close`).
"""
mutable struct Context
    ptr::Ptr{Cvoid}
end

_ptr(ctx::Context) = ctx.ptr == C_NULL ? throw(HvdError(HVD_ERR_NOT_READY, "the context was finalized")) : ctx.ptr

"""
    get_unique_id() -> Vector{UInt8}

A new job id for `init(; rank, size, unique_id)`; call on exactly one process.
"""
function get_unique_id()
    id = Ref(HvdUniqueId(ntuple(_ -> 0x00, HVD_UNIQUE_ID_BYTES)))
    _check(ccall(_fn(:hvd_get_unique_id), Cint, (Ptr{HvdUniqueId},), id))
    collect(id[].internal)
end

"""
    init(; rank, size, unique_id, timeout_ms) -> Context

Joins the job: from the launcher's environment (hvdrun, Open MPI, Slurm, PMI, torchrun) when
no keyword is given. Blocks until every rank has joined (bounded by the bootstrap timeout).
"""
function init(; rank = nothing, size = nothing, unique_id = nothing, timeout_ms = nothing)
    mask = UInt64(0)
    r = s = Int32(0)
    id = ntuple(_ -> 0x00, HVD_UNIQUE_ID_BYTES)
    t = Int64(0)
    if rank !== nothing
        mask |= HVD_INIT_FIELD_RANK
        r, s = Int32(rank), Int32(size)
    end
    if unique_id !== nothing
        length(unique_id) == HVD_UNIQUE_ID_BYTES ||
            throw(ArgumentError("a unique id has $(HVD_UNIQUE_ID_BYTES) bytes"))
        mask |= HVD_INIT_FIELD_UNIQUE_ID
        id = Tuple(UInt8.(unique_id))
    end
    if timeout_ms !== nothing
        mask |= HVD_INIT_FIELD_TIMEOUT
        t = Int64(timeout_ms)
    end
    params = Ref(HvdInitParams(mask, r, s, HvdUniqueId(id), t))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _check(ccall(_fn(:hvd_init_versioned), Cint, (UInt32, UInt32, Ptr{HvdInitParams}, Ptr{Ptr{Cvoid}}),
                 HVD_ABI_VERSION, version(), params, out))
    Context(out[])
end

"Leaves the job and frees the context (collective on a healthy context)."
function finalize(ctx::Context)
    p = ctx.ptr
    p == C_NULL && return nothing
    ctx.ptr = C_NULL
    _check(ccall(_fn(:hvd_finalize), Cint, (Ptr{Cvoid},), p))
    nothing
end
Base.close(ctx::Context) = finalize(ctx)

"Aborts the context: outstanding requests fail with `reason`, peers with PEER_FAILED."
abort(ctx::Context, reason::Integer = HVD_ERR_ABORTED) =
    (_check(ccall(_fn(:hvd_abort), Cint, (Ptr{Cvoid}, Cint), _ptr(ctx), reason)); nothing)

"Throws the context's first fatal error, if any."
check_healthy(ctx::Context) = (_check(ccall(_fn(:hvd_context_error), Cint, (Ptr{Cvoid},), _ptr(ctx))); nothing)

# ------------------------------------------------------------------ process sets and topology

"""
    ProcessSet

A set of global ranks (`hvd_process_set_h`) from [`process_set_create`](@ref).
"""
mutable struct ProcessSet
    ctx::Context
    ptr::Ptr{Cvoid}
end

_ps(::Nothing) = C_NULL
_ps(ps::ProcessSet) = ps.ptr == C_NULL ? throw(ArgumentError("the process set was destroyed")) : ps.ptr

function _query(f::Symbol, ctx::Context)
    v = Ref{Int32}(0)
    _check(ccall(_fn(f), Cint, (Ptr{Cvoid}, Ref{Int32}), _ptr(ctx), v))
    Int(v[])
end

"Rank of this process in `ps` (all ranks by default); -1 outside the set."
function rank(ctx::Context, ps::Union{Nothing,ProcessSet} = nothing)
    v = Ref{Int32}(0)
    _check(ccall(_fn(:hvd_rank), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Ref{Int32}), _ptr(ctx), _ps(ps), v))
    Int(v[])
end
function size(ctx::Context, ps::Union{Nothing,ProcessSet} = nothing)
    v = Ref{Int32}(0)
    _check(ccall(_fn(:hvd_size), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Ref{Int32}), _ptr(ctx), _ps(ps), v))
    Int(v[])
end
local_rank(ctx::Context) = _query(:hvd_local_rank, ctx)
local_size(ctx::Context) = _query(:hvd_local_size, ctx)
cross_rank(ctx::Context) = _query(:hvd_cross_rank, ctx)
cross_size(ctx::Context) = _query(:hvd_cross_size, ctx)

"""(round, pending) of an elastic job (hvdrun --min-np/--max-np): the membership round this
context joined (-1 when not elastic), and whether workers wait to join a later one."""
function elastic_membership(ctx::Context)
    round = Ref{Int64}(0)
    pending = Ref{Int32}(0)
    _check(ccall(_fn(:hvd_elastic_membership), Cint, (Ptr{Cvoid}, Ref{Int64}, Ref{Int32}),
                 _ptr(ctx), round, pending))
    (Int(round[]), pending[] != 0)
end

"Makes a process set of the given global ranks: collective over all ranks."
function process_set_create(ctx::Context, ranks::AbstractVector{<:Integer})
    r = Int32.(ranks)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _check(ccall(_fn(:hvd_process_set_create), Cint, (Ptr{Cvoid}, Ptr{Int32}, Int32, Ptr{Ptr{Cvoid}}),
                 _ptr(ctx), r, length(r), out))
    ProcessSet(ctx, out[])
end

"Destroys a process set: collective over all ranks."
function process_set_destroy(ps::ProcessSet)
    p = _ps(ps)
    ps.ptr = C_NULL
    _check(ccall(_fn(:hvd_process_set_destroy), Cint, (Ptr{Cvoid}, Ptr{Cvoid}), _ptr(ps.ctx), p))
    nothing
end

function included(ps::ProcessSet)
    v = Ref{Int32}(0)
    _check(ccall(_fn(:hvd_process_set_included), Cint, (Ptr{Cvoid}, Ptr{Cvoid}, Ref{Int32}),
                 _ptr(ps.ctx), _ps(ps), v))
    v[] != 0
end
rank(ps::ProcessSet) = rank(ps.ctx, ps)
size(ps::ProcessSet) = size(ps.ctx, ps)

# ------------------------------------------------------------------ timeline and configuration

timeline_start(ctx::Context, path::AbstractString; mark_cycles::Bool = false) =
    (_check(ccall(_fn(:hvd_timeline_start), Cint, (Ptr{Cvoid}, Cstring, Int32), _ptr(ctx), path, mark_cycles)); nothing)
timeline_stop(ctx::Context) = (_check(ccall(_fn(:hvd_timeline_stop), Cint, (Ptr{Cvoid},), _ptr(ctx))); nothing)

_cptr(ctx::Nothing) = C_NULL
_cptr(ctx::Context) = _ptr(ctx)

"Sets an `HVD_CONFIG_*` knob of `ctx` (`nothing`: the process-wide default)."
config_set(ctx::Union{Nothing,Context}, key::Integer, value::Real) =
    (_check(ccall(_fn(:hvd_config_set), Cint, (Ptr{Cvoid}, Int32, Float64), _cptr(ctx), key, value)); nothing)

function config_get(ctx::Union{Nothing,Context}, key::Integer)
    v = Ref{Float64}(0)
    _check(ccall(_fn(:hvd_config_get), Cint, (Ptr{Cvoid}, Int32, Ref{Float64}), _cptr(ctx), key, v))
    v[]
end

include("collectives.jl")
include("memory.jl")

end # module
