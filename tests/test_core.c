/* Unit tests of core/ pieces the kernels do not use yet, with the expected
 * text written out here: the plan's TMEM column map (seed 001's mla_bwd map
 * on sm_100a) and its per-role registers, the MMA families and how a request
 * picks one, and the manifest of a kernel spec with a made-up tensor map. One line per check, then
 * "N passed, N failed". */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plan.h"
#include "ptxgen.h"
#include "manifest.h"

static void check_text(const char *name, const char *got, const char *want) {
    check(got && !strcmp(got, want), name, "got\n%s\nwant\n%s", got ? got : "(null)", want);
}

/* Seed 001: sm_100a mla_bwd, D_QK 576, B_H 128, B_TOPK 32; dKV_RoPE and dP
 * share columns 352-367, the map fills all 512 columns. */
static Plan seed001_tmem(void) {
    Plan p = {.threads = 384, .regs_est = 128};
    plan_add_tmem(&p, "dQ", 256, "fp32", "[64, 512]", "dq nope accumulator");
    plan_add_tmem(&p, "dQ_RoPE", 32, "fp32", "[64, 64]", "dq rope accumulator");
    plan_add_tmem(&p, "dKV", 64, "fp32", "[32, 256]", "dkv nope, part 0 then 1");
    int rope = p.ntmem;
    plan_add_tmem(&p, "dKV_RoPE", 16, "fp32", "[32, 64]", "dkv rope");
    plan_alias_tmem(&p, "dP", rope, 16, "fp32", "[64, 32]", "dP of the step");
    plan_add_tmem(&p, "P", 16, "fp32", "[64, 32]", "P of the step");
    plan_add_tmem(&p, "dO", 128, "bf16", "[64, 512]", NULL);
    return p;
}

static void test_tmem_map(void) {
    Plan p = seed001_tmem();
    int starts[] = {0, 256, 288, 352, 352, 368, 384}, ok = p.ntmem == 7;
    for (int i = 0; ok && i < 7; i++) ok = p.tmem[i].col == starts[i];
    check(ok, "tmem map: seed 001's start columns", "ntmem %d, dO at %d", p.ntmem, p.tmem[p.ntmem - 1].col);
    check(p.tmem_cols == 512 && plan_tmem_alloc(&p) == 512, "tmem map spans 512 columns, allocates 512",
          "cols %d alloc %d", p.tmem_cols, plan_tmem_alloc(&p));
    check(p.tmem[3].alias == 1 && p.tmem[4].alias == 1 && !p.tmem[5].alias, "tmem alias group joins dKV_RoPE and dP",
          "groups %d %d %d", p.tmem[3].alias, p.tmem[4].alias, p.tmem[5].alias);
    Plan small = {0};
    plan_add_tmem(&small, "S", 40, "fp32", "[128, 40]", NULL);
    check(plan_tmem_alloc(&small) == 64, "tmem alloc rounds 40 columns to 64", "got %d", plan_tmem_alloc(&small));
    check(plan_tmem_alloc(&(Plan){0}) == 0, "tmem alloc of no map is 0", "got %d", plan_tmem_alloc(&(Plan){0}));

    Buf b = {0};
    plan_tmem_print(&p, arch_find("sm_100a"), &b);
    check_text("tmem map printed", b.s,
               "tensor memory (TMEM: 128 lanes x 32-bit columns) on sm_100a:\n"
               "  region      start    end   cols  dtype  shape        phase\n"
               "  dQ              0    256    256  fp32   [64, 512]    dq nope accumulator\n"
               "  dQ_RoPE       256    288     32  fp32   [64, 64]     dq rope accumulator\n"
               "  dKV           288    352     64  fp32   [32, 256]    dkv nope, part 0 then 1\n"
               "  dKV_RoPE      352    368     16  fp32   [32, 64]     dkv rope [alias group 1]\n"
               "  dP            352    368     16  fp32   [64, 32]     dP of the step [alias group 1]\n"
               "  P             368    384     16  fp32   [64, 32]     P of the step\n"
               "  dO            384    512    128  bf16   [64, 512]    \n"
               "column aliases:\n"
               "  dP shares columns [352, 368) with dKV_RoPE in another phase: 16 columns saved\n"
               "  total                       512  100.0% of the 512 columns a CTA may allocate on sm_100a; "
               "tcgen05.alloc of 512\n");
    buf_free(&b);
}

