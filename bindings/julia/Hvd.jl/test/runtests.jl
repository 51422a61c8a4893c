# SPDX-License-Identifier: Apache-2.0
# Run on every rank of a job: hvdrun -np 2 julia --project=bindings/julia/Hvd.jl \
#   bindings/julia/Hvd.jl/test/runtests.jl (with HVD_LIBRARY_PATH naming libhvd's directory).
using Test
using Hvd

const ctx = Hvd.init()
const r = Hvd.rank(ctx)
const n = Hvd.size(ctx)
value(T, rank, i) = T === Bool ? (rank + i) % 3 == 0 : T((rank * 3 + i * 5) % 4 + 1)
const TYPES = (UInt8, Int8, UInt16, Int16, Int32, Int64, Float16, Float32, Float64, Bool)

@testset "Hvd.jl on $n ranks" begin
    @testset "basics" begin
        @test n == parse(Int, ENV["HVD_SIZE"])
        @test r == parse(Int, ENV["HVD_RANK"])
        @test Hvd.local_size(ctx) == n
        @test Hvd.cross_size(ctx) == 1
        @test Hvd.status_name(Hvd.HVD_ERR_MISMATCH) == "HVD_ERR_MISMATCH"
        @test !isempty(Hvd.strerror(Hvd.HVD_ERR_TIMED_OUT))
        @test Hvd.features() & Hvd.HVD_FEATURE_CUDA == 0
        @test startswith(Hvd.version_string(), string(Hvd.version() ÷ 10000))
        Hvd.config_set(ctx, Hvd.HVD_CONFIG_FUSION_THRESHOLD, 1 << 20)
        @test Hvd.config_get(ctx, Hvd.HVD_CONFIG_FUSION_THRESHOLD) == 1 << 20
        @test Hvd.config_get(nothing, Hvd.HVD_CONFIG_CYCLE_TIME) >= 0
        Hvd.check_healthy(ctx)
    end

    @testset "allreduce! of $T" for T in TYPES
        for (op, f) in ((Hvd.SUM, +), (Hvd.MIN, min), (Hvd.MAX, max), (Hvd.PRODUCT, *))
            x = [value(T, r, i) for i in 1:5]
            want = [reduce(f, [value(T, k, i) for k in 0:n-1]) for i in 1:5]
            T === Bool && (want = [reduce(op in (Hvd.SUM, Hvd.MAX) ? (|) : (&), [value(T, k, i) for k in 0:n-1]) for i in 1:5])
            @test Hvd.allreduce!(ctx, x; op = op, name = "ar.$T.$op") == want
        end
    end

    @testset "allreduce with scaling and average" begin
        x = fill(Float64(r + 1), 3, 2)
        y = Hvd.allreduce(ctx, x; op = Hvd.AVERAGE, prescale = 2.0, postscale = 0.5)
        @test y ≈ fill(sum(1:n) / n, 3, 2)
        @test x == fill(Float64(r + 1), 3, 2)
        @test_throws HvdError Hvd.allreduce(ctx, [true]; op = Hvd.AVERAGE)
    end

    @testset "allgather along the last dimension" begin
        x = fill(Int32(r), 2, r + 1)
        g = Hvd.allgather(ctx, x; name = "ag")
        @test size(g) == (2, sum(1:n))
        @test g[1, :] == vcat([fill(Int32(k), k + 1) for k in 0:n-1]...)
        out = zeros(Int32, 2, sum(1:n))
        @test Hvd.allgather_into!(ctx, out, x) == g
    end

    @testset "broadcast!, alltoall, reducescatter" begin
        for root in 0:n-1
            @test Hvd.broadcast!(ctx, [Float32(r), 1f0]; root = root, name = "bc.$root") == [Float32(root), 1f0]
        end
        x = Int64[100r + k for k in 0:n-1]
        out, splits = Hvd.alltoall(ctx, x; name = "a2a")
        @test out == Int64[100k + r for k in 0:n-1]
        @test splits == ones(Int, n)
        rs = Hvd.reducescatter(ctx, ones(Float32, 3, n); op = Hvd.SUM)
        @test rs == fill(Float32(n), 3, 1)
    end

    @testset "grouped, barrier, join, process sets" begin
        xs = [fill(1.0, 2), fill(Int32(r), 3)]
        Hvd.grouped_allreduce!(ctx, xs; name = "g")
        @test xs[1] == fill(Float64(n), 2) && xs[2] == fill(Int32(sum(0:n-1)), 3)
        gs = Hvd.grouped_allgather(ctx, [[r], [Float32(r), 0f0]])
        @test gs[1] == collect(0:n-1) && length(gs[2]) == 2n
        @test length(Hvd.grouped_reducescatter(ctx, [ones(n)])[1]) == 1
        Hvd.barrier(ctx)
        @test 0 <= Hvd.join!(ctx) < n
        ps = Hvd.process_set_create(ctx, [0, 1])
        @test Hvd.included(ps) == (r < 2)
        @test Hvd.rank(ps) == (r < 2 ? r : -1)
        r < 2 && @test Hvd.allreduce!(ctx, [r + 1]; process_set = ps) == [3]
        Hvd.process_set_destroy(ps)
    end

    @testset "requests are waitable" begin
        x = [Float32(r)]
        req = Hvd.allreduce_async!(ctx, x, x; name = "async")
        task = @async wait(req)
        @test fetch(task) === true
        @test Hvd.test(req)
        @test Hvd.message(req) == ""
        close(req)
        @test_throws ArgumentError Hvd.test(req)
    end

    @testset "shared memory and timeline" begin
        a = Hvd.mem_alloc(Float32, 4096)
        a .= r
        Hvd.allreduce!(ctx, a; name = "shm")
        @test all(a .== sum(0:n-1))
        Hvd.mem_free(a)
        path = tempname() * ".json"
        Hvd.timeline_start(ctx, path; mark_cycles = true)
        Hvd.allreduce!(ctx, [1.0]; name = "traced")
        Hvd.timeline_stop(ctx)
        @test occursin("traced", read(path, String))
    end

    @testset "errors on every rank" begin
        e = try
            Hvd.allreduce!(ctx, zeros(Float32, r + 1); name = "ragged")
            nothing
        catch err
            err
        end
        @test e isa HvdError && e.status == Hvd.HVD_ERR_MISMATCH && occursin("ragged", e.message)
        @test_throws HvdError Hvd.allreduce_async!(ctx, zeros(2), zeros(3))
        @test_throws ArgumentError Hvd.allreduce!(ctx, [1 + 2im])
    end
end

Hvd.finalize(ctx)
