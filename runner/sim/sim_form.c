/* The operands each instruction takes, checked as the module is parsed:
 * how many, and of which kind (register, constant, address, vector, ...),
 * and the constants the text fixes (cp.async's cp-size, setmaxnreg's count).
 * The units read operands by position, so an operand missing or of another
 * kind was read as register 0 or an address's offset; here such PTX (which
 * ptxas refuses) is refused by name before anything runs, executed or not.
 * The modifiers were checked when the mnemonic was decoded (emit/isa.c).
 *
 * A form is a list of operand kinds, one letter each, a count after a vector
 * kind, '?' after an optional one:
 *   d register          e register, or d|p        E d|p (d may be _)
 *   P predicate register                          Q predicate, or p|q
 *   _ register or _     S _ only
 *   r value: register, constant, special register or symbol
 *   p predicate or constant                       i constant
 *   a address [...]     A address or value        t tensor address [map, {coordinates}]
 *   v vector (source: no _ inside)                V vector (destination)
 *   D register or vector (destination)            R value or vector (source)
 *   l label */
#include <stdio.h>
#include <string.h>
#include "sim.h"
#include "sim_desc.h"

typedef struct { const char *kinds, *names; } Form;

/* The fixed forms; the ones that follow the modifiers are built in build(). */
static const Form kForm[I_COUNT] = {
    [I_MOV] = {"D R", "d, a"}, [I_ADD] = {"d r r", "d, a, b"}, [I_SUB] = {"d r r", "d, a, b"},
    [I_MUL] = {"d r r", "d, a, b"}, [I_DIV] = {"d r r", "d, a, b"}, [I_REM] = {"d r r", "d, a, b"},
    [I_AND] = {"d r r", "d, a, b"}, [I_OR] = {"d r r", "d, a, b"}, [I_XOR] = {"d r r", "d, a, b"},
    [I_SHL] = {"d r r", "d, a, b"}, [I_SHR] = {"d r r", "d, a, b"}, [I_COPYSIGN] = {"d r r", "d, a, b"},
    [I_MIN] = {"d r r r?", "d, a, b{, c}"}, [I_MAX] = {"d r r r?", "d, a, b{, c}"},   /* PTX 8.8's three inputs */
    [I_MAD] = {"d r r r", "d, a, b, c"}, [I_FMA] = {"d r r r", "d, a, b, c"}, [I_SAD] = {"d r r r", "d, a, b, c"},
    [I_ADDC] = {"d r r", "d, a, b"}, [I_SUBC] = {"d r r", "d, a, b"}, [I_MADC] = {"d r r r", "d, a, b, c"},
    [I_DP4A] = {"d r r r", "d, a, b, c"}, [I_DP2A] = {"d r r r", "d, a, b, c"}, [I_PRMT] = {"d r r r", "d, a, b, c"},
    [I_SHF] = {"d r r r", "d, a, b, c"}, [I_BFE] = {"d r r r", "d, a, pos, len"}, [I_FNS] = {"d r r r", "d, mask, base, offset"},
    [I_BFI] = {"d r r r r", "d, a, b, pos, len"}, [I_SELP] = {"d r r p", "d, a, b, c"},
    [I_CVT] = {"d r r?", "d, a{, b}"},   /* two f32 into a packed pair */
    [I_CREATEPOLICY] = {"d r?", "policy{, fraction}"}, [I_TESTP] = {"P r", "p, a"}, [I_ISSPACEP] = {"P r", "p, a"},
    [I_MOVMATRIX] = {"d d", "d, a"},
    [I_NEG] = {"d r", "d, a"}, [I_ABS] = {"d r", "d, a"}, [I_NOT] = {"d r", "d, a"}, [I_CNOT] = {"d r", "d, a"}, [I_LOP3] = {"d r r r i", "d, a, b, c, immLut"},
    [I_MUL24] = {"d r r", "d, a, b"}, [I_MAD24] = {"d r r r", "d, a, b, c"}, [I_BMSK] = {"d r r", "d, a, b"},
    [I_SZEXT] = {"d r r", "d, a, b"}, [I_BREV] = {"d r", "d, a"},
    [I_CLZ] = {"d r", "d, a"}, [I_POPC] = {"d r", "d, a"}, [I_BFIND] = {"d r", "d, a"}, [I_CVTA] = {"d r", "d, a"},
    [I_EX2] = {"d r", "d, a"}, [I_LG2] = {"d r", "d, a"}, [I_RCP] = {"d r", "d, a"}, [I_SQRT] = {"d r", "d, a"},
    [I_RSQRT] = {"d r", "d, a"}, [I_SIN] = {"d r", "d, a"}, [I_COS] = {"d r", "d, a"}, [I_TANH] = {"d r", "d, a"},
    [I_PREFETCH] = {"a", "[a]"}, [I_CP_ASYNC_COMMIT] = {"", "none"}, [I_CP_ASYNC_WAIT] = {"i", "N"},
    [I_CP_ASYNC_WAIT_ALL] = {"", "none"},
    [I_CP_ASYNC_MBAR_ARRIVE] = {"a", "[mbar]"}, [I_MBAR_INIT] = {"a r", "[mbar], count"}, [I_MBAR_INVAL] = {"a", "[mbar]"},
    [I_MBAR_EXPECT_TX] = {"a r", "[mbar], txCount"}, [I_MBAR_COMPLETE_TX] = {"a r", "[mbar], txCount"},
    [I_MBAR_TRY_WAIT] = {"P a r r?", "p, [mbar], state or phaseParity{, suspendTimeHint}"},
    [I_MBAR_TEST_WAIT] = {"P a r", "p, [mbar], state or phaseParity"},
    [I_SHFL] = {"e r r r r", "d{|p}, a, b, c, membermask"}, [I_REDUX] = {"d r r", "d, a, membermask"},
    [I_BAR_WARP_SYNC] = {"r", "membermask"}, [I_ELECT] = {"E r", "d|p, membermask"}, [I_ACTIVEMASK] = {"d", "d"},
    [I_BRA] = {"l", "target"}, [I_RET] = {"", "none"}, [I_EXIT] = {"", "none"}, [I_TRAP] = {"", "none"},
    [I_BRKPT] = {"", "none"}, [I_GETCTARANK] = {"d r", "d, a"}, [I_BAR_SYNC] = {"r r?", "a{, b}"},
    [I_BARRIER_SYNC] = {"r r?", "a{, b}"}, [I_BAR_ARRIVE] = {"r r", "a, b"}, [I_NANOSLEEP] = {"r", "t"},
    [I_BULK_COMMIT] = {"", "none"}, [I_BULK_WAIT] = {"i", "N"}, [I_PREFETCH_TENSORMAP] = {"a", "[tensorMap]"},
    [I_FENCE_PROXY_ASYNC] = {"", "none"}, [I_FENCE] = {"", "none"}, [I_MEMBAR] = {"", "none"},
    [I_FENCE_MBAR_INIT] = {"", "none"}, [I_CLUSTER_ARRIVE] = {"", "none"}, [I_CLUSTER_WAIT] = {"", "none"},
    [I_MAPA] = {"d r r", "d, a, rank"}, [I_SETMAXNREG] = {"i", "imm-reg-count"}, [I_GRIDDEP] = {"", "none"},
    [I_WGMMA_FENCE] = {"", "none"}, [I_WGMMA_COMMIT] = {"", "none"}, [I_WGMMA_WAIT] = {"i", "N"},
    [I_TC_ALLOC] = {"a r", "[dst], nCols"}, [I_TC_DEALLOC] = {"r r", "taddr, nCols"}, [I_TC_RELINQUISH] = {"", "none"},
    [I_TC_WAIT_LD] = {"", "none"}, [I_TC_WAIT_ST] = {"", "none"}, [I_TC_CP] = {"a r", "[taddr], s-desc"},
    [I_TC_SHIFT] = {"a", "[taddr]"}, [I_TC_FENCE_BEFORE] = {"", "none"}, [I_TC_FENCE_AFTER] = {"", "none"},
};

