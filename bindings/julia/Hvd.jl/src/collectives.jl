# SPDX-License-Identifier: Apache-2.0
# Collectives on Julia arrays, and their requests.

const AVERAGE = HVD_OP_AVERAGE
const SUM = HVD_OP_SUM
const ADASUM = HVD_OP_ADASUM
const MIN = HVD_OP_MIN
const MAX = HVD_OP_MAX
const PRODUCT = HVD_OP_PRODUCT

const _DTYPE_OF = Dict{DataType,Int32}(
    UInt8 => HVD_DTYPE_UINT8, Int8 => HVD_DTYPE_INT8, UInt16 => HVD_DTYPE_UINT16,
    Int16 => HVD_DTYPE_INT16, Int32 => HVD_DTYPE_INT32, Int64 => HVD_DTYPE_INT64,
    Float16 => HVD_DTYPE_FLOAT16, Float32 => HVD_DTYPE_FLOAT32, Float64 => HVD_DTYPE_FLOAT64,
    Bool => HVD_DTYPE_BOOL)
const _TYPE_OF = Dict{Int32,DataType}(v => k for (k, v) in _DTYPE_OF)

"""
    register_dtype!(T, code)

Lets arrays of `T` travel as libhvd dtype `code`, e.g.
`Hvd.register_dtype!(BFloat16s.BFloat16, Hvd.HVD_DTYPE_BFLOAT16)`.
"""
function register_dtype!(::Type{T}, code::Integer) where {T}
    sizeof(T) == (code == HVD_DTYPE_BFLOAT16 ? 2 : sizeof(_TYPE_OF[Int32(code)])) ||
        throw(ArgumentError("$(T) has $(sizeof(T)) bytes, not those of dtype $(code)"))
    _DTYPE_OF[T] = Int32(code)
    _TYPE_OF[Int32(code)] = T
    nothing
end

dtype_code(::Type{T}) where {T} =
    get(() -> throw(ArgumentError("libhvd has no dtype for $(T) (see Hvd.register_dtype!)")), _DTYPE_OF, T)

"""
    Request

One enqueued collective (`hvd_request_h`): `wait` blocks (yielding to other tasks), `test`
polls, `fetch` waits and returns output 0, `close` releases it. Holds its arrays until closed.
"""
mutable struct Request
    ptr::Ptr{Cvoid}
    keep::Vector{Any}
    outs::Vector{Any}
    set_size::Int
end

_live(r::Request) = r.ptr == C_NULL ? throw(ArgumentError("the request was closed")) : r.ptr

function message(r::Request)
    n = ccall(_fn(:hvd_request_message), Csize_t, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), _live(r), C_NULL, 0)
    buf = Vector{UInt8}(undef, n + 1)
    ccall(_fn(:hvd_request_message), Csize_t, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), r.ptr, buf, length(buf))
    String(buf[1:n])
end

function _settle(r::Request, st::Integer)
    st == HVD_INPROGRESS && return false
    if st < 0
        m = message(r)
        throw(HvdError(st, isempty(m) ? last_error() : m))
    end
    true
end

"True once the collective completed; false while it runs; throws its HvdError if it failed."
test(r::Request) = _settle(r, ccall(_fn(:hvd_request_test), Cint, (Ptr{Cvoid},), _live(r)))

"""
    wait(r::Request; timeout_ms = -1) -> Bool

Waits for the collective, letting other tasks run; false when `timeout_ms` (>= 0) passed first.
"""
function Base.wait(r::Request; timeout_ms::Integer = -1)
    t0 = time_ns()
    while true
        st = ccall(_fn(:hvd_request_wait), Cint, (Ptr{Cvoid}, Int64), _live(r), 10)
        _settle(r, st) && return true
        timeout_ms >= 0 && (time_ns() - t0) >= timeout_ms * 1_000_000 && return false
        yield()
    end
end

"Output `i` (0 for single-tensor ops): the caller's array, or a copy of a library-owned output."
function output(r::Request, i::Integer = 0)
    t = Ref{HvdTensor}()
    _settle(r, ccall(_fn(:hvd_request_output), Cint, (Ptr{Cvoid}, Int32, Ptr{HvdTensor}), _live(r), i, t)) ||
        throw(ArgumentError("the request is still running"))
    i < length(r.outs) && r.outs[i+1] !== nothing && return r.outs[i+1]
    T = _TYPE_OF[t[].dtype]
    dims = t[].ndim == 0 ? () :
           Tuple(reverse([Int(unsafe_load(t[].shape, k)) for k in 1:t[].ndim]))
    prod(dims; init = 1) == 0 && return Array{T}(undef, dims)
    copy(unsafe_wrap(Array, Ptr{T}(t[].data), dims; own = false))
end

Base.fetch(r::Request) = (wait(r); output(r, 0))

