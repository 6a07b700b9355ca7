/* Counters for comparing kernel variants on the sim: dynamic instructions by
 * class, shared-memory wavefronts against the conflict-free ideal, and the
 * 32-byte global sectors a warp's request touches. */
#include <stdlib.h>
#include <string.h>
#include "sim.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Distinct 4-byte words per bank, maximised over banks, summed over phases. */
int sim_smem_wavefronts(const uint32_t *addr, uint32_t mask, int width, int lanes_per_phase, int *phases)
{
    int total = 0;
    *phases = 0;
    for (int p0 = 0; p0 < 32; p0 += lanes_per_phase) {
        uint64_t words[32 * 4];
        int n = 0;
        for (int l = p0; l < p0 + lanes_per_phase; l++)
            if (mask >> l & 1)
                for (int b = 0; b < width; b += 4) words[n++] = (addr[l] + (uint32_t)b) >> 2;
        if (!n) continue;
        ++*phases;
        qsort(words, (size_t)n, sizeof *words, cmp_u64);
        int per_bank[32] = {0}, worst = 0;
        for (int i = 0; i < n; i++) {
            if (i && words[i] == words[i - 1]) continue;
            int b = (int)(words[i] & 31);
            if (++per_bank[b] > worst) worst = per_bank[b];
        }
        total += worst;
    }
    return total;
}

int sim_gmem_sectors(const uint64_t *addr, uint32_t mask, int width)
{
    uint64_t sec[64];
    int n = 0;
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1) {
            sec[n++] = addr[l] >> 5;
            if ((addr[l] + (uint64_t)width - 1) >> 5 != addr[l] >> 5) sec[n++] = (addr[l] + (uint64_t)width - 1) >> 5;
        }
    qsort(sec, (size_t)n, sizeof *sec, cmp_u64);
    int distinct = 0;
    for (int i = 0; i < n; i++) distinct += !i || sec[i] != sec[i - 1];
    return distinct;
}

void sim_stats_print(const SimStats *s, const char *entry, FILE *out)
{
    uint64_t wt = 0, lt = 0;
    for (int c = 0; c < CL_COUNT; c++) wt += s->warp_insns[c], lt += s->lane_insns[c];
    fprintf(out, "sim stats: %s: %llu CTAs, %llu warps\n", entry, (unsigned long long)s->ctas, (unsigned long long)s->warps);
    fprintf(out, "  warp instructions: %llu (average active lanes %.1f)\n", (unsigned long long)wt,
            wt ? (double)lt / (double)wt : 0.0);
    for (int c = 0; c < CL_COUNT; c++)
        if (s->warp_insns[c])
            fprintf(out, "    %-18s %12llu  %5.1f%%\n", isa_class_name(c), (unsigned long long)s->warp_insns[c],
                    100.0 * (double)s->warp_insns[c] / (double)wt);
    uint64_t extra = s->smem_wavefronts - s->smem_ideal;
    fprintf(out, "  shared memory: %llu requests, %llu wavefronts, ideal %llu, bank-conflict wavefronts %llu (%.1f%%)\n",
            (unsigned long long)s->smem_requests, (unsigned long long)s->smem_wavefronts,
            (unsigned long long)s->smem_ideal, (unsigned long long)extra,
            s->smem_wavefronts ? 100.0 * (double)extra / (double)s->smem_wavefronts : 0.0);
    /* lanes asking for the same bytes share sectors, so the ratio can pass 1 */
    fprintf(out, "  global memory: %llu requests, %llu sectors of 32 B, %llu B requested by lanes (%.2f B per sector byte)\n",
            (unsigned long long)s->gmem_requests, (unsigned long long)s->gmem_sectors, (unsigned long long)s->gmem_bytes,
            s->gmem_sectors ? (double)s->gmem_bytes / (32.0 * (double)s->gmem_sectors) : 0.0);
}