static void test_tmem_verdicts(void) {
    Plan p = seed001_tmem();
    plan_finish(&p, arch_find("sm_100a"), "seed 001");
    check(p.ok && strstr(p.verdict, "512 TMEM columns of 512"), "tmem map fits sm_100a", "verdict '%s'", p.verdict);

    p = seed001_tmem();
    plan_finish(&p, arch_find("sm_90a"), "seed 001");
    check_text("tmem map refused on sm_90a, naming the first region", p.verdict,
               "seed 001 needs 512 TMEM columns (region dQ at columns 0-255 first); sm_90a has no TMEM, "
               "which needs sm_100a or sm_103a");

    p = seed001_tmem();
    plan_add_tmem(&p, "extra", 32, "fp32", "[128, 32]", NULL);
    plan_finish(&p, arch_find("sm_100a"), "seed 001 + 32");
    check_text("tmem map over 512 columns refused, naming the region", p.verdict,
               "seed 001 + 32 needs 544 TMEM columns: region extra at columns 512-543 ends past the 512 columns "
               "sm_100a has per CTA");

    Buf b = {0};
    p = seed001_tmem();
    plan_finish(&p, arch_find("sm_100a"), "seed 001");
    plan_print(&p, arch_find("sm_100a"), &b);
    check(b.s && strstr(b.s, "tensor memory (TMEM") && strstr(b.s, "\n  dO  "), "plan_print shows a non-empty tmem map",
          "got '%s'", b.s ? b.s : "");
    buf_free(&b);
    Plan none = {.threads = 128, .regs_est = 64};
    plan_finish(&none, arch_find("sm_100a"), "no map");
    plan_print(&none, arch_find("sm_100a"), &b);
    check(b.s && !strstr(b.s, "TMEM") && !strstr(b.s, "role"), "plan_print leaves out an empty map and roles",
          "got '%s'", b.s ? b.s : "");
    buf_free(&b);
}

static Plan roles_plan(int producer_regs) {
    Plan p = {.threads = 384, .regs_est = 168};
    plan_add_role(&p, "producer", 4, producer_regs);
    plan_add_role(&p, "consumer", 8, 232);
    return p;
}

static void test_roles(void) {
    Buf b = {0};
    Plan p = roles_plan(40);
    plan_roles_print(&p, arch_find("sm_90a"), &b);
    check_text("roles printed", b.s,
               "registers per warp role (setmaxnreg):\n"
               "  role        warps  regs/thread  registers\n"
               "  producer        4           40       5120\n"
               "  consumer        8          232      59392\n"
               "  total                               64512  of the 64512 the CTA holds from its launch (168 x 384 threads), "
               "which setmaxnreg moves between warps\n");
    buf_free(&b);
    /* setmaxnreg only moves the registers a CTA got at launch: 48 + 2 x 232 per 128 threads is 512 of the 504
     * that 384 threads of 168 hold (the H200 hangs in the consumers' setmaxnreg.inc) */
    p = roles_plan(48);
    char why[256] = "";
    check(plan_roles_check(&p, arch_find("sm_90a"), why, sizeof why) && strstr(why, "the CTA holds 168 x 384 = 64512"),
          "roles past the launch's register pool are refused", "got '%s'", why);
    check(plan_share_regs(arch_find("sm_90a"), 384, 4, 40, 2) == 232 && plan_share_regs(arch_find("sm_90a"), 384, 4, 56, 2) == 224 &&
              plan_launch_regs(arch_find("sm_90a"), 384) == 168 && plan_launch_regs(arch_find("sm_90a"), 128) == 248,
          "the launch pool and the consumers' share of it", "wrong");
    p = roles_plan(0);
    plan_roles_print(&p, arch_find("sm_90a"), &b);
    check(b.s && strstr(b.s, "  producer        4          168      21504  (no setmaxnreg: the estimate)\n"),
          "a role without setmaxnreg counts the estimate", "got '%s'", b.s ? b.s : "");
    buf_free(&b);

    p = roles_plan(40);
    plan_finish(&p, arch_find("sm_90a"), "ws");
    check(p.ok, "roles within the register file fit", "verdict '%s'", p.verdict);
    p = roles_plan(0);
    plan_finish(&p, arch_find("sm_90a"), "ws");
    check_text("roles over the register file refused", p.verdict,
               "ws: its roles ask 80896 registers per CTA (setmaxnreg x threads); sm_90a has 65536 per SM");
    p = roles_plan(44);
    plan_finish(&p, arch_find("sm_90a"), "ws");
    check_text("setmaxnreg not a multiple of 8 refused", p.verdict,
               "ws: role producer asks setmaxnreg 44; it takes a multiple of 8 in [24, 256]");
    p = roles_plan(40);
    p.threads = 256;
    plan_finish(&p, arch_find("sm_90a"), "ws");
    check_text("roles that miss the CTA's warps refused", p.verdict, "ws: its roles have 12 warps, its CTA 256 threads (8 warps)");
}