"Alltoall: rows received from each rank of the set."
function received_splits(r::Request)
    s = zeros(Int32, r.set_size)
    _settle(r, ccall(_fn(:hvd_request_received_splits), Cint, (Ptr{Cvoid}, Ptr{Int32}, Int32), _live(r), s, length(s))) ||
        throw(ArgumentError("the request is still running"))
    Int.(s)
end

"A join's result: the rank that joined last."
function value(r::Request)
    v = Ref{Int64}(0)
    _settle(r, ccall(_fn(:hvd_request_value), Cint, (Ptr{Cvoid}, Ref{Int64}), _live(r), v)) ||
        throw(ArgumentError("the request is still running"))
    Int(v[])
end

"Releases the request, waiting first for one still running (its arrays must outlive it)."
function Base.close(r::Request)
    r.ptr == C_NULL && return nothing
    ccall(_fn(:hvd_request_test), Cint, (Ptr{Cvoid},), r.ptr) == HVD_INPROGRESS &&
        ccall(_fn(:hvd_request_wait), Cint, (Ptr{Cvoid}, Int64), r.ptr, -1)
    p = r.ptr
    r.ptr = C_NULL
    empty!(r.keep)
    _check(ccall(_fn(:hvd_request_release), Cint, (Ptr{Cvoid},), p))
    nothing
end

# ------------------------------------------------------------------ marshalling

function _tensor!(keep::Vector{Any}, x::Array{T}) where {T}
    shape = Int64[reverse(Base.size(x))...]
    push!(keep, x, shape)
    t = Ref(HvdTensor(0, pointer(x), dtype_code(T), length(shape), pointer(shape), HVD_DEVICE_CPU, 0, C_NULL))
    push!(keep, t)
    t
end

function _tensors!(keep::Vector{Any}, xs)
    ptrs = Ptr{HvdTensor}[Base.unsafe_convert(Ptr{HvdTensor}, _tensor!(keep, x)) for x in xs]
    push!(keep, ptrs)
    ptrs
end

function _params!(keep::Vector{Any}; name = nothing, process_set = nothing, op = nothing,
                  prescale = nothing, postscale = nothing, root = nothing, splits = nothing,
                  timeout_ms = nothing)
    mask = UInt64(0)
    np = Ptr{UInt8}(C_NULL)
    if name !== nothing
        bytes = [codeunits(String(name))..., 0x00]
        push!(keep, bytes)
        np = pointer(bytes)
        mask |= HVD_OP_FIELD_NAME
    end
    process_set !== nothing && (mask |= HVD_OP_FIELD_PROCESS_SET)
    op !== nothing && (mask |= HVD_OP_FIELD_REDUCE_OP)
    (prescale !== nothing || postscale !== nothing) && (mask |= HVD_OP_FIELD_SCALE)
    root !== nothing && (mask |= HVD_OP_FIELD_ROOT)
    sp = Ptr{Int32}(C_NULL)
    if splits !== nothing
        s = Int32.(collect(splits))
        push!(keep, s)
        sp = pointer(s)
        mask |= HVD_OP_FIELD_SPLITS
    end
    timeout_ms !== nothing && (mask |= HVD_OP_FIELD_TIMEOUT)
    p = Ref(HvdOpParams(mask, np, _ps(process_set), something(op, HVD_OP_SUM), something(root, 0),
                        something(prescale, 1.0), something(postscale, 1.0), sp,
                        something(timeout_ms, 0), C_NULL, splits === nothing ? 0 : length(splits)))
    push!(keep, p)
    p
end

_set_size(ctx, ps) = ps === nothing ? size(ctx) : size(ps)

# ------------------------------------------------------------------ asynchronous collectives

macro _enqueue(call, outs, set_size)
    quote
        local req = Ref{Ptr{Cvoid}}(C_NULL)
        GC.@preserve keep _check($call)
        Request(req[], keep, $outs, $set_size)
    end |> esc
end

"Enqueues an allreduce of `x` into `out` (`out === x` is in place)."
function allreduce_async!(ctx::Context, out::Array, x::Array; kw...)
    keep = Any[]
    i, o, p = _tensor!(keep, x), _tensor!(keep, out), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_allreduce_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdTensor}, Ptr{HvdTensor}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, o, p, req), Any[out], 0)
end

function allgather_async(ctx::Context, x::Array; kw...)
    keep = Any[]
    i, p = _tensor!(keep, x), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_allgather_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdTensor}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, p, req), Any[], 0)
end

function allgather_into_async!(ctx::Context, out::Array, x::Array; kw...)
    keep = Any[]
    i, o, p = _tensor!(keep, x), _tensor!(keep, out), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_allgather_into_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdTensor}, Ptr{HvdTensor}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, o, p, req), Any[out], 0)
end

function broadcast_async!(ctx::Context, out::Array, x::Array; kw...)
    keep = Any[]
    i, o, p = _tensor!(keep, x), _tensor!(keep, out), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_broadcast_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdTensor}, Ptr{HvdTensor}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, o, p, req), Any[out], 0)
