#include "arch.h"
#include <string.h>

/* Shared-memory opt-in limits: sm_80 163 KB, sm_86/89/120 99 KB (101,376 B),
 * sm_90/100/103 227 KB (232,448 B); 1 KB per block reserved by the system.
 * sm_100 and sm_103 (no 'a') have the limits of sm_100a/sm_103a but neither
 * TMEM nor tcgen05: those need the arch-specific targets (PTX_FACTS 1.3).
 * Clusters: none before sm_90; 16 CTAs with the non-portable opt-in on
 * sm_90/sm_100/sm_103 (8 portable), 8 on sm_120. */
static const ArchInfo arches[] = {
    {"sm_80", 80, "7.0", 166912, 167936, 1024, 65536, 255, 2048, 32, 0, FAM_MMA_SYNC, 0, 1},
    {"sm_86", 86, "7.1", 101376, 102400, 1024, 65536, 255, 1536, 16, 0, FAM_MMA_SYNC, 0, 1},
    {"sm_89", 89, "7.8", 101376, 102400, 1024, 65536, 255, 1536, 24, 0, FAM_MMA_SYNC, 0, 1},
    {"sm_90", 90, "7.8", 232448, 233472, 1024, 65536, 255, 2048, 32, 0, FAM_MMA_SYNC, 1, 16},
    {"sm_90a", 90, "8.0", 232448, 233472, 1024, 65536, 255, 2048, 32, 0, FAM_MMA_SYNC | FAM_WGMMA, 1, 16},
    {"sm_100", 100, "8.6", 232448, 233472, 1024, 65536, 255, 2048, 32, 0, FAM_MMA_SYNC, 1, 16},
    {"sm_100a", 100, "8.6", 232448, 233472, 1024, 65536, 255, 2048, 32, 512, FAM_MMA_SYNC | FAM_TCGEN05, 1, 16},
    {"sm_103", 103, "8.8", 232448, 233472, 1024, 65536, 255, 2048, 32, 0, FAM_MMA_SYNC, 1, 16},
    {"sm_103a", 103, "8.8", 232448, 233472, 1024, 65536, 255, 2048, 32, 512, FAM_MMA_SYNC | FAM_TCGEN05, 1, 16},
    {"sm_120", 120, "8.7", 101376, 102400, 1024, 65536, 255, 1536, 32, 0, FAM_MMA_SYNC, 1, 8},
    {"sm_120a", 120, "8.7", 101376, 102400, 1024, 65536, 255, 1536, 32, 0, FAM_MMA_SYNC, 1, 8},
};

int arch_count(void) { return (int)(sizeof arches / sizeof arches[0]); }
const ArchInfo *arch_at(int i) { return &arches[i]; }

const ArchInfo *arch_find(const char *name) {
    for (int i = 0; i < arch_count(); i++)
        if (!strcmp(arches[i].name, name)) return &arches[i];
    return NULL;
}

void arch_names_with(unsigned fams, Buf *out) {
    int total = 0, n = 0;
    for (int i = 0; i < arch_count(); i++) total += (arches[i].families & fams) == fams;
    for (int i = 0; i < arch_count(); i++) {
        if ((arches[i].families & fams) != fams) continue;
        n++;
        buf_printf(out, "%s%s", n == 1 ? "" : n == total ? " or " : ", ", arches[i].name);
    }
}