typedef struct {
    char kinds[48];
    char names[160];
} Built;

/* The form of an instruction, into b: 0; 1 when its unit checks the form; -1 with why when the modifiers name
 * none (a bulk copy's direction). Forms end with the operands .multicast::cluster and .L2::cache_hint add, in
 * that order. */
static int build(const IsaInsn *d, Built *b, char *why, size_t n)
{
    const char *k = NULL, *nm = NULL;
    char kb[32];
    int to_global = d->nspace == 2 && d->space[0] == SP_GLOBAL && d->space[1] == SP_SHARED;
    int to_shared = d->nspace == 2 && (d->space[0] == SP_SHARED || d->space[0] == SP_SHARED_CLUSTER) &&
                    d->space[1] == SP_GLOBAL;
    int peer = d->nspace == 2 && d->space[0] == SP_SHARED_CLUSTER && d->space[1] == SP_SHARED;
    int coords = (d->flags & F_GATHER4) ? 5 : d->dim;
    const char *op = isa_base_text(d->op);
    switch (d->op) {
    case I_SETP: k = d->redop ? "Q r r p" : "Q r r", nm = d->redop ? "p{|q}, a, b, c" : "p{|q}, a, b"; break;
    case I_SET: k = d->redop ? "d r r p" : "d r r", nm = d->redop ? "d, a, b, c" : "d, a, b"; break;
    case I_LD: case I_LDU:
        if (d->vec > 1) snprintf(kb, sizeof kb, "V%d a", d->vec), k = kb;
        else k = "D1 a";   /* a register, or a vector of one (ptxas takes {r} without .v) */
        nm = "d, [a]";
        break;
    case I_ST: case I_RED:
        if (d->vec > 1) snprintf(kb, sizeof kb, "a v%d", d->vec), k = kb;
        else k = d->op == I_ST ? "a R1" : "a r";
        nm = "[a], b";
        break;
    case I_ATOM:   /* a vector atom returns the vector of old values */
        if (d->vec > 1) snprintf(kb, sizeof kb, "V%d a v%d", d->vec, d->vec), k = kb;
        else k = d->redop == RO_CAS ? "_ a r r" : "_ a r";
        nm = d->redop == RO_CAS ? "d, [a], b, c" : "d, [a], b";
        break;
    case I_CP_ASYNC:
        if (d->space[0] != SP_SHARED || d->space[1] != SP_GLOBAL) {
            snprintf(why, n, "cp.async copies .shared{::cta} <- .global, written .shared.global");
            return -1;
        }
        k = "a a i r?", nm = "[dst], [src], cp-size{, src-size or ignore-src}";
        break;
    case I_MBAR_ARRIVE: case I_MBAR_ARRIVE_EXPECT_TX: {
        /* the state of a remote barrier's phase means nothing here: .shared::cluster returns it into _ */
        int remote = d->nspace && d->space[0] == SP_SHARED_CLUSTER, tx = d->op == I_MBAR_ARRIVE_EXPECT_TX;
        snprintf(kb, sizeof kb, "%s a r%s", remote ? "S" : "_", tx ? "" : "?");
        k = kb, nm = tx ? "state, [mbar], txCount" : "state, [mbar]{, count}";
        break;
    }
    case I_LDMATRIX: snprintf(kb, sizeof kb, "V%d a", d->num), k = kb, nm = "d, [a]"; break;
    case I_STMATRIX: snprintf(kb, sizeof kb, "a v%d", d->num), k = kb, nm = "[a], b"; break;
    case I_MMA:   /* the one shape the sim runs has its counts here; the unit refuses the others by name */
        k = d->m == 16 && d->n == 8 && d->k == 16 ? "V4 v4 v2 v4" : "V v v v", nm = "d, a, b, c";
        break;
    case I_VOTE: k = d->flags & F_BALLOT ? "d p r" : "P p r", nm = "d, a, membermask"; break;
    case I_MATCH: k = d->flags & F_ALL ? "e r r" : "d r r", nm = "d, a, membermask"; break;
    case I_BAR_RED: k = d->flags & F_POPC ? "d r r? p" : "P r r? p", nm = "d, a{, b}, c"; break;
    case I_TC_LD: case I_TC_ST: {   /* registers: as many as the shape and count give each thread (.pack too) */
        int x2 = d->tmshape == TS_16X32BX2, st = d->op == I_TC_ST, shape = d->tmshape - TS_32X32B;
        int regs = shape >= 0 && shape < TM_SHAPES ? sim_tmem_shape_regs(shape, d->num) : -1;
        if (regs < 1) {
            snprintf(why, n, "%s: its shape with .x%d is none it takes (.32x32b, .16x64b, .16x32bx2 up to .x128, .16x128b "
                     "up to .x64, .16x256b up to .x32, counts powers of two)", op, d->num);
            return -1;
        }
        snprintf(kb, sizeof kb, st ? (x2 ? "a i v%d" : "a v%d") : (x2 ? "V%d a i" : "V%d a"), regs), k = kb;
        nm = st ? (x2 ? "[taddr], immHalfSplitoff, b" : "[taddr], b") : (x2 ? "d, [taddr], immHalfSplitoff" : "d, [taddr]");
        break;
    }
    case I_TC_MMA:
        if (d->flags & F_WS) {
            k = "a A r r p r?";
            nm = "[d-tmem], a-desc or [a-tmem], b-desc, idesc, enable-input-d{, zero-column-mask-desc}";
        } else {   /* the disable-output-lane vector: 4 registers per CTA */
            snprintf(kb, sizeof kb, "a A r r v%d? p i?", 4 * (d->cta_group ? d->cta_group : 1)), k = kb;
            nm = "[d-tmem], a-desc or [a-tmem], b-desc, idesc{, disable-output-lane}, enable-input-d{, scale-input-d}";
        }
        break;
    case I_TC_COMMIT: k = "a", nm = "[mbar]"; break;
    case I_BULK_TENSOR: case I_REDUCE_BULK_TENSOR:
        if (d->flags & F_IM2COL) return 1;   /* refused as not modelled when it runs */
        /* .dim coordinates, or a column and four rows for .tile::gather4 */
        if (to_shared && d->op == I_BULK_TENSOR) snprintf(kb, sizeof kb, "a t%d a", coords), k = kb;
        else if (to_global) snprintf(kb, sizeof kb, "t%d a", coords), k = kb;
        nm = to_global ? "[tensorMap, {coordinates}], [src]" : "[dst], [tensorMap, {coordinates}], [mbar]";
        break;
    case I_CLC_TRY_CANCEL: k = "a a", nm = "[addr], [mbar]"; break;
    case I_ST_ASYNC:
        if (d->space[0] != SP_SHARED_CLUSTER) {   /* ptxas 13.0 takes .shared::cta; the sim, .shared::cluster only */
            snprintf(why, n, "%s into .shared::cta is not modelled by the sim (it stores into .shared::cluster)", op);
            return -1;
        }
        if (d->vec > 1) snprintf(kb, sizeof kb, "a v%d a", d->vec), k = kb;
        else k = "a r a";
        nm = "[addr], b, [remote_bar]";
        break;
    case I_CLC_QUERY:
        k = d->sub == SUB_IS_CANCELED ? "P d" : d->sub == SUB_CTAID ? "V4 d" : "d d", nm = "d, response";
        break;
    case I_PREFETCH_TENSOR:
        if (d->flags & F_IM2COL) {
            snprintf(why, n, "%s .im2col is not modelled by the sim", op);
            return -1;
        }
        snprintf(kb, sizeof kb, "t%d", d->dim), k = kb, nm = "[tensorMap, {coordinates}]";
        break;
    case I_BULK: case I_REDUCE_BULK:
        if (to_shared && d->op == I_BULK) k = "a a r a", nm = "[dst], [src], size, [mbar]";
        else if (peer) k = "a a r a", nm = "[dst], [src], size, [mbar]";
        else if (to_global) k = "a a r", nm = "[dst], [src], size";
        break;
    default:
        if (!kForm[d->op].kinds) return 1;
        k = kForm[d->op].kinds, nm = kForm[d->op].names;
    }
    if (!k) {
        snprintf(why, n, "%s copies %s; .%s.%s is not one of those", op,
                 d->op == I_BULK || d->op == I_REDUCE_BULK
                     ? ".shared::cluster/.shared::cta <- .global, .shared::cluster <- .shared::cta or .global <- .shared::cta"
                     : d->op == I_BULK_TENSOR ? ".shared::cluster/.shared::cta <- .global or .global <- .shared::cta"
                                              : ".global <- .shared::cta",
                 d->nspace == 2 ? (d->space[0] == SP_GLOBAL ? "global" : "shared") : "?",
                 d->nspace == 2 ? (d->space[1] == SP_GLOBAL ? "global" : "shared") : "?");
        return -1;
    }
    int copy = d->op == I_BULK_TENSOR || d->op == I_BULK || d->op == I_REDUCE_BULK_TENSOR || d->op == I_REDUCE_BULK;
    if (copy && !!(d->flags & F_COMPLETE_TX) != !to_global) {
        snprintf(why, n, "%s: a copy %s completes through %s", op, to_global ? "into global memory" : "into shared memory",
                 to_global ? ".bulk_group" : ".mbarrier::complete_tx::bytes");
        return -1;
    }
    if ((d->flags & F_MULTICAST) && (to_global || peer)) {
        snprintf(why, n, "%s: .multicast::cluster is for copies from global into shared memory", op);
        return -1;
    }
    /* a multicast copy's ctaMask (try_cancel's .multicast::cluster::all names no mask) */
    int mc = (d->flags & F_MULTICAST) && d->op != I_CLC_TRY_CANCEL, hint = (d->flags & F_CACHE_HINT) != 0;
    snprintf(b->kinds, sizeof b->kinds, "%s%s%s", k, mc ? " r" : "", hint ? " r" : "");
    snprintf(b->names, sizeof b->names, "%s%s%s", nm, mc ? ", ctaMask" : "", hint ? ", cache-policy" : "");
    return 0;
}

