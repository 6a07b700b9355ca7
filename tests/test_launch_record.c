/* Launch records: parsing, the refusals of corrupted records (each message
 * naming the field), and record_run end to end on a tiny GEMM kernel of our
 * own (one thread per D element), including planted bugs that must fail.
 * NVIDIA's kernels run from their records in tests/oracle.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"
#include "launch_record.h"
#include "record_run.h"

/* D[m, n] = alpha * sum_k A[m, k] B[n, k] + beta * C[m, n]; M = 4, N = 8,
 * K = 16; A, B f16 K-major, C, D f32 row-major; thread (n, m). The tensor
 * map parameter is unused: it is there for the tag path. */
static const char kPtx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gemm(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd, .param .f32 alpha,\n"
    "    .param .f32 beta, .param .align 64 .b8 tmap[128])\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b16 %h<2>;\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<9>;\n  .reg .f32 %f<8>;\n"
    "  mov.u32 %r0, %tid.x;\n  mov.u32 %r1, %tid.y;\n"
    "  ld.param.u64 %rd0, [pa];\n  ld.param.u64 %rd1, [pb];\n  ld.param.u64 %rd2, [pc];\n  ld.param.u64 %rd3, [pd];\n"
    "  ld.param.f32 %f0, [alpha];\n  ld.param.f32 %f1, [beta];\n"
    "  mul.wide.u32 %rd4, %r1, 32;\n  add.u64 %rd4, %rd0, %rd4;\n  mul.wide.u32 %rd5, %r0, 32;\n  add.u64 %rd5, %rd1, %rd5;\n"
    "  mov.f32 %f2, 0f00000000;\n  mov.u32 %r2, 0;\n"
    "LOOP:\n  ld.global.b16 %h0, [%rd4];\n  ld.global.b16 %h1, [%rd5];\n  cvt.f32.f16 %f3, %h0;\n  cvt.f32.f16 %f4, %h1;\n"
    "  fma.rn.f32 %f2, %f3, %f4, %f2;\n  add.u64 %rd4, %rd4, 2;\n  add.u64 %rd5, %rd5, 2;\n  add.u32 %r2, %r2, 1;\n"
    "  setp.lt.u32 %p0, %r2, 16;\n  @%p0 bra LOOP;\n"
    "  mad.lo.u32 %r3, %r1, 8, %r0;\n  mul.wide.u32 %rd6, %r3, 4;\n  add.u64 %rd7, %rd2, %rd6;\n  ld.global.f32 %f5, [%rd7];\n"
    "  mul.f32 %f6, %f5, %f1;\n  fma.rn.f32 %f7, %f2, %f0, %f6;\n  add.u64 %rd8, %rd3, %rd6;\n"
    "  // STORE\n  st.global.f32 [%rd8], %f7;\n  ret;\n}\n";

/* The record's parts that the refusal tests corrupt, one at a time. */
typedef struct {
    const char *tag_id;      /* 8 hex digits after 'TMAP' */
    const char *d_hex;       /* param 3 (D's pointer) */
    int tmap_offset;         /* param 6's offset */
    const char *a_desc, *enc_dim, *entry, *launch_extra;
} Parts;

static const Parts kGood = {"00000000", "0000000000400000", 64, "f16 MxK row-major (K-major) @0x100000000000", "[16, 4]",
                            "gemm", ""};

static void make_record(const Parts *p, char *out, size_t cap)
{
    char tag[257];
    snprintf(tag, sizeof tag, "544d4150%s0000000000100000%0232d", p->tag_id, 0);
    snprintf(out, cap,
             "{\"tensormap_encodes\": [{\"id\": 0, \"dataType\": 6, \"rank\": 2, \"globalAddress\": \"0x100000000000\",\n"
             "  \"globalDim\": %s, \"globalStrides_bytes\": [32], \"boxDim\": [16, 4], \"elementStrides\": [1, 1],\n"
             "  \"interleave\": 0, \"swizzle\": 0, \"l2Promotion\": 0, \"oobFill\": 0}],\n"
             " \"launches\": [{\"entry\": \"%s\", \"grid\": [1, 1, 1], \"block\": [8, 4, 1], \"dynamic_smem_bytes\": 0,%s\n"
             "  \"cluster\": [1, 1, 1], \"params\": [\n"
             "  {\"index\": 0, \"size\": 8, \"align\": 8, \"offset_in_param_space\": 0, \"hex\": \"0000000000100000\"},\n"
             "  {\"index\": 1, \"size\": 8, \"align\": 8, \"offset_in_param_space\": 8, \"hex\": \"0000000000200000\"},\n"
             "  {\"index\": 2, \"size\": 8, \"align\": 8, \"offset_in_param_space\": 16, \"hex\": \"0000000000300000\"},\n"
             "  {\"index\": 3, \"size\": 8, \"align\": 8, \"offset_in_param_space\": 24, \"hex\": \"%s\"},\n"
             "  {\"index\": 4, \"size\": 4, \"align\": 4, \"offset_in_param_space\": 32, \"hex\": \"0000803f\"},\n"
             "  {\"index\": 5, \"size\": 4, \"align\": 4, \"offset_in_param_space\": 36, \"hex\": \"0000003f\"},\n"
             "  {\"index\": 6, \"size\": 128, \"align\": 64, \"offset_in_param_space\": %d, \"hex\": \"%s\"}]}],\n"
             " \"problem\": {\"M\": 4, \"N\": 8, \"K\": 16, \"alpha\": 1.0, \"beta\": 0.5,\n"
             "  \"A\": \"%s\", \"B\": \"f16 NxK row-major (K-major) @0x200000000000\",\n"
             "  \"C\": \"f32 MxN row-major @0x300000000000\", \"D\": \"f32 MxN row-major @0x400000000000 (output)\"}}\n",
             p->enc_dim, p->entry, p->launch_extra, p->d_hex, p->tmap_offset, tag, p->a_desc);
}

static void parse_good(void)
{
    char text[8192], err[512];
    LaunchRecord r;
    make_record(&kGood, text, sizeof text);
    if (launch_record_parse(text, "good.json", &r, err, sizeof err)) { check(0, "record: the good record parses", "%s", err); return; }
    check(r.nparams == 7 && r.param_bytes == 192 && r.ntags == 1 && r.tags[0].offset == 64 && r.nencodes == 1 &&
              r.block[0] == 8 && r.block[1] == 4 && r.params[8 + 5] == 0x20 && !strcmp(r.entry, "gemm"),
          "record: params, tags, geometry", "nparams %d bytes %zu tags %d", r.nparams, r.param_bytes, r.ntags);
    const RecGemm *g = &r.gemm;
    check(g->M == 4 && g->N == 8 && g->K == 16 && g->alpha == 1 && g->beta == 0.5 && g->a.addr == 0x100000000000ull &&
              g->a.dtype == 6 && !g->a.col_major && g->c.dtype == 7 && g->d.addr == 0x400000000000ull && !g->d.in_place,
          "record: the problem's matrices", "M %d N %d K %d", g->M, g->N, g->K);
    launch_record_free(&r);
}

/* The record with one part changed must be refused naming want. */
static void refused(const char *name, const Parts *p, const char *want)
{
    char text[8192], err[512];
    LaunchRecord r;
    make_record(p, text, sizeof text);
    if (!launch_record_parse(text, "bad.json", &r, err, sizeof err)) {
        launch_record_free(&r);
        check(0, name, "accepted");
        return;
    }
    check(strstr(err, want) != NULL, name, "message '%s' lacks '%s'", err, want);
}

static void parse_refusals(void)
{
    Parts p = kGood;
    p.d_hex = "00000000004000";
    refused("record refuses a hex of the wrong length", &p, "params[3] (line 9:75): hex has 14 digits; size 8 needs 16");
    p = kGood, p.d_hex = "000000000040000g";
    refused("record refuses a non-hex digit", &p, "non-hex character at digit 15");
    p = kGood, p.tag_id = "07000000";
    refused("record refuses a TMAP tag naming no encode", &p,
            "param bytes at offset 64: a TMAP tag names tensor-map encode id 7, which tensormap_encodes lacks");
    p = kGood, p.tmap_offset = 0;
    refused("record refuses overlapping params", &p, "bytes [0, 128) overlap params[0]'s [0, 8)");
    p = kGood, p.tmap_offset = 96;
    refused("record refuses an offset off its alignment", &p, "offset 96 is not a multiple of its align 64");
    p = kGood, p.tmap_offset = 32704;
    refused("record refuses a param past the parameter space", &p, "runs past the 32764-byte parameter space");
    p = kGood, p.enc_dim = "[16, 8]";
    refused("record refuses a tensor map that disagrees with its matrix", &p,
            "tensormap_encodes[0]: (over A) has dataType 6, rank 2, globalDim [16, 8]");
    p = kGood, p.a_desc = "f16 MxK column-major (K-major) @0x100000000000";
    refused("record refuses a major remark that contradicts the layout", &p, "says K-major, but a column-major MxK matrix is M-major");
    p = kGood, p.a_desc = "f16 KxM row-major @0x100000000000";
    refused("record refuses the wrong shape letters", &p, "problem.A (line 14:8): shape \"KxM\"; want MxK");
    p = kGood, p.a_desc = "f16 MxK row-major";
    refused("record refuses a matrix without an address", &p, "has no \"@0xADDRESS\"");
    p = kGood, p.launch_extra = " \"grid\": [1, 1, 1],";
    refused("record refuses a duplicate member (strict JSON)", &p, "bad.json: not valid JSON: line 4:");
    char err[512];
    LaunchRecord r;
    check(launch_record_parse("{\"tensormap_encodes\": [], \"launches\": []}", "x.json", &r, err, sizeof err) &&
              strstr(err, "x.json: launches (line 1:39): is empty"),
          "record refuses an empty launches list", "%s", err);
    check(launch_record_parse("{\"launches\": [{}]}", "x.json", &r, err, sizeof err) && strstr(err, "lacks \"tensormap_encodes\""),
          "record refuses a missing field, naming it", "%s", err);
    check(launch_record_load("/nonexistent/x.launch.json", &r, err, sizeof err) && strstr(err, "cannot read /nonexistent"),
          "record: an unreadable file is named", "%s", err);
}

/* Runs ptx (kPtx or a planted-bug edit) from the record of p; returns record_run's code. */
static int run(const char *ptx, const Parts *p, uint64_t seed, RecResult *res, char *err, size_t errlen)
{
    char text[8192];
    LaunchRecord r;
    SimModule *m;
    make_record(p, text, sizeof text);
    if (launch_record_parse(text, "tiny.json", &r, err, errlen)) return 2;
    if (sim_parse(ptx, &m, err, errlen)) { launch_record_free(&r); return 2; }
    Sim sim;
    sim_init(&sim);
    int rc = record_run(&sim, m, &r, seed, res, err, errlen);
    sim_fini(&sim);
    sim_module_free(m);
    launch_record_free(&r);
    return rc;
}

/* kPtx with from replaced by to (once); the caller frees it. */
static char *edit(const char *from, const char *to)
{
    const char *at = strstr(kPtx, from);
    char *s = malloc(sizeof kPtx + strlen(to));
    if (!at || !s) { free(s); return NULL; }
    sprintf(s, "%.*s%s%s", (int)(at - kPtx), kPtx, to, at + strlen(from));
    return s;
}

static void end_to_end(uint64_t seed)
{
    RecResult res;
    char err[2048], name[128];
    int rc = run(kPtx, &kGood, seed, &res, err, sizeof err);
    snprintf(name, sizeof name, "record_run: tiny GEMM passes (seed %llu)", (unsigned long long)seed);
    check(rc == 0 && res.pass && !res.exact && res.total == 32 && !res.unwritten && res.rel_l2 < 1e-6 && res.out_bytes == 128, name,
          "rc %d (%s) pass %d rel_l2 %g unwritten %ld", rc, rc ? err : "", res.pass, res.rel_l2, res.unwritten);
    rec_result_free(&res);

    char *skip = edit("  // STORE\n", "  setp.eq.u32 %p1, %r3, 5;\n  @%p1 ret;\n");
    rc = run(skip, &kGood, seed, &res, err, sizeof err);
    check(rc == 0 && !res.pass && res.unwritten == 1 && res.first_bad == 5 && !res.wrong, "record_run: a kernel that skips D[0, 5] fails (unwritten)",
          "rc %d pass %d unwritten %ld first %ld", rc, res.pass, res.unwritten, res.first_bad);
    rec_result_free(&res);
    free(skip);

    char *nobeta = edit("mul.f32 %f6, %f5, %f1;", "mul.f32 %f6, %f5, 0f00000000;");
    rc = run(nobeta, &kGood, seed, &res, err, sizeof err);
    check(rc == 0 && !res.pass && res.wrong > 0 && res.rel_l2 > 1e-2, "record_run: a kernel that drops beta * C fails (wrong)",
          "rc %d pass %d wrong %ld rel_l2 %g", rc, res.pass, res.wrong, res.rel_l2);
    rec_result_free(&res);
    free(nobeta);

    char *oob = edit("  // STORE\n", "  add.u64 %rd8, %rd8, 128;\n");
    rc = run(oob, &kGood, seed, &res, err, sizeof err);
    check(rc == 1 && strstr(err, "out-of-bounds global store") && strstr(err, "0x400000000080"),
          "record_run: a store past D is a sim error naming the address", "rc %d: %s", rc, err);
    rec_result_free(&res);
    free(oob);
}

/* Records that parse but do not fit the PTX: exit-code 2 and a named reason. */
static void mismatches(uint64_t seed)
{
    RecResult res;
    char err[2048];
    Parts p = kGood;
    p.entry = "nosuch";
    int rc = run(kPtx, &p, seed, &res, err, sizeof err);
    check(rc == 2 && strstr(err, "the PTX has no .entry named nosuch"), "record_run refuses an unknown entry", "rc %d: %s", rc, err);
    char *small = edit(".param .align 64 .b8 tmap[128]", ".param .align 64 .b8 tmap[64]");
    rc = run(small, &kGood, seed, &res, err, sizeof err);
    check(rc == 2 && strstr(err, "params[6] (index 6): offset 64 + size 128 runs past the end of the entry's 128-byte parameter space"),
          "record_run refuses a param offset past the end of the entry's parameters", "rc %d: %s", rc, err);
    free(small);
    char *moved = edit(".param .f32 beta,", ".param .f64 beta,");
    rc = run(moved, &kGood, seed, &res, err, sizeof err);
    check(rc == 2 && strstr(err, "record params[5] (index 5) is 4 bytes at offset 36; the entry declares beta as 8 bytes at offset 40"),
          "record_run refuses a param layout that differs from the entry's", "rc %d: %s", rc, err);
    free(moved);
    /* a branch to a label that does not exist after one that does (LOOP): the parser freed the resolved label's
     * name and then again on the error path (a double free, abort in ptxgen sim) */
    char *nolabel = edit("  @%p0 bra LOOP;\n", "  @%p0 bra LOOP;\n  bra NOWHERE;\n");
    rc = run(nolabel, &kGood, seed, &res, err, sizeof err);
    check(rc == 2 && strstr(err, "unknown label or symbol NOWHERE"), "record_run refuses a branch to an unknown label",
          "rc %d: %s", rc, err);
    free(nolabel);
    /* an arithmetic op without its type (ptxas refuses it) had no width: the sim sign-extended from bit -1; it is
     * refused with the module, naming the line */
    char *notype = edit("fma.rn.f32 %f2,", "fma.rn %f2,");
    rc = run(notype, &kGood, seed, &res, err, sizeof err);
    check(rc == 2 && strstr(err, "fma.rn: fma needs a type"), "record_run: an fma without a type is refused at load",
          "rc %d: %s", rc, err);
    rec_result_free(&res);
    free(notype);
}

/* A grid of 2^32 CTAs or more: the sim's 32-bit CTA count wrapped and it ran none (a FAIL, "unwritten"); refused. */
static void huge_grid(void)
{
    char err[512] = "";
    SimModule *m;
    if (sim_parse(kPtx, &m, err, sizeof err)) { check(0, "sim refuses a grid of 2^32 CTAs", "%s", err); return; }
    Sim sim;
    sim_init(&sim);
    sim.err = err, sim.errlen = sizeof err;
    const unsigned grid[3] = {1u << 30, 4, 1}, block[3] = {8, 4, 1};
    uint8_t params[192] = {0};   /* the entry's parameter space */
    int rc = sim_launch_raw(&sim, m, sim_find(m, "gemm"), grid, block, NULL, 0, params, sizeof params);
    check(rc && strstr(err, "the sim runs at most 4294967295 CTAs a launch"), "sim refuses a grid of 2^32 CTAs", "rc %d: %s", rc, err);
    sim_fini(&sim);
    sim_module_free(m);
}

int main(void)
{
    uint64_t seed = (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)seed);
    parse_good();
    parse_refusals();
    end_to_end(seed);
    mismatches(seed);
    huge_grid();
    return check_summary();
}