static void test_families(void) {
    unsigned f = 99;
    char err[200] = "", note[200] = "x";
    check(!family_parse(NULL, &f, err, sizeof err) && f == FAM_AUTO, "family_parse NULL is auto", "got %u", f);
    check(!family_parse("sync", &f, err, sizeof err) && f == FAM_MMA_SYNC, "family_parse sync", "got %u", f);
    check(!family_parse("mma.sync", &f, err, sizeof err) && f == FAM_MMA_SYNC, "family_parse mma.sync", "got %u", f);
    check(family_parse("wmma", &f, err, sizeof err) == 2, "family_parse refuses wmma", "err '%s'", err);
    check_text("family_parse names the values", err, "unknown MMA family 'wmma' (auto, sync, wgmma or tcgen05)");
    Buf b = {0};
    family_list(FAM_MMA_SYNC | FAM_WGMMA | FAM_TCGEN05, &b);
    check_text("family_list of three", b.s, "mma.sync, wgmma and tcgen05");
    buf_free(&b);
    arch_names_with(FAM_TCGEN05, &b);
    check_text("archs with tcgen05, from the table", b.s, "sm_100a or sm_103a");
    buf_free(&b);
    check(family_newest(FAM_MMA_SYNC | FAM_TCGEN05) == FAM_TCGEN05, "family_newest prefers tcgen05", "wrong");

    const char *fam = NULL;
    ptxgen_request rq = {.arch = "sm_100a", .kernel = "mla_fwd"};
    int rc = ptxgen_pick_family(&rq, &fam, note, sizeof note, err, sizeof err);
    check(!rc && fam && !strcmp(fam, "tcgen05") && !*note, "pick auto on sm_100a: tcgen05, no note", "rc %d err '%s'", rc, err);
    rq.arch = "sm_80";
    rc = ptxgen_pick_family(&rq, &fam, note, sizeof note, err, sizeof err);
    check(!rc && !*note, "pick auto on sm_80: no note", "rc %d note '%s'", rc, note);
    rq = (ptxgen_request){.arch = "sm_120", .kernel = "attn_fwd", .family = "tcgen05"};
    rc = ptxgen_pick_family(&rq, &fam, note, sizeof note, err, sizeof err);
    check(rc == 2, "pick tcgen05 on sm_120 refused", "rc %d", rc);
    check_text("pick tcgen05 on sm_120 names what the arch has", err,
               "sm_120 has mma.sync only; tcgen05 needs sm_100a or sm_103a");
    rq.arch = "sm_103a";
    rq.kernel = "mla_fwd";
    rc = ptxgen_pick_family(&rq, &fam, note, sizeof note, err, sizeof err);
    check(!rc && fam && !strcmp(fam, "tcgen05"), "pick tcgen05 for mla_fwd on sm_103a", "rc %d err '%s'", rc, err);
    rq.kernel = "attn_fwd";
    rc = ptxgen_pick_family(&rq, &fam, note, sizeof note, err, sizeof err);
    check(!rc && fam && !strcmp(fam, "tcgen05") && !*note, "pick tcgen05 for attn_fwd on sm_103a", "rc %d err '%s'", rc, err);

    ptxgen_kind k;
    /* four kernels, each in mma.sync, wgmma and tcgen05 */
    int n = ptxgen_num_kinds(), ok = n == 12, tc = 0, wg = 0;
    for (int i = 0; ok && i < n; i++) {
        ok = !ptxgen_kind_info(i, &k);
        if (ok && strcmp(k.family, "mma.sync")) {
            tc += !strcmp(k.family, "tcgen05");
            wg += !strcmp(k.family, "wgmma");
        } else ok = ok && !strcmp(k.family, "mma.sync");
    }
    check(ok && tc == 4 && wg == 4, "kind table: four kernels, each in mma.sync, wgmma and tcgen05",
          "%d kinds, %d tcgen05, %d wgmma", n, tc, wg);
    check(ptxgen_kind_on_arch(0, "sm_100") && !ptxgen_kind_on_arch(0, "sm_99") && !ptxgen_kind_on_arch(11, "sm_90"),
          "ptxgen_kind_on_arch", "wrong");
}