/* One kind of a form: its letter, the vector count it wants (0: any), whether it may be left out. */
typedef struct { char kind; int count, optional; } Want;

static int parse_kinds(const char *s, Want *w, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        if (*s == ' ') { s++; continue; }
        Want x = {*s++, 0, 0};
        while (*s >= '0' && *s <= '9') x.count = x.count * 10 + (*s++ - '0');
        if (*s == '?') x.optional = 1, s++;
        w[n++] = x;
    }
    return n;
}

static int is_pred(const SimFunc *f, int32_t slot) { return slot >= 0 && f->slot_bits[slot] == 1; }

/* Whether n slots of f->vec from first hold the sink _ (a source read it as 0). */
static int has_sink(const SimFunc *f, int32_t first, int n)
{
    for (int k = 0; k < n; k++)
        if (f->vec[first + k] == -1) return 1;
    return 0;
}

/* Whether n slots of f->vec from first hold an element that is no register (a constant, a special register). */
static int has_value(const SimFunc *f, int32_t first, int n)
{
    for (int k = 0; k < n; k++)
        if (f->vec[first + k] <= -2) return 1;
    return 0;
}

/* The instructions whose units read a source vector's elements one by one (sim_vec_elem), so that an element may
 * be a constant or a special register as ptxas takes it: mov's pack, st, st.async, red and atom, tcgen05.st's
 * values and the tensor copies' coordinates. The others (mma, wgmma, ldmatrix, stmatrix, ...) read register slots. */
