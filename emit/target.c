#include "target.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "isa.h"

/* arch-specific ("a") instructions exist only on targets of their own
 * generation: wgmma (sm_90a) is not on sm_100a, tcgen05 (sm_100a) is on sm_103a;
 * a few (arch_specific 2: setmaxnreg) are on every later 'a' target too. */
static const char *lacks(const ArchInfo *a, int sm, int arch_specific)
{
    static const char *why[] = {"a later arch", "an arch-specific target (sm_XXa)", "the same arch generation"};
    size_t n = strlen(a->name);
    if (a->sm < sm) return why[0];
    if (arch_specific && a->name[n - 1] != 'a') return why[1];
    if (arch_specific == 1 && a->sm / 10 != sm / 10) return why[2];
    return NULL;
}

int emit_target_check(const char *body, const ArchInfo *a, char version[16], char *err, size_t errlen)
{
    int need = (int)(atof(a->ptx_version) * 10 + 0.5);
    for (const char *p = body; p && *p;) {
        const char *eol = strchr(p, '\n'), *q = p;
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        while (q < p + len && isspace((unsigned char)*q)) q++;
        if (*q == '@')   /* a guard: the mnemonic follows it */
            while (q < p + len && !isspace((unsigned char)*q)) q++;
        while (q < p + len && isspace((unsigned char)*q)) q++;
        /* instructions start with a letter; directives, labels, comments and braces do not */
        if (q < p + len && isalpha((unsigned char)*q) && memchr(q, ';', (size_t)(p + len - q))) {
            char mn[128];
            size_t k = 0;
            while (q + k < p + len && !isspace((unsigned char)q[k]) && q[k] != ';' && k < sizeof mn - 1) k++;
            memcpy(mn, q, k), mn[k] = 0;
            IsaInsn in;
            char why[160];
            if (isa_decode(mn, &in, why, sizeof why)) {
                snprintf(err, errlen, "ptxgen internal: emitted %s, which the ISA table does not know (%s)", mn, why);
                return -1;
            }
            int sm, arch_specific, ptx;
            isa_needs(&in, &sm, &arch_specific, &ptx);
            const char *miss = lacks(a, sm, arch_specific);
            if (miss) {
                snprintf(err, errlen, "ptxgen internal: emitted %s for %s, but it needs sm_%d%s (%s)", mn, a->name, sm,
                         arch_specific ? "a" : "", miss);
                return -1;
            }
            if (ptx > need) need = ptx;
        }
        p = eol ? eol + 1 : NULL;
    }
    snprintf(version, 16, "%d.%d", need / 10, need % 10);
    return 0;
}
