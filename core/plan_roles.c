/* The plan's warp roles: the registers each asks for with setmaxnreg,
 * checked against the CTA's warps and the SM's register file, and printed. */
#include "plan.h"
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

void plan_add_role(Plan *p, const char *name, int warps, int regs) {
    if (p->nroles >= MAX_ROLES) {
        fprintf(stderr, "ptxgen internal: more than %d warp roles\n", MAX_ROLES);
        abort();
    }
    p->role[p->nroles++] = (RoleRegs){name, warps, regs};
}

int plan_role_regs(const Plan *p, const char *name) {
    for (int i = 0; i < p->nroles; i++)
        if (!strcmp(p->role[i].name, name)) return p->role[i].regs;
    return 0;
}

/* A role without setmaxnreg keeps what ptxas gives every thread: the estimate. */
static int role_regs(const Plan *p, const RoleRegs *r) { return r->regs ? r->regs : p->regs_est; }

static int roles_registers(const Plan *p) {
    int n = 0;
    for (int i = 0; i < p->nroles; i++) n += p->role[i].warps * 32 * role_regs(p, &p->role[i]);
    return n;
}

int plan_roles_setmaxnreg(const Plan *p) {
    for (int i = 0; i < p->nroles; i++)
        if (!p->role[i].regs) return 0;
    return p->nroles ? roles_registers(p) : 0;
}

int plan_launch_regs(const ArchInfo *a, int threads) {
    int r = threads > 0 ? a->regs_sm / threads : 0;
    if (r > 255) r = 255;
    return r - r % 8;
}

int plan_share_regs(const ArchInfo *a, int threads, int producer_warps, int producer_regs, int groups) {
    int pool = plan_launch_regs(a, threads) * threads, r = (pool - producer_warps * 32 * producer_regs) / (128 * groups);
    if (r > 256) r = 256;
    return r - r % 8;
}

/* setmaxnreg takes a multiple of 8 in [24, 256] (PTX ISA, setmaxnreg). */
static int bad_setmaxnreg(int regs) { return regs && (regs < 24 || regs > 256 || regs % 8); }

int plan_roles_check(const Plan *p, const ArchInfo *a, char *verdict, size_t len) {
    int warps = 0;
    for (int i = 0; i < p->nroles; i++) {
        const RoleRegs *r = &p->role[i];
        warps += r->warps;
        if (bad_setmaxnreg(r->regs)) {
            snprintf(verdict, len, "%s: role %s asks setmaxnreg %d; it takes a multiple of 8 in [24, 256]", p->what,
                     r->name, r->regs);
            return 1;
        }
    }
    if (p->nroles && warps * 32 != p->threads) {
        snprintf(verdict, len, "%s: its roles have %d warps, its CTA %d threads (%d warps)", p->what, warps, p->threads,
                 (p->threads + 31) / 32);
        return 1;
    }
    int share = plan_launch_regs(a, p->threads);
    if (plan_roles_setmaxnreg(p) > share * p->threads) {
        snprintf(verdict, len, "%s: its roles ask %d registers per CTA (setmaxnreg x threads); the CTA holds %d x %d "
                 "= %d from its launch, and setmaxnreg only moves those between its warps (a larger .inc never returns)",
                 p->what, roles_registers(p), share, p->threads, share * p->threads);
        return 1;
    }
    if (roles_registers(p) > a->regs_sm) {
        snprintf(verdict, len, "%s: its roles ask %d registers per CTA (setmaxnreg x threads); %s has %d per SM",
                 p->what, roles_registers(p), a->name, a->regs_sm);
        return 1;
    }
    return 0;
}

void plan_roles_print(const Plan *p, const ArchInfo *a, Buf *out) {
    if (!p->nroles) return;
    buf_printf(out, "registers per warp role (setmaxnreg):\n");
    buf_printf(out, "  %-10s %6s %12s %10s\n", "role", "warps", "regs/thread", "registers");
    for (int i = 0; i < p->nroles; i++) {
        const RoleRegs *r = &p->role[i];
        buf_printf(out, "  %-10s %6d %12d %10d%s\n", r->name, r->warps, role_regs(p, r), r->warps * 32 * role_regs(p, r),
                   r->regs ? "" : "  (no setmaxnreg: the estimate)");
    }
    int share = plan_launch_regs(a, p->threads);
    if (plan_roles_setmaxnreg(p))
        buf_printf(out, "  %-10s %6s %12s %10d  of the %d the CTA holds from its launch (%d x %d threads), which "
                   "setmaxnreg moves between warps\n", "total", "", "", roles_registers(p), share * p->threads, share,
                   p->threads);
    else
        buf_printf(out, "  %-10s %6s %12s %10d  of %d per SM on %s\n", "total", "", "", roles_registers(p), a->regs_sm,
                   a->name);
}
