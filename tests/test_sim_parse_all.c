/* Every set ptxgen builds, loaded on the sim device, which reads the whole module at load and checks each line's
 * modifiers and operands (emit/isa.def, runner/sim/sim_form.c): valid PTX of ours that the sim would refuse shows
 * here, set by set, without running it. The sets: each arch x family x attention kernel x head dim x causal x dtype
 * x a few tile keys x dense, varlen, block-sparse, paged and split-KV; each arch x family x MLA kernel x dtype x
 * tile. What a request does not build is left out (the emit tests hold the refusals). */
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "ptxgen.h"

static int built, refused;

static void load(ptxgen_device *dev, const ptxgen_request *rq, const char *what) {
    char err[4096];
    ptxgen_set *s;
    ptxgen_loaded *l;
    if (ptxgen_build(rq, &s, err, sizeof err)) return;
    built++;
    if (ptxgen_load(dev, s, &l, err, sizeof err)) {
        refused++;
        check(0, what, "the sim refuses the set: %.400s", err);
    } else ptxgen_unload(l);
    ptxgen_free(s);
}

int main(void) {
    static const char *const archs[] = {"sm_80", "sm_90", "sm_90a", "sm_100a", "sm_103a", "sm_120"};
    static const char *const fams[] = {"sync", "wgmma", "tcgen05"};
    static const char *const tiles[] = {"", "deterministic=1", "persist=0", "pingpong=0", "producer=1", "dqbufs=2",
                                        "qtiles=2", "ctas=2"};
    static const char *const mla_tiles[] = {"", "deterministic=1", "bm=32", "bm=16,bn=32", "bm=16"};
    static const char *const feats[] = {"dense", "varlen", "block-sparse", "paged", "split-KV"};
    ptxgen_device *dev;
    char err[1024], what[256];
    if (ptxgen_device_open("sim", &dev, err, sizeof err)) {
        check(0, "sim device", "%s", err);
        return check_summary();
    }
    for (int a = 0; a < 6; a++)
        for (int f = 0; f < 3; f++) {
            for (int k = 0; k < 2; k++)
                for (int d = 64; d <= 256; d *= 2)
                    for (int c = 0; c < 2; c++)
                        for (int t = 0; t < 2; t++)
                            for (int ti = 0; ti < (int)(sizeof tiles / sizeof *tiles); ti++)
                                for (int x = 0; x < 5; x++) {
                                    if (k && x >= 3) continue;   /* paged and split-KV: the forward's */
                                    ptxgen_request rq = {.arch = archs[a], .kernel = k ? "attn_bwd" : "attn_fwd",
                                                         .family = fams[f], .hdim = d, .causal = c,
                                                         .dtype = t ? "fp16" : "bf16", .tile = tiles[ti], .varlen = x == 1,
                                                         .block_m = x == 2 ? 128 : 0, .block_n = x == 2 ? 128 : 0,
                                                         .page_size = x == 3 ? 128 : 0, .splitkv = x == 4};
                                    snprintf(what, sizeof what, "%s %s %s d%d%s %s tile '%s' %s", archs[a], rq.kernel,
                                             fams[f], d, c ? " causal" : "", rq.dtype, tiles[ti], feats[x]);
                                    load(dev, &rq, what);
                                }
            for (int k = 0; k < 2; k++)
                for (int t = 0; t < 2; t++)
                    for (int ti = 0; ti < (int)(sizeof mla_tiles / sizeof *mla_tiles); ti++) {
                        ptxgen_request rq = {.arch = archs[a], .kernel = k ? "mla_bwd" : "mla_fwd", .family = fams[f],
                                             .dtype = t ? "fp16" : "bf16", .tile = mla_tiles[ti]};
                        snprintf(what, sizeof what, "%s %s %s %s tile '%s'", archs[a], rq.kernel, fams[f], rq.dtype,
                                 mla_tiles[ti]);
                        load(dev, &rq, what);
                    }
        }
    /* a floor, so that a build that stopped building most sets cannot pass by loading none */
    check(built > 1000 && !refused, "every set ptxgen builds loads on the sim", "%d built, %d refused", built, refused);
    ptxgen_device_close(dev);
    return check_summary();
}