/* A made-up kernel that loads Q by TMA: the manifest carries its tensor map,
 * a 2-CTA cluster, and the sizes its expressions use (h_q from the size
 * parameter, b from the grid, s_q from the tensor map). */
static void made_up_set(KernelSet *s) {
    static const ArchInfo *a;
    a = arch_find("sm_100a");
    *s = (KernelSet){.kernel = "tma_demo", .arch = a, .family = FAM_TCGEN05, .summary = "demo", .nk = 1};
    KernelSpec *k = &s->k[0];
    *k = (KernelSpec){.entry = "tma_demo_bf16", .block = {128, 1, 1}, .dyn_smem = 1024, .nparams = 2, .ntmaps = 1,
                      .grid = {"cdiv(s_q, 128)", "h_q", "b"}, .cluster = {"2", "", ""}};
    k->params[0] = (ParamSpec){"q_map", PT_PTR, PR_IN, "tensor map of q", NULL, NULL, NULL, NULL};
    k->params[1] = (ParamSpec){"h_q", PT_U32, PR_SIZE, "problem size", NULL, NULL, "h_q", NULL};
    k->tmaps[0] = (TensorMapSpec){"q_map", "q", "bf16", 3, {"576", "h_q", "b * s_q"}, {"1152", "h_q * 1152"},
                                  {64, 64, 1}, {1, 1, 1}, "128B", "none", "zero"};
}

static void test_manifest_tensor_map(void) {
    KernelSet s;
    made_up_set(&s);
    Buf b = {0};
    manifest_write(&s, "{}", &b);
    check_text("manifest of a kernel with a tensor map", b.s,
               "{\n  \"generator\": \"ptxgen\",\n  \"kernel\": \"tma_demo\",\n  \"arch\": \"sm_100a\",\n"
               "  \"family\": \"tcgen05\",\n  \"summary\": \"demo\",\n  \"constants\": {},\n"
               "  \"problem_sizes\": [\"h_q\", \"s_q\", \"b\"],\n"
               "  \"expression_ops\": [\"+\", \"-\", \"*\", \"/\", \"cdiv\", \"min\", \"max\"],\n"
               "  \"launch_order\": \"kernels are launched in the order listed, on one stream\",\n  \"kernels\": [\n"
               "    {\n      \"entry\": \"tma_demo_bf16\",\n      \"params\": [\n"
               "        {\"name\": \"q_map\", \"ptx_type\": \".u64\", \"role\": \"input\", \"meaning\": \"tensor map of q\"},\n"
               "        {\"name\": \"h_q\", \"ptx_type\": \".u32\", \"role\": \"size\", \"meaning\": \"problem size\", "
               "\"size\": \"h_q\"}\n"
               "      ],\n      \"block\": [128, 1, 1],\n      \"grid\": [\"cdiv(s_q, 128)\", \"h_q\", \"b\"],\n"
               "      \"cluster\": [\"2\", \"1\", \"1\"],\n      \"tensor_maps\": [\n"
               "        {\"param\": \"q_map\", \"tensor\": \"q\", \"dtype\": \"bf16\", \"rank\": 3, "
               "\"dims\": [\"576\", \"h_q\", \"b * s_q\"], \"strides_bytes\": [\"1152\", \"h_q * 1152\"], "
               "\"box\": [64, 64, 1], \"element_strides\": [1, 1, 1], \"swizzle\": \"128B\", "
               "\"interleave\": \"none\", \"oob_fill\": \"zero\"}\n"
               "      ],\n      \"dynamic_smem_bytes\": 1024\n    }\n  ],\n  \"workspaces\": []\n}\n");
    buf_free(&b);
}

