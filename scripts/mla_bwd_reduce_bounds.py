#!/usr/bin/env python3
"""Upper-bound variants of the wgmma mla_bwd set for timing where its dkv reductions should be issued
(BENCHMARKS.md, 2026-11-29; docs/design/mla_bwd_wgmma_pair.md). Each is the landed PTX edited; dkv is wrong in all
five, so time them with `ptxgen bench --ptx`, never check them:

  E0  the consumers' reductions switched off by a run-time-false guard (scripts/ptx_off.py's edit): everything
      else, the products and the lane exchange included, still runs.
  E   E0, and the producer warpgroup issuing the same volume of reductions right after each gather lands: each
      thread 72 `red.global.add.v4.f32` of constants on its 4 rows of the step, 8 lanes a 128-byte line.
  S   staged: the consumers store each value they would reduce into shared memory (`st.shared.v4.f32`, each thread
      over its own 16 bytes of the dS and P tiles: the cost of staging, not its data), and the producer's threads
      add the step's rows from shared memory by `cp.reduce.async.bulk` (one 128-byte segment a copy, 9 a thread), a
      bulk group a step, waiting for the last step's group to be read before the next.
  B   E0, and the producer adding the step's rows from shared memory in 1152-byte bulk reduces (two a row, 128 a
      step instead of S's 1152 copies of 128 bytes; no staging stores): the reducing role of the CTA-pair plan.
  W   S's staging stores and B's wide bulk reduces together: staging at the cost the consumers would pay, reduced
      in B's few large copies.
  L   the landed kernel with the slot freed at the end of each step, after its dkv reductions, not after dq's
      products: the next step's gather no longer runs under the dkv phase. Right (only slower): it checks.
  K   the one-CTA plan that stages dkv in the slot of gathered rows once dq's products are done: W's stores, L's late
      free, and the producer's wide copies of the step issued as soon as the slot is free, read before it gathers
      the next step into the same bytes.

usage: scripts/mla_bwd_reduce_bounds.py MAIN.ptx OUTDIR   (MAIN.ptx: `ptxgen --arch sm_90a --kernel mla_bwd`,
       default tile; writes OUTDIR/E0.ptx, E.ptx, S.ptx, B.ptx, W.ptx, L.ptx and K.ptx). The edits find the
       producer's loop by the generator's current shape and stop with a message where it has changed."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptx_off import entry_span, switch_off   # noqa: E402

ENTRY = 'mla_bwd_main_wg_'
ROW_BYTES = 576 * 4            # a dkv_accum row, fp32
SEGS = ROW_BYTES // 128        # 18 lines a row


def die(what):
    sys.exit(f'mla_bwd_reduce_bounds: the PTX no longer has {what}; update the script to the generator')


def need(m, what):
    if not m:
        die(what)
    return m


def plan_offsets():
    """The dS and P tiles' offsets from `ptxgen --plan` (the staging of variant S goes over them)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    txt = subprocess.run([os.path.join(root, 'ptxgen'), '--arch', 'sm_90a', '--kernel', 'mla_bwd', '--plan'],
                         capture_output=True, text=True, check=True).stdout
    off = {}
    for name in ('dS', 'P'):
        off[name] = int(need(re.search(rf'^\s+{name}\s+(\d+)\s+\d+\s+8192', txt, re.M), f'a {name} region')[1])
    return off


def producer_regs(body):
    """The producer's per-step index registers (4 rows a thread), its column chunk and s_kv's register."""
    rows = re.findall(r'\tmov\.b32 (%r\d+), -1;\n\tmad\.wide\.u32 %rd\d+, %r\d+, 4, %rd\d+;\n'
                      r'\t@%p\d+ ld\.global\.nc\.b32 \1,',
                      body)
    if len(rows) != 4:
        die("the producer's four index loads a step")
    chunk = need(re.search(r'\trem\.u32 (%r\d+), %r\d+, 8;', body), "the producer's 16-byte chunk of a row")[1]
    skv = need(re.search(r'\tld\.param\.u32 (%r\d+), \[s_kv\];', body), 's_kv in the producer')[1]
    return rows, chunk, skv


def after_arrive(body, ins):
    """ins placed right after the producer's arrival on the slot (its gather of the step has landed)."""
    m = need(re.search(r'\tcp\.async\.wait_group 0;\n\tfence\.proxy\.async\.shared::cta;\n'
                       r'\tmbarrier\.arrive\.shared::cta\.b64 [^\n]+\n', body), "the producer's arrival on the slot")
    return body[:m.end()] + '\n'.join(ins) + '\n' + body[m.end():]