static int reads_vec_values(int op)
{
    return op == I_MOV || op == I_ST || op == I_ST_ASYNC || op == I_RED || op == I_ATOM || op == I_TC_ST ||
           op == I_BULK_TENSOR || op == I_REDUCE_BULK_TENSOR || op == I_PREFETCH_TENSOR;
}

/* Where ptxas takes a negated predicate (!p): any operand read as a predicate (selp's, setp's and bar.red's c,
 * vote's source) and the sources of a .pred instruction (and, or, xor, not, mov); no destination, no other value. */
static int takes_negated(const SimInsn *in, const Want *w)
{
    if (w->kind == 'p') return 1;
    const IsaInsn *d = &in->d;
    return (w->kind == 'r' || w->kind == 'R') && d->ntype && d->type[0] == T_PRED;
}

static int fits(const SimFunc *f, const SimInsn *in, const SimOpnd *o, const Want *w)
{
    if (o->neg && !takes_negated(in, w)) return 0;
    int reg = o->kind == SO_REG, pair = (reg || o->kind == SO_SINK) && o->reg2 >= 0;
    int value = (reg || o->kind == SO_IMM || o->kind == SO_SREG || o->kind == SO_SYM) && !pair;
    int vec = o->kind == SO_VEC && (!w->count || o->n == w->count), addr = o->kind == SO_ADDR && !o->n;
    /* a destination vector's elements are registers or _; a source's may be values where its unit reads them so */
    if (o->kind == SO_VEC && has_value(f, o->reg, o->n) && (w->kind == 'V' || w->kind == 'D' || !reads_vec_values(in->d.op)))
        return 0;
    if (o->kind == SO_ADDR && o->n && has_value(f, o->reg2, o->n) && !reads_vec_values(in->d.op)) return 0;
    switch (w->kind) {
    case 'd': return reg && !pair;
    case 'e': return reg && (!pair || is_pred(f, o->reg2));
    case 'E': return (reg || o->kind == SO_SINK) && pair && is_pred(f, o->reg2);
    case 'P': return reg && !pair && is_pred(f, o->reg);
    case 'Q': return reg && is_pred(f, o->reg) && (!pair || is_pred(f, o->reg2));
    case '_': return (reg || o->kind == SO_SINK) && !pair;
    case 'S': return o->kind == SO_SINK && !pair;
    case 'r': return value;
    case 'p': return (reg && !pair && is_pred(f, o->reg)) || o->kind == SO_IMM;
    case 'i': return o->kind == SO_IMM;
    case 'a': return addr;
    case 'A': return addr || value;
    case 't': return o->kind == SO_ADDR && o->n && (!w->count || o->n == w->count) && !has_sink(f, o->reg2, o->n);
    case 'v': return vec && !has_sink(f, o->reg, o->n);
    case 'V': return vec;
    case 'D': return (reg && !pair) || vec;
    case 'R': return value || (vec && !has_sink(f, o->reg, o->n));
    case 'l': return o->kind == SO_LABEL;
    }
    return 0;
}

