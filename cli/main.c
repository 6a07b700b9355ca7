/* ptxgen command line: emit (default), --list, --plan, --manifest, check, bench, xcheck, selfcheck, sim (cmd_sim.c). */
#include <errno.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptxgen.h"
#include "arch.h"
#include "attn.h"
#include "mla.h"
#include "kinds.h"
#include "family.h"
#include "check.h"
#include "cmd.h"

typedef struct {
    ptxgen_request req;
    const char *out, *manifest, *ref;   /* ref: --ref's value, read by parse_ref */
    int list, plan, help;
    RunOpts run;
    const char *variants[8], *svg;      /* compare (and tune's --svg) */
    const char *csv, *json;             /* tune */
    int save;
    int nvariants;
    const char *run_flag, *emit_flag;   /* the first flag given that only a run (a subcommand) / only emit reads */
} Cli;

/* Flags one side reads and the other would ignore: refused there instead (main) */
static const char *const kRunFlags[] = {"--seed", "--device", "--stats", "--ref", "--ptx", "--iters", "--warmup",
                                        "--scale", "--full-kv", "--variant", "--svg", "--csv", "--json", "--save"};
static const char *const kEmitFlags[] = {"-o", "--manifest", "--plan"};

static void note_side(Cli *c, const char *f) {
    for (size_t i = 0; i < sizeof kRunFlags / sizeof kRunFlags[0]; i++)
        if (!c->run_flag && !strcmp(f, kRunFlags[i])) c->run_flag = kRunFlags[i];
    for (size_t i = 0; i < sizeof kEmitFlags / sizeof kEmitFlags[0]; i++)
        if (!c->emit_flag && !strcmp(f, kEmitFlags[i])) c->emit_flag = kEmitFlags[i];
}

static int usage_error(const char *fmt, const char *a) {
    fputs("ptxgen: ", stderr);
    fprintf(stderr, fmt, a);
    fputs(" (see ptxgen --help)\n", stderr);
    return 2;
}