end

function alltoall_async(ctx::Context, x::Array; process_set = nothing, kw...)
    keep = Any[]
    i, p = _tensor!(keep, x), _params!(keep; process_set = process_set, kw...)
    @_enqueue(ccall(_fn(:hvd_alltoall_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdTensor}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, p, req), Any[], _set_size(ctx, process_set))
end

function reducescatter_async(ctx::Context, x::Array; kw...)
    keep = Any[]
    i, p = _tensor!(keep, x), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_reducescatter_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdTensor}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, p, req), Any[], 0)
end

function barrier_async(ctx::Context; kw...)
    keep = Any[]
    p = _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_barrier_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), p, req), Any[], 0)
end

function join_async(ctx::Context; kw...)
    keep = Any[]
    p = _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_join_enqueue), Cint, (Ptr{Cvoid}, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), p, req), Any[], 0)
end

function grouped_allreduce_async!(ctx::Context, outs::AbstractVector{<:Array}, xs::AbstractVector{<:Array}; kw...)
    length(outs) == length(xs) || throw(ArgumentError("$(length(xs)) inputs but $(length(outs)) outputs"))
    keep = Any[]
    i, o, p = _tensors!(keep, xs), _tensors!(keep, outs), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_grouped_allreduce_enqueue), Cint,
                    (Ptr{Cvoid}, Ptr{Ptr{HvdTensor}}, Ptr{Ptr{HvdTensor}}, Int32, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, o, length(xs), p, req), Any[outs...], 0)
end

function grouped_allgather_async(ctx::Context, xs::AbstractVector{<:Array}; kw...)
    keep = Any[]
    i, p = _tensors!(keep, xs), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_grouped_allgather_enqueue), Cint,
                    (Ptr{Cvoid}, Ptr{Ptr{HvdTensor}}, Int32, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, length(xs), p, req), Any[], 0)
end

function grouped_reducescatter_async(ctx::Context, xs::AbstractVector{<:Array}; kw...)
    keep = Any[]
    i, p = _tensors!(keep, xs), _params!(keep; kw...)
    @_enqueue(ccall(_fn(:hvd_grouped_reducescatter_enqueue), Cint,
                    (Ptr{Cvoid}, Ptr{Ptr{HvdTensor}}, Int32, Ptr{HvdOpParams}, Ptr{Ptr{Cvoid}}),
                    _ptr(ctx), i, length(xs), p, req), Any[], 0)
end

# ------------------------------------------------------------------ blocking collectives

function _finish(f, r::Request)
    try
        wait(r)
        f(r)
    finally
        close(r)
    end
end

"In-place allreduce of `x` over all ranks (keywords: op, name, prescale, postscale, process_set, timeout_ms)."
allreduce!(ctx::Context, x::Array; kw...) = _finish(_ -> x, allreduce_async!(ctx, x, x; kw...))
allreduce(ctx::Context, x::Array; kw...) = allreduce!(ctx, copy(x); kw...)
"Concatenation of every rank's `x` along the last dimension, in rank order."
allgather(ctx::Context, x::Array; kw...) = _finish(output, allgather_async(ctx, x; kw...))
allgather_into!(ctx::Context, out::Array, x::Array; kw...) = _finish(_ -> out, allgather_into_async!(ctx, out, x; kw...))
"The root's `x` on every rank, in place."
broadcast!(ctx::Context, x::Array; root::Integer = 0, kw...) =
    _finish(_ -> x, broadcast_async!(ctx, x, x; root = root, kw...))
"Slices of the last dimension to every rank (`splits`, default even); returns (output, received splits)."
alltoall(ctx::Context, x::Array; kw...) = _finish(r -> (output(r), received_splits(r)), alltoall_async(ctx, x; kw...))
"Sum or Average over all ranks, each keeping its block of the last dimension."
reducescatter(ctx::Context, x::Array; kw...) = _finish(output, reducescatter_async(ctx, x; kw...))
barrier(ctx::Context; kw...) = _finish(_ -> nothing, barrier_async(ctx; kw...))
"Horovod's join; returns the rank that joined last."
join!(ctx::Context; kw...) = _finish(value, join_async(ctx; kw...))
grouped_allreduce!(ctx::Context, xs::AbstractVector{<:Array}; kw...) =
    _finish(_ -> xs, grouped_allreduce_async!(ctx, xs, xs; kw...))
grouped_allgather(ctx::Context, xs::AbstractVector{<:Array}; kw...) =
    _finish(r -> [output(r, i) for i in 0:length(xs)-1], grouped_allgather_async(ctx, xs; kw...))
grouped_reducescatter(ctx::Context, xs::AbstractVector{<:Array}; kw...) =
    _finish(r -> [output(r, i) for i in 0:length(xs)-1], grouped_reducescatter_async(ctx, xs; kw...))