def step_rows(body, tag, chunk_bytes):
    """The producer thread's 4 rows of the step in dkv_accum: whether each is valid (%p_TAG0..3) and where the
    thread's chunk of it starts (%rd_TAG0..3, chunk_bytes a chunk). Returns the instructions and the chunk's
    register."""
    rows, chunk, skv = producer_regs(body)
    ins = [f'\tld.param.u64 %rd_{tag}, [dkv_accum];', f'\tcvta.to.global.u64 %rd_{tag}, %rd_{tag};']
    for i, r in enumerate(rows):
        ins += [f'\tsetp.lt.u32 %p_{tag}{i}, {r}, {skv};', f'\tmad.wide.u32 %rd_{tag}{i}, {r}, {ROW_BYTES}, %rd_{tag};',
                f'\tmad.wide.u32 %rd_{tag}{i}, {chunk}, {chunk_bytes}, %rd_{tag}{i};']
    return ins, chunk


def add_decls(body, decls):
    return body.replace('{\n', '{\n' + decls, 1)


def variant_e(body):
    ins, _ = step_rows(body, 'e', 16)
    ins.append('\tmov.f32 %f_e, 0f3F800000;')
    for s in range(SEGS):
        for i in range(4):
            ins.append(f'\t@%p_e{i} red.global.add.v4.f32 [%rd_e{i}+{128 * s}], {{%f_e, %f_e, %f_e, %f_e}};')
    decls = '\t.reg .pred %p_e<4>;\n\t.reg .b64 %rd_e, %rd_e<4>;\n\t.reg .f32 %f_e;\n'
    return add_decls(after_arrive(body, ins), decls)


def staging_stores(body, off):
    """Every consumer reduction turned into a store into the thread's own 16 bytes of the dS and P tiles (the cost
    of staging, not its data); uses %r_s0 and %r_s1, declared by the caller."""
    m = need(re.search(r'\tsetmaxnreg\.inc\.sync\.aligned\.u32 \d+;\n', body), "the consumers' setmaxnreg")
    setup = ['\tmov.u32 %r_s0, %tid.x;', '\tand.b32 %r_s0, %r_s0, 1023;', '\tmov.u32 %r_s1, ptxgen_smem;',
             '\tmad.lo.u32 %r_s1, %r_s0, 16, %r_s1;', f'\tadd.u32 %r_s1, %r_s1, {off["dS"]};']
    body = body[:m.end()] + '\n'.join(setup) + '\n' + body[m.end():]
    body, n = re.subn(r'@!?%p\d+ red\.global\.add\.v4\.f32 \[[^\]]+\], (\{[^}]+\});',
                      r'st.shared.v4.f32 [%r_s1], \1;', body)
    if n != 72:
        die(f"the consumers' 72 reductions (found {n})")
    return body


def variant_s(body, off):
    body = staging_stores(body, off)
    # producer: the step's rows added from shared memory (128 bytes of the P tile a thread), one bulk group a step
    rows, chunk = step_rows(body, 's', 128)
    ins = rows + [
        '\tmov.u32 %r_s2, %tid.x;', '\tand.b32 %r_s2, %r_s2, 63;', '\tmov.u32 %r_s3, ptxgen_smem;',
        '\tmad.lo.u32 %r_s3, %r_s2, 128, %r_s3;', f'\tadd.u32 %r_s3, %r_s3, {off["P"]};',
        f'\tsetp.lt.u32 %p_s4, {chunk}, {SEGS - 16};']   # the third segment of a row: chunks 0 and 1 only
    for i in range(4):
        for j in range(3):
            guard = f'%p_s{i}'
            if j == 2:
                ins.append(f'\tand.pred %p_s5, %p_s{i}, %p_s4;')
                guard = '%p_s5'
            ins.append(f'\t@{guard} cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 '
                       f'[%rd_s{i}+{1024 * j}], [%r_s3], 128;')
    return add_decls(bulk_group_a_step(body, ins),
                     '\t.reg .pred %p_s<6>;\n\t.reg .b32 %r_s<4>;\n\t.reg .b64 %rd_s, %rd_s<4>;\n')