static void print_help(void) {
    puts("usage: ptxgen --arch ARCH --kernel KERNEL [--dtype bf16|fp16] [--hdim D] [--hdim-v DV] [--causal]\n"
         "              [--mma auto|sync|wgmma|tcgen05] [--tile key=val,...] [-o FILE] [--plan] [--manifest FILE]\n"
         "       ptxgen --list\n"
         "       ptxgen check|bench|xcheck --kernel KERNEL [--arch ARCH] [--b N] [--sq N] [--sk N] [--hq N] [--hkv N]\n"
         "              [--causal] [--dtype T] [--hdim D] [--hdim-v DV] [--tile ...] [--seed N] [--scale X] [--pad N]\n"
         "              [--iters N] [--warmup N] [--device cuda|cuda:N|sim] [--stats] [--ptx FILE]\n"
         "              [--ref cpu|gpu|auto] (check and xcheck) [--varlen L1,L2,... [--varlen-k K1,K2,...]]\n"
         "              [--block-m N --block-n N [--block-mask random:D|local:W|FILE] [--mask-heads N]] [--page-size N]\n"
         "              [--split-kv [--splits N]] [--full-kv]\n"
         "       ptxgen check|bench|xcheck --kernel mla_fwd|mla_bwd [--sq N] [--skv N] [--hq N] [--topk N]\n"
         "              [--topk-length] [--dtype T] [--tile ...] [--seed N] [--scale X] [--pad N] ... (as above)\n"
         "       ptxgen compare --kernel KERNEL --variant SPEC --variant SPEC ... [--svg FILE] (shape and device flags\n"
         "              as check); SPEC: key=value parts joined by ';', keys tile, mma, dtype, ptx (\"\": the default)\n"
         "       ptxgen tune --kernel KERNEL --arch ARCH [--mma F] [--csv FILE] [--json FILE] [--svg FILE] [--save]\n"
         "              (shape and device flags as check): every tile of the kernel's keys, refused ones with the\n"
         "              reason; --save keeps a GPU's best for its shape class ($PTXGEN_TUNED, else\n"
         "              ~/.config/ptxgen/tuned.txt), which check, bench and the API then build with\n"
         "       ptxgen selfcheck [--device cuda|cuda:N]\n"
         "       ptxgen sim FILE.ptx --launch RECORD.json [--seed N] [--out FILE] [--stats] [--strict]\n"
         "Emits PTX to stdout (or -o FILE). --plan prints the resource plan and exits 2 if it is refused.\n"
         "--mma picks the MMA instruction family; auto (default) takes the arch's newest (tcgen05 on\n"
         "sm_100a/sm_103a, wgmma on sm_90a, mma.sync elsewhere) among those the kernel has a generator for,\n"
         "and says on stderr when it fell back. --list shows which (kernel, family, arch) combinations exist.\n"
         "check runs the kernel on a device against a float64 CPU reference (exit 1 on failure): the GPU\n"
         "through the CUDA driver (default), or --device sim, the CPU interpreter of the emitted PTX, which\n"
         "also catches races, uninitialised or out-of-bounds memory and missing waits; --stats prints its\n"
         "instruction, bank-conflict and sector counters; --ptx runs a (hand-edited) variant of the\n"
         "generated PTX in its place. xcheck runs the same PTX and inputs on the GPU and on the sim and\n"
         "compares them with each other. bench reports the median of --iters CUDA-event timings and\n"
         "TFLOP/s (GPU only; --stats also lists every timed run in launch order). Shape flags left out\n"
         "take the kind's defaults (check: small enough for the CPU reference; bench: realistic);\n"
         "--scale defaults to 1/sqrt(d_qk). --hdim-v sets d_v\n"
         "where the kind takes d_v != d (the tcgen05 attn_fwd: --hdim 192 --hdim-v 128 is MLA prefill's). --varlen\n"
         "builds the set over packed sequences (cu_seqlens; every attention kind); check and bench take the\n"
         "query lengths after it (0 allowed) and --varlen-k the key lengths (else the same). --block-m/--block-n\n"
         "(128 each when one of them or --block-mask is given) build block-sparse attn_fwd/attn_bwd (every\n"
         "family): a block mask of block_m query rows x block_n keys, multiples of the tiles; check and bench\n"
         "draw it per --seed: random:D sets each block with probability D (default 0.5), local:W the blocks within\n"
         "W - 1 of the diagonal, FILE reads its integers, then the h_q head types; --mask-heads mask heads (2), head\n"
         "0 dense (type 0) when h_q > 1, head h type 1 + h % mask heads. --page-size N builds attn_fwd over a paged KV\n"
         "cache (every family); check and bench draw the lengths (the last sequence --sk long, the\n"
         "others up to it; --full-kv: every one --sk long) and a block table of shuffled pages per --seed; bench\n"
         "adds the KV bytes read per second beside the GPU's device-to-device copy bandwidth. --split-kv builds attn_fwd with split-KV\n"
         "and its combine kernel (every family); check and bench split into --splits, or as many as give\n"
         "the forward 4 CTAs per SM (ptxgen_num_splits; 3 on the sim). mla_fwd\n"
         "and mla_bwd draw fresh top-k indices per seed (invalid values, duplicates, a token with no valid slot);\n"
         "--topk-length also passes a\n"
         "topk_length buffer (0, topk, in between, negative, above topk), else a null pointer. Backward kinds\n"
         "take O and LSE from the float64 forward of their inputs, O rounded as a forward writes it (the\n"
         "references' delta = rowsum(dO * O) takes that O, as the kernels do). Every output sits between 256-byte canary\n"
         "zones on the device: check, xcheck and bench fail when a run writes into one.\n"
         "--ref picks the reference: cpu (float64), gpu (CUDA C compiled by NVRTC, float64 sums, fp32\n"
         "outputs), or auto (default): gpu on a CUDA device above 20 GFLOP, else cpu; auto falls back to\n"
         "cpu when the GPU reference fails to load. selfcheck compares every GPU reference with the CPU\n"
         "one at small shapes (exit 0 or 1). sim runs foreign PTX (NVIDIA's oracle GEMMs) on the sim from a\n"
         "launch record (docs/launch_record.md) and judges its GEMM against float64 (exit 0 pass, 1 fail, 2 bad input).");
}

