#!/usr/bin/env python3
"""Switch instructions off in a PTX file for an upper-bound timing (what a kernel costs without them), keeping what
feeds them. Deleting the lines lets ptxas drop every instruction whose results only they read: 2026-11-25's mla_bwd
"without its reductions" (4.18 ms) also lost its dkv products and lane exchanges that way, where the reductions
switched off by a predicate gave 6.0 ms (BENCHMARKS.md, 2026-11-29). Here each matching instruction in the named
entries gets a guard predicate that is false at run time (%ctaid.x > 2^31 - 1), which ptxas cannot prove, so every
value the instruction reads is still computed. An existing guard is replaced (with --half, kept and ANDed). The
output's results are wrong; time it with `ptxgen bench --ptx`, never check it.

usage: scripts/ptx_off.py IN.ptx OUT.ptx REGEX [--entry SUBSTRING] [--half]
  REGEX: matched against each instruction without its guard (e.g. 'red\\.global\\.add')
  --entry: only entries whose name contains SUBSTRING (default: every entry)
  --half: off only in CTAs of even %ctaid.x, so half the CTAs still issue them (the bound of a change that halves
          them, such as a CTA pair adding its two partial sums in shared memory before one reduction)"""
import argparse
import re
import sys

GUARD = re.compile(r'^(\s*)(@!?%\w+\s+)?(.*)$')


def switch_off(body, regex, half=False):
    """body: one entry's text from its '{' on. Returns (new body, count)."""
    lines = body.split('\n')
    n = 0
    for i, line in enumerate(lines):
        m = GUARD.match(line)
        ins = m.group(3)
        if ins.startswith(('.', '//', '$', '{', '}')) or not ins or not regex.search(ins):
            continue
        old = m.group(2)
        if half and old:   # the instruction's own guard still holds where it runs (an invalid row's address, say)
            p = old.strip().lstrip('@!')
            both = (f'not.pred %p_and, {p}; and.pred %p_and, %p_and, %p_off;' if '!' in old
                    else f'and.pred %p_and, {p}, %p_off;')
            lines[i] = f'{m.group(1)}{{ .reg .pred %p_and; {both} @%p_and {ins} }}'
        else:
            lines[i] = f'{m.group(1)}@%p_off {ins}'
        n += 1
    if n:   # declared and set where the body opens, before any instruction can need it
        test = 'and.b32 %r_off, %r_off, 1;\n\tsetp.ne.u32 %p_off, %r_off, 0;' if half else \
               'setp.gt.u32 %p_off, %r_off, 2147483647;'
        lines.insert(1, '\t.reg .pred %p_off;\n\t.reg .b32 %r_off;\n\tmov.u32 %r_off, %ctaid.x;\n\t' + test)
    return '\n'.join(lines), n


def entry_span(text, m):
    """The body of the entry whose `.entry NAME` match is m: from its '{' to the next entry or the end."""
    start = text.index('{', m.end())
    end = text.find('.entry', start)
    return start, len(text) if end < 0 else end


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('src')
    ap.add_argument('dst')
    ap.add_argument('regex')
    ap.add_argument('--entry', default='')
    ap.add_argument('--half', action='store_true')
    a = ap.parse_args()
    text = open(a.src).read()
    regex = re.compile(a.regex)
    out, pos, total = [], 0, 0
    for m in re.finditer(r'\.entry\s+(\w+)', text):
        if a.entry not in m.group(1):
            continue
        start, end = entry_span(text, m)
        body, n = switch_off(text[start:end], regex, a.half)
        out += [text[pos:start], body]
        pos, total = end, total + n
        print(f'{m.group(1)}: {n} instructions switched off', file=sys.stderr)
    out.append(text[pos:])
    if not total:
        sys.exit(f'ptx_off: nothing matched {a.regex!r}')
    open(a.dst, 'w').write(''.join(out))


if __name__ == '__main__':
    main()
