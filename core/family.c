#include "family.h"
#include <stdio.h>
#include <string.h>

const Family family_order[NFAMILIES] = {FAM_TCGEN05, FAM_WGMMA, FAM_MMA_SYNC};

static const struct { Family f; const char *name, *flag; } families[NFAMILIES] = {
    {FAM_MMA_SYNC, "mma.sync", "sync"},
    {FAM_WGMMA, "wgmma", "wgmma"},
    {FAM_TCGEN05, "tcgen05", "tcgen05"},
};

const char *family_name(Family f) {
    for (int i = 0; i < NFAMILIES; i++)
        if (families[i].f == f) return families[i].name;
    return "(no family)";
}

const char *family_flag(Family f) {
    for (int i = 0; i < NFAMILIES; i++)
        if (families[i].f == f) return families[i].flag;
    return "auto";
}

int family_parse(const char *text, unsigned *fam, char *err, size_t errlen) {
    *fam = FAM_AUTO;
    if (!text || !strcmp(text, "auto")) return 0;
    for (int i = 0; i < NFAMILIES; i++)
        if (!strcmp(text, families[i].flag) || !strcmp(text, families[i].name)) {
            *fam = families[i].f;
            return 0;
        }
    snprintf(err, errlen, "unknown MMA family '%s' (auto, sync, wgmma or tcgen05)", text);
    return 2;
}

/* Oldest first reads naturally: "mma.sync and wgmma". */
void family_list(unsigned fams, Buf *out) {
    int n = 0, total = 0;
    for (int i = 0; i < NFAMILIES; i++) total += (fams & families[i].f) != 0;
    for (int i = 0; i < NFAMILIES; i++) {
        if (!(fams & families[i].f)) continue;
        n++;
        buf_printf(out, "%s%s", n == 1 ? "" : n == total ? " and " : ", ", families[i].name);
    }
}

Family family_newest(unsigned fams) {
    for (int i = 0; i < NFAMILIES; i++)
        if (fams & family_order[i]) return family_order[i];
    return 0;
}