static void print_keys(const char *title, const TileKey *keys, int nkeys) {
    Buf b = {0};
    puts(title);
    tile_list(keys, nkeys, &b);
    fputs(b.s, stdout);
    buf_free(&b);
}

static void print_kinds(void) {
    ptxgen_kind k;
    puts("kernels (one generator per kernel and MMA family):");
    for (int i = 0; !ptxgen_kind_info(i, &k); i++) printf("  %-9s  %-8s  %s\n", k.kernel, k.family, k.what);
}

static void print_archs(void) {
    puts("archs (families; --mma auto takes the newest one the kernel has):");
    for (int i = 0; i < arch_count(); i++) {
        const ArchInfo *a = arch_at(i);
        Buf fams = {0};
        family_list(a->families, &fams);
        printf("  %-8s PTX %s, smem/block %d B opt-in, %s", a->name, a->ptx_version, a->smem_block_optin, fams.s);
        if (a->tmem_cols) printf(" (TMEM %d cols)", a->tmem_cols);
        puts("");
        buf_free(&fams);
    }
}

/* Every (kernel, family, arch) that builds; '*' where the default tile's plan is refused. */
static void print_combinations(void) {
    ptxgen_kind k;
    puts("combinations that exist (kernel, family: archs; * = the default tile's plan is refused there):");
    for (int i = 0; !ptxgen_kind_info(i, &k); i++) {
        printf("  %-9s  %-8s:", k.kernel, k.family);
        for (int j = 0; j < arch_count(); j++) {
            if (!ptxgen_kind_on_arch(i, arch_at(j)->name)) continue;
            ptxgen_request rq = {.arch = arch_at(j)->name, .kernel = k.kernel, .family = k.family};
            char err[512];
            int fits = 0;
            free(ptxgen_plan_request(&rq, &fits, err, sizeof err));
            printf(" %s%s", arch_at(j)->name, fits ? "" : "*");
        }
        puts("");
    }
}

/* Each kind's tile keys, and its default tile at each head dim on the first arch whose newest family is the
 * kind's (what --mma auto builds there), from the kind table. */
static void print_tile_keys(void) {
    for (int i = 0; i < kind_count(); i++) {
        const KernelKind *kd = kind_at(i);
        const ArchInfo *a = NULL;
        for (int j = 0; j < arch_count() && !a; j++)
            if (family_newest(arch_at(j)->families) == kd->family) a = arch_at(j);
        Buf b = {0};
        buf_printf(&b, "tile keys for %s, %s (defaults on %s:", kd->name, family_name(kd->family), a ? a->name : "-");
        for (int h = 0; a && h < kd->nhdims; h++) {
            AttnTile t = kd->default_tile(a, kd->hdims[h], kd->dv ? kd->dv : kd->hdims[h]);
            buf_printf(&b, "%s d=%d ", h ? ";" : "", kd->hdims[h]);
            tile_describe(kd->keys, *kd->nkeys, &t, &b);
        }
        buf_printf(&b, "):");
        print_keys(b.s, kd->keys, *kd->nkeys);
        buf_free(&b);
    }
}

static void print_list(void) {
    print_kinds();
    print_archs();
    print_combinations();
    print_tile_keys();
}

static int parse_int(const char *flag, const char *v, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "ptxgen: %s needs an integer in [%ld, %ld], got '%s'\n", flag, lo, hi, v);
        return 2;
    }
    *out = (int)x;
    return 0;
}

/* --device sim | cuda | cuda:N | N (a CUDA ordinal) */
static int parse_device(const char *v, RunOpts *r) {
    r->device = 0;
    if (!strcmp(v, "sim") || !strcmp(v, "cuda")) { r->device_kind = v; return 0; }
    r->device_kind = "cuda";
    return parse_int("--device", !strncmp(v, "cuda:", 5) ? v + 5 : v, 0, 64, &r->device);
}

/* --ref cpu | gpu | auto */
static int parse_ref(const char *v, RunOpts *r) {
    const char *names[] = {"auto", "cpu", "gpu"};
    const RunRef refs[] = {RUN_REF_AUTO, RUN_REF_CPU, RUN_REF_GPU};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) { r->ref = refs[i]; return 0; }
    return usage_error("--ref needs cpu, gpu or auto, got '%s'", v);
}