/* Whether operands from oi on take kinds from wi on, an optional kind taken or left out. */
static int match(const SimFunc *f, const SimInsn *in, const Want *w, int nw, int wi, int oi)
{
    if (wi == nw) return oi == in->nops;
    if (oi < in->nops && fits(f, in, &in->o[oi], &w[wi]) && match(f, in, w, nw, wi + 1, oi + 1)) return 1;
    return w[wi].optional && match(f, in, w, nw, wi + 1, oi);
}

static void want_text(const Want *w, char *out, size_t n)
{
    static const char *const kText[][2] = {
        {"d", "a register"}, {"e", "a register (or d|p)"}, {"E", "a register or _ with a predicate (d|p)"},
        {"P", "a predicate register"}, {"Q", "a predicate register (or p|q)"}, {"_", "a register or _"}, {"S", "_"},
        {"r", "a register or a constant"}, {"p", "a predicate or a constant"}, {"i", "a constant"},
        {"a", "an address [...]"}, {"A", "an address [...], a register or a constant"},
        {"D", "a register or a vector {...}"},
        {"R", "a register, a constant or a vector {...}"}, {"l", "a label"}};
    char cnt[24] = "";
    if (w->count) snprintf(cnt, sizeof cnt, " of %d", w->count);
    if (w->kind == 'v' || w->kind == 'V') {
        snprintf(out, n, "a vector%s {...}%s", cnt, w->kind == 'v' ? " of registers (no _: it is read)" : "");
        return;
    }
    if (w->kind == 't') {
        snprintf(out, n, "a tensor address [map, {coordinates}] with %d coordinates (no _ among them)", w->count);
        return;
    }
    for (size_t i = 0; i < sizeof kText / sizeof kText[0]; i++)
        if (kText[i][0][0] == w->kind) { snprintf(out, n, "%s", kText[i][1]); return; }
    snprintf(out, n, "?");
}

