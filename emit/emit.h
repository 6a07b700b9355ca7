/* PTX emission: typed virtual registers (ptxas allocates the real ones),
 * labels, guard predicates, and instructions checked against the op table in
 * ops.def. Generators never paste instruction text; they call e_ins(). */
#ifndef PTXGEN_EMIT_H
#define PTXGEN_EMIT_H
#include <stdint.h>
#include "buf.h"

typedef enum { RC_PRED, RC_B32, RC_B64, RC_F32, RC_B16, RC_COUNT } RegClass;
typedef struct { uint8_t cls; uint32_t id; } Reg;

typedef enum {
#define OP(name, text, sig) OP_##name,
#include "ops.def"
#undef OP
    OP_COUNT
} Op;

typedef enum { K_NONE, K_REG, K_IMM, K_IMMX, K_FIMM, K_ADDR, K_VEC, K_LABEL, K_SREG, K_SYM, K_TADDR } OpndKind;

/* Vector operands: up to 128 registers (tcgen05.ld .x128, wgmma n256 f32
 * accumulators). The operand points at the caller's array, which must live
 * until e_insn returns (V2/V4 are macros so their arrays live in the caller). */
#define VEC_MAX 128
typedef struct {
    uint8_t kind;
    uint16_t n;
    Reg r;              /* K_REG; K_ADDR base (unless sym) */
    int64_t imm;        /* K_IMM/K_IMMX value; K_ADDR byte offset */
    float f;            /* K_FIMM */
    const char *name;   /* K_SREG / K_SYM text; K_ADDR symbol base */
    const Reg *v;       /* K_VEC: n registers; K_TADDR: n coordinates */
} Opnd;

/* Register arrays the templates hand out (accumulators, fragments, row stats) live as long as the Emit:
 * blocks that never move, freed by e_free. */
typedef struct RegBlock RegBlock;
#define EMIT_FALLBACK_REGS 4096
typedef struct {
    Buf body;
    uint32_t nregs[RC_COUNT];
    int nlabels;
    int ninstr;
    RegBlock *blocks;
    int oom;                          /* memory ran out: the text is incomplete, the build reports it */
    Reg fallback[EMIT_FALLBACK_REGS]; /* where e_regs points once memory ran out, so emission goes on to the end */
} Emit;

/* n registers' slots (filled by the caller) that live until e_free; never NULL (after an allocation failure
 * they are scratch and e->oom is set). */
Reg *e_regs(Emit *e, int n);

Reg  e_reg(Emit *e, RegClass c);
int  e_label(Emit *e);                 /* a new label id */
void e_place(Emit *e, int label);      /* the label's position */
void e_comment(Emit *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One instruction. guard: a predicate register or (Reg){0xff, 0} for none. */
void e_insn(Emit *e, Reg guard, int neg, Op op, int n, const Opnd *ops);
/* The declarations of every register used so far, for the top of the body. */
void e_decls(const Emit *e, Buf *out);
void e_free(Emit *e);

/* Operand constructors. */
Opnd R(Reg r);
Opnd I(int64_t v);
Opnd IX(uint32_t v);                   /* integer immediate printed in hex */
Opnd FI(float f);                      /* printed exactly: 0fXXXXXXXX */
Opnd A(Reg base, int64_t off);         /* [base+off] */
Opnd AS(const char *sym);              /* [sym] */
Opnd L(int label);
Opnd SR(const char *sreg);             /* "%tid.x" */
Opnd SYM(const char *sym);
Opnd V(int n, const Reg *regs);
/* A TMA tensor address: [map, {c0, .., c(n-1)}] (map: a 64-bit generic address of the tensor map). */
Opnd TA(Reg map, int n, const Reg *coords);
#define V2(a, b) V(2, (Reg[]){(a), (b)})
#define V4(a, b, c, d) V(4, (Reg[]){(a), (b), (c), (d)})

#define NOGUARD ((Reg){0xff, 0})
#define OPNDS(...) (int)(sizeof((Opnd[]){__VA_ARGS__}) / sizeof(Opnd)), (Opnd[]){__VA_ARGS__}
/* INS(e, ADD_U32, R(d), R(a), I(4))  ->  add.u32 %r.., %r.., 4; */
#define INS(e, op, ...) e_insn((e), NOGUARD, 0, OP_##op, OPNDS(__VA_ARGS__))
#define INS0(e, op) e_insn((e), NOGUARD, 0, OP_##op, 0, NULL)
/* INSP(e, p, 0, op, ...)  ->  @%p op ...;   INSP(e, p, 1, ...) -> @!%p */
#define INSP(e, p, neg, op, ...) e_insn((e), (p), (neg), OP_##op, OPNDS(__VA_ARGS__))

const char *op_text(Op op);
const char *op_sig(Op op);     /* the signature letters above, destination first */
#endif
