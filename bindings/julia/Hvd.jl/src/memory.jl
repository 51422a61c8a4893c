# SPDX-License-Identifier: Apache-2.0
# hvd_mem_alloc memory: arrays the other ranks of a single-host job map in place.

"""
    mem_alloc(T, dims...) -> Array{T}

A zero-filled array in `hvd_mem_alloc` memory: allreduces whose arrays lie in it on every rank
need no staging copies. Free it with [`mem_free`](@ref) once no collective on it is in flight.
"""
function mem_alloc(::Type{T}, dims::Integer...) where {T}
    n = prod(dims; init = 1) * sizeof(T)
    p = Ref{Ptr{Cvoid}}(C_NULL)
    _check(ccall(_fn(:hvd_mem_alloc), Cint, (Csize_t, Ptr{Ptr{Cvoid}}), max(n, 1), p))
    unsafe_wrap(Array, Ptr{T}(p[]), Tuple(Int.(dims)); own = false)
end

"Frees an array from [`mem_alloc`](@ref)."
mem_free(a::Array) = (_check(ccall(_fn(:hvd_mem_free), Cint, (Ptr{Cvoid},), pointer(a))); nothing)