static void have_text(const SimFunc *f, const SimOpnd *o, char *out, size_t n)
{
    int pair = (o->kind == SO_REG || o->kind == SO_SINK) && o->reg2 >= 0;
    switch (o->kind) {
    case SO_REG:
        snprintf(out, n, "%s%s", o->neg ? "a negated predicate (!p)" : is_pred(f, o->reg) ? "a predicate register" : "a register",
                 pair ? " with |p" : "");
        return;
    case SO_IMM: snprintf(out, n, "a constant"); return;
    case SO_SREG: snprintf(out, n, "a special register"); return;
    case SO_ADDR:
        if (o->n) snprintf(out, n, "a tensor address with %d coordinates", o->n);
        else snprintf(out, n, "an address");
        return;
    case SO_VEC:
        snprintf(out, n, "a vector of %d%s", o->n, has_value(f, o->reg, o->n) ? " holding a constant or special register" : "");
        return;
    case SO_LABEL: snprintf(out, n, "a label (or an undeclared name)"); return;
    case SO_SYM: snprintf(out, n, "a symbol"); return;
    default: snprintf(out, n, pair ? "_|p" : "_"); return;
    }
}

/* What the text fixes beyond the kinds: cp.async's size, setmaxnreg's count, a wait_group's N, a mov's one
 * vector side (pack or unpack: two vectors were a silent no-op). */