/* The built sets: sizes from their descriptions, cluster 1, no tensor maps. */
static void test_api_sizes(void) {
    const char *want[2][6] = {{"attn_fwd", "s_q", "s_k", "h_q", "h_kv", "b"}, {"mla_bwd", "s_q", "h_q", "s_kv", "topk"}};
    for (int w = 0; w < 2; w++) {
        ptxgen_request rq = {.arch = "sm_90", .kernel = want[w][0]};
        ptxgen_set *s = NULL;
        char err[512] = "", got[128] = "", exp[128] = "";
        if (ptxgen_build(&rq, &s, err, sizeof err)) { check(0, "api build for sizes", "%s", err); continue; }
        for (int i = 0; i < ptxgen_num_problem_sizes(s); i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s ", ptxgen_problem_size(s, i));
        for (int i = 1; i < 6 && want[w][i]; i++) snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s ", want[w][i]);
        check_text(w ? "mla_bwd problem sizes" : "attn_fwd problem sizes", got, exp);
        ptxgen_size sizes[] = {{"b", 1}, {"s_q", 64}, {"s_k", 64}, {"h_q", 2}, {"h_kv", 1}, {"s_kv", 64}, {"topk", 32}};
        unsigned cl[3] = {0};
        int rc = ptxgen_cluster_dims(s, 0, sizes, 7, cl, err, sizeof err);
        check(!rc && cl[0] == 1 && cl[1] == 1 && cl[2] == 1, "cluster dims 1 x 1 x 1", "rc %d %u %u %u", rc, cl[0], cl[1], cl[2]);
        ptxgen_tensor_map tm;
        check(ptxgen_num_tensor_maps(s, 0) == 0 && ptxgen_tensor_map_info(s, 0, 0, &tm) == 2, "no tensor maps (mma.sync)",
              "%d maps", ptxgen_num_tensor_maps(s, 0));
        check_text("the set's family", ptxgen_family(s), "mma.sync");
        ptxgen_free(s);
    }
}

/* Programmatic dependents, on sm_90 and later (none before: no griddepcontrol): every kernel of a set after its first
 * (the backward sets of every family, a block-sparse set's kernels after its list kernels, split-KV's combine), each
 * launched as the CTAs before it exit, but for the block-sparse wgmma attn_fwd, whose key-list kernel triggers its
 * main kernel as it starts. Per set the flags, the manifest's field, the triggers, and in each dependent the wait
 * before its first memory access; a single kernel has none. */
static void test_programmatic_dependent(void) {
    static const struct {
        const char *arch, *kernel, *family, *tile;
        int hdim, sparse, want, trig;   /* sparse 1: mask blocks of 128; 2: split-KV. want, trig: the masks of
                                         * dependents and of kernels that trigger theirs early */
    } cases[] = {
        {"sm_90a", "attn_fwd", "wgmma", NULL, 128, 0, 0, 0},    {"sm_90a", "attn_fwd", "sync", NULL, 128, 0, 0, 0},
        {"sm_90a", "attn_fwd", "wgmma", NULL, 128, 1, 2, 1},    {"sm_90a", "attn_fwd", "sync", NULL, 128, 1, 2, 0},
        {"sm_100a", "attn_fwd", "tcgen05", NULL, 128, 1, 2, 0}, {"sm_86", "attn_fwd", "sync", NULL, 128, 1, 0, 0},
        {"sm_90a", "attn_fwd", "wgmma", NULL, 128, 2, 2, 0},    {"sm_120", "attn_fwd", "sync", NULL, 128, 2, 2, 0},
        {"sm_80", "attn_fwd", "sync", NULL, 128, 2, 0, 0},
        {"sm_90a", "attn_bwd", "wgmma", NULL, 128, 0, 6, 0},    {"sm_90a", "attn_bwd", "wgmma", NULL, 128, 1, 14, 0},
        {"sm_90a", "attn_bwd", "wgmma", "deterministic=1", 64, 0, 6, 0},
        {"sm_90a", "attn_bwd", "wgmma", "deterministic=1", 256, 0, 6, 0},
        {"sm_90a", "attn_bwd", "wgmma", "bm=64,bn=128,dsplit=2,deterministic=1", 128, 0, 6, 0},   /* the dQ kernel */
        {"sm_90", "attn_bwd", "sync", NULL, 128, 0, 6, 0},      {"sm_90", "attn_bwd", "sync", NULL, 64, 1, 30, 0},
        {"sm_120", "attn_bwd", "sync", "deterministic=0", 64, 0, 6, 0},
        {"sm_100a", "attn_bwd", "tcgen05", NULL, 128, 0, 6, 0},
        {"sm_80", "attn_bwd", "sync", NULL, 128, 0, 0, 0},      {"sm_89", "attn_bwd", "sync", NULL, 64, 1, 0, 0},
        {"sm_90a", "mla_bwd", "wgmma", NULL, 576, 0, 6, 0},     {"sm_90a", "mla_bwd", "wgmma", "deterministic=1", 576, 0, 6, 0},
        {"sm_90", "mla_bwd", "sync", NULL, 576, 0, 6, 0},       {"sm_100a", "mla_bwd", "tcgen05", NULL, 576, 0, 14, 0},
        {"sm_100a", "mla_bwd", "tcgen05", "bm=32", 576, 0, 6, 0},   {"sm_80", "mla_bwd", "sync", NULL, 576, 0, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ptxgen_request rq = {.arch = cases[c].arch, .kernel = cases[c].kernel, .family = cases[c].family,
                             .hdim = cases[c].hdim, .tile = cases[c].tile, .block_m = cases[c].sparse == 1 ? 128 : 0,
                             .block_n = cases[c].sparse == 1 ? 128 : 0, .splitkv = cases[c].sparse == 2};
        ptxgen_set *s = NULL;
        char err[512] = "", what[128];
        snprintf(what, sizeof what, "%s %s %s d %d%s%s%s", cases[c].arch, cases[c].family, cases[c].kernel, cases[c].hdim,
                 cases[c].sparse == 1 ? " block-sparse" : cases[c].sparse ? " split-KV" : "", cases[c].tile ? " " : "", cases[c].tile ? cases[c].tile : "");
        if (ptxgen_build(&rq, &s, err, sizeof err)) { check(0, what, "%s", err); continue; }
        int want = cases[c].want, n = ptxgen_num_kernels(s), got = 0;
        for (int k = 0; k < n; k++) got |= ptxgen_programmatic_dependent(s, k) << k;
        check(got == want, what, "programmatic dependents mask %d, want %d", got, want);
        check(!ptxgen_programmatic_dependent(s, n) && !ptxgen_programmatic_dependent(s, -1) &&
              !ptxgen_programmatic_dependent(NULL, 1), "programmatic_dependent: no such kernel", "%s", what);
        char *m = ptxgen_manifest_json(s);
        const char *ptx = ptxgen_ptx(s);
        check(m && !!strstr(m, "\"programmatic_dependent\": true") == !!want, what, "manifest field");
        check(!!strstr(ptx, "griddepcontrol.launch_dependents;") == !!cases[c].trig &&
              !!strstr(ptx, "griddepcontrol.wait;") == !!want, what, "griddepcontrol in the PTX");
        for (int k = 0; k < n; k++) {
            char entry[160];
            snprintf(entry, sizeof entry, ".entry %s(", ptxgen_entry(s, k));
            const char *body = strstr(ptx, entry), *next = body ? strstr(body + 1, ".entry ") : NULL;
            if (!body) { check(0, what, "no %s", entry); continue; }
            const char *w = strstr(body, "griddepcontrol.wait;"), *t = strstr(body, "griddepcontrol.launch_dependents;");
            if (w && next && w > next) w = NULL;
            if (t && next && t > next) t = NULL;
            int dep = (want >> k) & 1, trig = (cases[c].trig >> k) & 1;
            check(!!w == dep, what, "kernel %d (%s): a wait %s", k, ptxgen_entry(s, k), dep ? "missing" : "unasked");
            check(!!t == trig, what, "kernel %d (%s): an early trigger %s", k, ptxgen_entry(s, k), trig ? "missing" : "unasked");
            check(!trig || ((want >> (k + 1)) & 1), what, "kernel %d: a trigger with no dependent after it", k);
            int early = 0;   /* nothing of global memory before the wait */
            for (const char *x = body; w && x < w; x++)
                early |= !strncmp(x, "ld.", 3) || !strncmp(x, "st.", 3) || !strncmp(x, "cp.", 3) ||
                         !strncmp(x, "atom.", 5) || !strncmp(x, "red.", 4);
            check(!early, what, "kernel %d (%s): memory touched before the wait", k, ptxgen_entry(s, k));
        }
        free(m);
        ptxgen_free(s);
    }
}

int main(void) {
    test_manifest_tensor_map();
    test_api_sizes();
    test_programmatic_dependent();
    test_families();
    test_tmem_map();
    test_tmem_verdicts();
    test_roles();
    return check_summary();
}