/* Flags that take a value; returns 1 if flag was one of them. */
static int value_flag(Cli *c, const char *f, const char *v, int *rc) {
    struct { const char *name; int *dst; long lo, hi; } ints[] = {
        {"--hdim", &c->req.hdim, 1, 1024}, {"--hdim-v", &c->req.hdim_v, 1, 1024}, {"--b", &c->run.b, 1, 65535},
        {"--sq", &c->run.s_q, 1, INT_MAX / 2}, {"--sk", &c->run.s_k, 1, INT_MAX / 2}, {"--hq", &c->run.h_q, 1, 65535}, {"--hkv", &c->run.h_kv, 1, 65535},
        {"--skv", &c->run.s_kv, 1, INT_MAX}, {"--topk", &c->run.topk, 1, INT_MAX / 4},
        {"--pad", &c->run.pad, 0, 4096}, {"--iters", &c->run.iters, 1, 100000}, {"--warmup", &c->run.warmup, 0, 100000},
        {"--block-m", &c->req.block_m, 1, 1 << 20}, {"--block-n", &c->req.block_n, 1, 1 << 20},
        {"--mask-heads", &c->run.mask_heads, 1, 65535}, {"--page-size", &c->req.page_size, 1, 1 << 20},
        {"--splits", &c->run.num_splits, 1, 4096}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (!strcmp(f, ints[i].name)) { *rc = parse_int(f, v, ints[i].lo, ints[i].hi, ints[i].dst); return 1; }
    const char **strs[] = {&c->req.arch, &c->req.kernel, &c->req.dtype, &c->req.tile, &c->out, &c->manifest, &c->run.ptx_file,
                           &c->ref, &c->req.family, &c->run.varlen_k, &c->run.block_mask};
    const char *names[] = {"--arch", "--kernel", "--dtype", "--tile", "-o", "--manifest", "--ptx", "--ref", "--mma",
                           "--varlen-k", "--block-mask"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(f, names[i])) { *strs[i] = v; *rc = 0; return 1; }
    if (!strcmp(f, "--device")) {
        *rc = parse_device(v, &c->run);
        return 1;
    }
    if (!strcmp(f, "--variant")) {   /* compare: repeatable */
        *rc = c->nvariants == 8 ? usage_error("%s: at most 8 variants", f) : (c->variants[c->nvariants++] = v, 0);
        return 1;
    }
    if (!strcmp(f, "--svg")) { c->svg = v; *rc = 0; return 1; }
    if (!strcmp(f, "--csv")) { c->csv = v; *rc = 0; return 1; }
    if (!strcmp(f, "--json")) { c->json = v; *rc = 0; return 1; }
    if (!strcmp(f, "--seed")) {
        char *end;
        c->run.seed = strtoull(v, &end, 0);
        *rc = *end || !*v ? usage_error("--seed needs an integer, got '%s'", v) : 0;
        return 1;
    }
    if (!strcmp(f, "--scale")) {
        char *end;
        c->run.scale = strtod(v, &end);
        /* a subnormal scale would flush to zero in the kernels' fp32 math: as wrong as 0 */
        *rc = *end || !*v || !(c->run.scale > 0) || !isnormal(c->run.scale) || (float)c->run.scale < FLT_MIN ||
                      isinf((float)c->run.scale)
                  ? usage_error("--scale needs a positive normal fp32 number, got '%s'", v)
                  : 0;
        return 1;
    }
    return 0;
}

static int parse_args(Cli *c, int argc, char **argv, int first) {
    const char *seen[64];   /* the flags so far (values are skipped below, so a value never counts) */
    int nseen = 0;
    for (int i = first; i < argc; i++) {
        const char *f = argv[i];
        for (int j = 0; j < nseen && strcmp(f, "--variant"); j++)   /* --variant is the one flag meant to repeat */
            if (!strcmp(seen[j], f)) return usage_error("%s is given twice (the second would silently override the first)", f);
        if (nseen < (int)(sizeof seen / sizeof seen[0])) seen[nseen++] = f;
        note_side(c, f);
        if (!strcmp(f, "--causal")) c->req.causal = 1;
        else if (!strcmp(f, "--list")) c->list = 1;
        else if (!strcmp(f, "--plan")) c->plan = 1;
        else if (!strcmp(f, "--stats")) c->run.stats = 1;
        else if (!strcmp(f, "--topk-length")) c->run.topk_length = 1;
        else if (!strcmp(f, "--split-kv")) c->req.splitkv = 1;
        else if (!strcmp(f, "--full-kv")) c->run.full_kv = 1;
        else if (!strcmp(f, "--save")) c->save = 1;
        else if (!strcmp(f, "--varlen")) {   /* a set over packed sequences; check and bench take their lengths */
            c->req.varlen = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') c->run.varlen_q = argv[++i];
        }
        else if (!strcmp(f, "--help") || !strcmp(f, "-h")) c->help = 1;
        else {
            int rc;
            Cli probe = *c;   /* only asks whether f takes a value */
            if (i + 1 >= argc && value_flag(&probe, f, "1", &rc)) return usage_error("%s needs a value", f);
            if (!value_flag(c, f, argv[i + 1 < argc ? i + 1 : i], &rc)) return usage_error("unknown argument '%s'", f);
            if (rc) return rc;
            i++;
        }
    }
    return 0;
}

static int write_text(const char *path, const char *text) {
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) { fprintf(stderr, "ptxgen: cannot write %s: %s\n", path, strerror(errno)); return 1; }
    int bad = fputs(text, f) < 0;
    if (path) bad |= fclose(f) != 0;
    else bad |= fflush(f) != 0;
    if (bad) { fprintf(stderr, "ptxgen: write to %s failed\n", path ? path : "stdout"); return 1; }
    return 0;
}