static int values(const SimInsn *in, char *why, size_t n)
{
    const IsaInsn *d = &in->d;
    int64_t v = in->nops ? in->o[d->op == I_CP_ASYNC ? 2 : 0].imm : 0;
    switch (d->op) {
    case I_MOV:
        if (in->o[0].kind != SO_VEC || in->o[1].kind != SO_VEC) return 0;
        snprintf(why, n, "mov takes a vector on one side only (it packs or unpacks)");
        return -1;
    case I_CP_ASYNC:
        if ((v == 4 || v == 8 || v == 16) && (d->cacheop != CO_CG || v == 16)) return 0;
        snprintf(why, n, "cp.async cp-size %lld: 4, 8 or 16 bytes (.cg: 16)", (long long)v);
        return -1;
    case I_SETMAXNREG:
        if (v >= 24 && v <= 256 && v % 8 == 0) return 0;
        snprintf(why, n, "setmaxnreg takes 24 to 256 registers in steps of 8, not %lld", (long long)v);
        return -1;
    case I_CP_ASYNC_WAIT: case I_BULK_WAIT: case I_WGMMA_WAIT:
        if (v >= 0) return 0;
        snprintf(why, n, "%s N is %lld: the number of groups left pending, >= 0", isa_base_text(d->op), (long long)v);
        return -1;
    }
    return 0;
}

int sim_form_check(const SimFunc *f, const SimInsn *in, char *why, size_t n)
{
    if (in->d.op == I_WGMMA_MMA) return sim_wgmma_form(f, in, why, n);
    Built b;
    int rc = build(&in->d, &b, why, n);
    if (rc) return rc < 0 ? -1 : 0;
    Want w[SIM_MAX_OPNDS + 4] = {{0}};
    int nw = parse_kinds(b.kinds, w, SIM_MAX_OPNDS + 4), lo = 0;
    if (match(f, in, w, nw, 0, 0)) return values(in, why, n);
    const char *op = isa_base_text(in->d.op);
    for (int i = 0; i < nw; i++) lo += !w[i].optional;
    if (in->nops < lo || in->nops > nw) {
        if (!nw) snprintf(why, n, "%s takes no operand, found %d", op, in->nops);
        else if (lo == nw) snprintf(why, n, "%s takes %d operand%s (%s), found %d", op, nw, nw > 1 ? "s" : "", b.names, in->nops);
        else snprintf(why, n, "%s takes %d to %d operands (%s), found %d", op, lo, nw, b.names, in->nops);
        return -1;
    }
    /* the first operand that fits no kind, the optional ones taken where they fit */
    char want[96], have[64];
    for (int oi = 0, wi = 0; oi < in->nops && wi < nw; oi++, wi++) {
        while (wi < nw - 1 && w[wi].optional && !fits(f, in, &in->o[oi], &w[wi])) wi++;
        if (fits(f, in, &in->o[oi], &w[wi])) continue;
        want_text(&w[wi], want, sizeof want), have_text(f, &in->o[oi], have, sizeof have);
        snprintf(why, n, "%s operand %d must be %s, not %s (%s takes %s)", op, oi + 1, want, have, op, b.names);
        return -1;
    }
    snprintf(why, n, "%s takes %s", op, b.names);
    return -1;
}