def late_free(body):
    """Each consumer copy's arrival on the slot's empty barrier (after dq's products) moved to the end of its step."""
    out, pos, n = [], 0, 0
    release = r'\twgmma\.wait_group\.sync\.aligned 1;\n(\tmbarrier\.arrive\.shared::cta\.b64 [^\n]+\n)'
    for m in re.finditer(release, body):
        end = need(re.compile(r'\tadd\.u32 (%r\d+), \1, 1;\n\tbra\.uni \$L\d+;').search(body, m.end()),
                   "a consumer step's end")
        out += [body[pos:m.start(1)], body[m.end(1):end.start()], m[1]]
        pos, n = end.start(), n + 1
    if n != 2:
        die(f"the two consumer copies' slot releases (found {n})")
    return ''.join(out) + body[pos:]


def before_gather(body, ins):
    """ins placed where the producer has waited for the slot to be free, before it gathers into it."""
    m = need(re.search(r'(\$L\d+):\n\tmbarrier\.try_wait\.parity\.shared::cta\.b64 (%p\d+), [^\n]+\n\t@!\2 bra \1;\n',
                       body), "the producer's wait for the slot")
    if m.start() > body.index('setmaxnreg.inc'):
        die("the producer's wait for the slot ahead of the consumers' code")
    return body[:m.end()] + '\n'.join(ins) + '\n' + body[m.end():]


def producer_exit_wait(body):
    """A wait for the producer's last bulk group before it leaves its branch."""
    m = need(re.search(r'\n(\$L\d+:)\n\tbra\.uni \$L\d+;\n\$L\d+:\n\tsetmaxnreg\.inc', body), "the producer's exit")
    return body[:m.end(1)] + '\n\tcp.async.bulk.wait_group 0;' + body[m.end(1):]


def bulk_group_a_step(body, ins):
    """ins (the producer's bulk reduces of a step) placed after its arrival as one bulk group, once the last step's
    group has been read, and a wait for the last group before the producer leaves its branch."""
    return producer_exit_wait(after_arrive(body, ['\tcp.async.bulk.wait_group.read 0;'] + ins +
                                           ['\tcp.async.bulk.commit_group;']))


WIDE_DECLS = '\t.reg .pred %p_b<6>;\n\t.reg .b32 %r_b0;\n\t.reg .b64 %rd_b, %rd_b<4>;\n'


def wide_ins(body, off):
    """The producer's 1152-byte bulk reduces of the step's rows from shared memory, two a row (the columns one CTA of
    docs/design/mla_bwd_wgmma_pair.md's pair owned): the threads of 16-byte chunks 0 and 1."""
    rows, chunk = step_rows(body, 'b', ROW_BYTES // 2)
    ins = rows + [
        '\tmov.u32 %r_b0, ptxgen_smem;', f'\tadd.u32 %r_b0, %r_b0, {off["P"]};', f'\tsetp.lt.u32 %p_b4, {chunk}, 2;']
    for i in range(4):
        ins += [f'\tand.pred %p_b5, %p_b{i}, %p_b4;',
                f'\t@%p_b5 cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd_b{i}], [%r_b0], '
                f'{ROW_BYTES // 2};']
    return ins


def wide_reduces(body, off):
    """The producer adding each step's rows by wide_ins once they landed, a bulk group a step."""
    return add_decls(bulk_group_a_step(body, wide_ins(body, off)), WIDE_DECLS)


def variant_k(body, off):
    body = staging_stores(late_free(body), off)
    ins = wide_ins(body, off) + ['\tcp.async.bulk.commit_group;', '\tcp.async.bulk.wait_group.read 0;']
    return add_decls(producer_exit_wait(before_gather(body, ins)), WIDE_DECLS + '\t.reg .b32 %r_s<2>;\n')


def variant_w(body, off):
    return add_decls(wide_reduces(staging_stores(body, off), off), '\t.reg .b32 %r_s<2>;\n')


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, outdir = sys.argv[1], sys.argv[2]
    text = open(src).read()
    start, end = entry_span(text, need(re.search(r'\.entry\s+' + ENTRY + r'\w*', text), 'the wgmma main kernel'))
    body = text[start:end]
    os.makedirs(outdir, exist_ok=True)
    e0, n = switch_off(body, re.compile(r'red\.global\.add\.v4\.f32'))
    if n != 72:
        die(f"the consumers' 72 reductions (found {n})")
    off = plan_offsets()
    for name, b in (('E0', e0), ('E', variant_e(e0)), ('S', variant_s(body, off)), ('B', wide_reduces(e0, off)),
                    ('W', variant_w(body, off)), ('L', late_free(body)), ('K', variant_k(body, off))):
        with open(os.path.join(outdir, name + '.ptx'), 'w') as f:
            f.write(text[:start] + b + text[end:])
    print(f'mla_bwd_reduce_bounds: E0, E, S, B, W, L, K in {outdir}')


if __name__ == '__main__':
    main()