static int do_plan(const Cli *c) {
    char err[512];
    int fits;
    char *text = ptxgen_plan_request(&c->req, &fits, err, sizeof err);
    if (!text) { fprintf(stderr, "ptxgen: %s\n", err); return 2; }
    fputs(text, stdout);
    free(text);
    if (!fits) fprintf(stderr, "ptxgen: plan refused: %s\n", err);
    return fits ? 0 : 2;
}

/* Shape flags given to emit or --plan name the problem's shape class, which picks a tuned tile or a decode
 * packing (the tile note says which); emit takes no other use of them. */
static int emit_shape_class(Cli *c, char *cls, size_t len) {
    const RunOpts *r = &c->run;
    ptxgen_size sz[4];
    int n = 0;
    if (r->s_q) sz[n++] = (ptxgen_size){"s_q", r->s_q};
    if (r->s_k) sz[n++] = (ptxgen_size){"s_k", r->s_k};
    if (r->h_q) sz[n++] = (ptxgen_size){"h_q", r->h_q};
    if (r->h_kv) sz[n++] = (ptxgen_size){"h_kv", r->h_kv};
    if (r->b || r->s_kv || r->topk || r->pad || r->topk_length)
        return usage_error("%s", "emit and --plan take only --sq, --sk, --hq and --hkv of the shape flags (they pick "
                                 "the tile for the problem's shape class)");
    if (!n) return 0;
    if (r->h_q && r->h_kv && r->h_q % r->h_kv) {
        fprintf(stderr, "ptxgen: h_q (%d) must be a multiple of h_kv (%d)\n", r->h_q, r->h_kv);
        return 2;
    }
    if (ptxgen_shape_class(c->req.kernel, sz, n, cls, len)) return usage_error("%s", "bad shape flags");
    c->req.shape_class = cls;
    return 0;
}

