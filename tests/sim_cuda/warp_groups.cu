// Correct: the rotation, kept only where warp collectives over groups smaller than the warp (each lane passing the
// member mask of its own group, as cooperative_groups' tiles do) agree with slow loops over shared memory: shuffles
// within groups of 8 and 16, cg::reduce over tiles of 8 and 4, ballot, all/any, redux (__reduce_add_sync) and
// match over groups of 16. A failing check flips bit n of the output's .y (n: the check's number below).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ int val[64];
    int t = threadIdx.x, lane = t & 31, base = t & ~31;
    int4 v = in[(t + 32) % 64];
    int x = in[t].x & 0xffff;
    unsigned fail = 0;
    val[t] = x;
    __syncthreads();

    // 0: xor shuffles inside groups of 8 and of 16
    unsigned m8 = 0xffu << (lane & ~7), m16 = 0xffffu << (lane & ~15);
    if (__shfl_xor_sync(m8, x, 3, 8) != val[base + (lane ^ 3)] || __shfl_xor_sync(m16, x, 9, 16) != val[base + (lane ^ 9)])
        fail |= 1u << 0;

    // 1: cg::reduce over tiles of 8 and 4
    cg::thread_block blk = cg::this_thread_block();
    cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(blk);
    cg::thread_block_tile<4> t4 = cg::tiled_partition<4>(blk);
    int s8 = 0, s4 = 0, mx4 = 0;
    for (int j = 0; j < 8; j++) s8 += val[(t & ~7) + j];
    for (int j = 0; j < 4; j++) s4 += val[(t & ~3) + j], mx4 = max(mx4, val[(t & ~3) + j]);
    if (cg::reduce(t8, x, cg::plus<int>()) != s8 || cg::reduce(t4, x, cg::plus<int>()) != s4 ||
        cg::reduce(t4, x, cg::greater<int>()) != mx4)
        fail |= 1u << 1;

    // 2-5: ballot, all/any, redux and match over groups of 16
    int odd = x & 1;
    unsigned want_b = 0;
    int sum = 0, all_odd = 1, any_odd = 0;
    for (int j = 0; j < 16; j++) {
        int o = val[base + (lane & ~15) + j];
        want_b |= (unsigned)(o & 1) << ((lane & ~15) + j);
        sum += o, all_odd &= o & 1, any_odd |= o & 1;
    }
    if (__ballot_sync(m16, odd) != want_b) fail |= 1u << 2;
    if (__all_sync(m16, odd) != all_odd || __any_sync(m16, odd) != any_odd) fail |= 1u << 3;
    if (__reduce_add_sync(m16, (unsigned)x) != (unsigned)sum) fail |= 1u << 4;
    unsigned key = x & 3, want_m = 0;
    for (int j = 0; j < 16; j++)
        if ((val[base + (lane & ~15) + j] & 3) == (int)key) want_m |= 1u << ((lane & ~15) + j);
    if (__match_any_sync(m16, key) != want_m) fail |= 1u << 5;

    v.y ^= (int)fail;
    out[t] = v;
}