static int do_emit(Cli *c) {
    if (!c->req.arch) return usage_error("%s", "--arch is required");
    if (!c->req.kernel) return usage_error("%s", "--kernel is required");
    char err[512], note[200], cls[64];
    if (emit_shape_class(c, cls, sizeof cls)) return 2;
    const char *family;
    if (ptxgen_pick_family(&c->req, &family, note, sizeof note, err, sizeof err)) {
        fprintf(stderr, "ptxgen: %s\n", err);
        return 2;
    }
    if (*note) fprintf(stderr, "ptxgen: note: %s\n", note);   /* auto never falls back silently */
    if (c->plan) return do_plan(c);
    ptxgen_set *s;
    int rc = ptxgen_build(&c->req, &s, err, sizeof err);
    if (rc) { fprintf(stderr, "ptxgen: %s\n", err); return rc; }
    const char *fnote = ptxgen_family_note(s);   /* a fallback the request's head dim or varlen decided */
    if (fnote && *fnote && strcmp(fnote, note)) fprintf(stderr, "ptxgen: note: %s\n", fnote);
    if (ptxgen_tile_note(s)) fprintf(stderr, "ptxgen: tile: %s\n", ptxgen_tile_note(s));
    if (c->manifest) {
        char *json = ptxgen_manifest_json(s);
        rc = json ? write_text(c->manifest, json) : (fprintf(stderr, "ptxgen: out of memory writing the manifest\n"), 1);
        free(json);
    }
    if (!rc) rc = write_text(c->out, ptxgen_ptx(s));   /* PTX always: stdout unless -o */
    ptxgen_free(s);
    return rc;
}

/* selfcheck takes --device alone. */
static int selfcheck_args(Cli *c, int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) c->help = 1;
        else if (strcmp(argv[i], "--device")) return usage_error("selfcheck takes only --device, not '%s'", argv[i]);
        else if (i + 1 >= argc) return usage_error("%s needs a value", argv[i]);
        else if (parse_device(argv[++i], &c->run)) return 2;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "sim")) return cmd_sim(argc - 2, argv + 2);
    Cli c = {.run = {.seed = 1, .iters = 30, .warmup = 5}};   /* shape flags left 0 take the kind's defaults */
    int mode = 0; /* 0 emit, 1 check, 2 bench, 3 xcheck, 4 selfcheck, 5 compare, 6 tune */
    const char *modes[] = {"check", "bench", "xcheck", "selfcheck", "compare", "tune"};
    for (int i = 0; i < 6; i++)
        if (argc > 1 && !strcmp(argv[1], modes[i])) mode = i + 1;
    int rc = mode == 4 ? selfcheck_args(&c, argc, argv) : parse_args(&c, argc, argv, mode ? 2 : 1);
    if (!rc && c.ref) rc = parse_ref(c.ref, &c.run);
    if (rc) return rc;
    if (c.run.num_splits && !c.req.splitkv) return usage_error("%s", "--splits needs --split-kv");
    if (c.run.full_kv && !c.req.page_size) return usage_error("%s", "--full-kv needs --page-size (it sets a paged cache's lengths)");
    if (c.run.varlen_k && !c.req.varlen) return usage_error("%s", "--varlen-k needs --varlen (the keys' lengths of its sequences)");
    /* no --splits: check and bench pick them (ptxgen_num_splits on a GPU, 3 on the sim) */
    if (c.run.block_mask || c.run.mask_heads || c.req.block_m || c.req.block_n) {   /* block-sparse */
        if (!c.req.block_m) c.req.block_m = 128;
        if (!c.req.block_n) c.req.block_n = 128;
    }
    if (c.help) { print_help(); return 0; }
    if (c.list) { print_list(); return 0; }
    if (!mode && c.run_flag) return usage_error("%s is read by check, bench, xcheck, compare and tune, not when emitting PTX",
                                                c.run_flag);
    if (mode && c.emit_flag) return usage_error("%s is read when emitting PTX (no subcommand), not by check, bench, "
                                                "xcheck, compare or tune", c.emit_flag);
    if (!mode) return do_emit(&c);
    if (mode == 4) return run_selfcheck(&c.run);
    if (!c.req.kernel) return usage_error("%s", "--kernel is required");
    c.run.req = c.req;
    if (c.nvariants && mode != 5) return usage_error("%s", "--variant belongs to compare");
    if (c.svg && mode != 5 && mode != 6) return usage_error("%s", "--svg belongs to compare and tune");
    if ((c.csv || c.json) && mode != 6) return usage_error("%s", "--csv and --json belong to tune");
    if (mode == 5) return run_compare(&c.run, c.variants, c.nvariants, c.svg);
    if (c.save && mode != 6) return usage_error("%s", "--save belongs to tune");
    if (mode == 6) return run_tune(&c.run, c.csv, c.json, c.svg, c.save);
    return mode == 1 ? run_check(&c.run) : mode == 2 ? run_bench(&c.run) : run_xcheck(&c.run);
}
