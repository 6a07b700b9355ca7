#!/usr/bin/env python3
"""Random `ptxgen check` runs: kernel, arch (so family), shape, features and tile drawn from one seed, each run against
the float64 reference on the given device. A run passes (exit 0), is refused (exit 2: a plan over a budget, a feature a
family lacks; the message is printed), or fails (anything else: a wrong result, a crash, a hang). Every line holds the
whole command, its --seed among it, so a failure re-runs by itself.

  scripts/random_checks.py --device sim --seconds 600 --seed 1          # small shapes, every family the sim runs
  scripts/random_checks.py --device cuda --size large --archs sm_90a,sm_90 --seconds 240
  scripts/random_checks.py --device cuda --archs sm_90a --wrap 'compute-sanitizer --tool racecheck --error-exitcode 3'

Ends with `N passed, N failed` (a clean refusal counts as passed; the line before says how many) and exits 1 if any
failed."""
import argparse
import random
import subprocess
import sys
import time

# Tile values worth drawing per (kernel, family); the rest of a tile stays the default. Values the plan refuses for
# some shapes are kept: the refusal is part of what is checked (exit 2 with a reason, never a crash).
TILES = {
    ("attn_fwd", "wgmma"): {"bm": [64, 128, 192], "bn": [64, 80, 128, 176], "stages": [2, 3], "pingpong": [0, 1],
                            "producer": [1, 4], "persist": [0, 1, 3, 132], "qbufs": [1, 2]},
    ("attn_fwd", "sync"): {"bm": [32, 64, 128], "bn": [32, 64, 128], "warps": [2, 4, 8]},
    ("attn_fwd", "tcgen05"): {"bn": [64, 128], "stages": [2, 3], "qtiles": [1, 2], "ctas": [1, 2], "poly": [0, 4]},
    ("attn_bwd", "wgmma"): {"bm": [64, 80, 128], "bn": [64, 128], "stages": [1, 2, 3], "deterministic": [0, 1],
                            "dqbufs": [1, 2]},
    ("attn_bwd", "sync"): {"bm": [64, 128], "bn": [64, 128], "warps": [4, 8], "deterministic": [0, 1]},
    ("attn_bwd", "tcgen05"): {"stages": [1, 2, 3], "deterministic": [0, 1]},
    ("mla_fwd", "sync"): {"bm": [16, 32, 64], "bn": [32, 64]},
    ("mla_fwd", "tcgen05"): {"bm": [16, 32]},
    ("mla_bwd", "wgmma"): {"deterministic": [0, 1]},
    ("mla_bwd", "sync"): {"bm": [16, 32, 64], "stages": [1, 2], "deterministic": [0, 1]},
    ("mla_bwd", "tcgen05"): {"bm": [16, 32, 128], "deterministic": [0, 1]},
}
FAMILY = {"sm_90a": "wgmma", "sm_100a": "tcgen05", "sm_103a": "tcgen05"}


def draw(r, archs, large):
    kern = r.choice(["attn_fwd", "attn_fwd", "attn_bwd", "attn_bwd", "mla_fwd", "mla_bwd"])
    arch = r.choice(archs)
    fam = FAMILY.get(arch, "sync")
    a = ["check", "--kernel", kern, "--arch", arch, "--seed", str(r.randrange(1 << 30))]
    if kern.startswith("attn"):
        hkv, group = r.choice([1, 1, 2, 3]), r.choice([1, 1, 2, 4])
        lens = [1, 2, 17, 63, 64, 65, 100, 128, 129, 190, 257]
        if large:
            lens += [500, 1000, 1023, 2049, 3000]
        sq, sk = r.choice(lens), r.choice(lens)
        hdims = [64, 128, 256] if kern == "attn_fwd" or fam != "sync" else [64, 128]
        a += ["--b", str(r.choice([1, 2, 3])), "--sq", str(sq), "--sk", str(sk), "--hq", str(hkv * group),
              "--hkv", str(hkv), "--hdim", str(r.choice(hdims))]
        if r.random() < 0.4:
            a.append("--causal")
        if r.random() < 0.3:
            a += ["--dtype", "fp16"]
        if r.random() < 0.2:
            a += ["--pad", str(r.choice([8, 16]))]
        x = r.random()
        seq_lens = [0, 1, 33, 70, 129] + ([700, 1500] if large else [])
        if x < 0.15:
            n = r.choice([1, 2, 3, 4])
            a += ["--varlen", ",".join(str(r.choice(seq_lens)) for _ in range(n))]
            if r.random() < 0.3:
                a += ["--varlen-k", ",".join(str(r.choice(seq_lens)) for _ in range(n))]
        elif x < 0.25:   # blocks of 128 fit most tiles; the others are refused unless they are whole tiles
            a += ["--block-m", str(r.choice([128, 128, 64, 160, 256])), "--block-n", str(r.choice([128, 128, 64, 256])),
                  "--block-mask", r.choice(["random:0.3", "random:0.7", "local:1", "random:0", "random:1"])]
            if r.random() < 0.3:
                a += ["--mask-heads", str(r.choice([1, 2, 3]))]
        elif x < 0.33 and kern == "attn_fwd":
            a += ["--page-size", str(r.choice([16, 32, 64, 128, 256]))]
            if r.random() < 0.3:
                a.append("--full-kv")
        elif x < 0.38 and kern == "attn_fwd":
            a += ["--split-kv"] + (["--splits", str(r.choice([1, 2, 3, 7]))] if r.random() < 0.5 else [])
    else:
        a += ["--sq", str(r.choice([1, 2, 5, 9] + ([64, 200] if large else []))),
              "--skv", str(r.choice([1, 2, 40, 300, 1000] + ([8192, 70000] if large else []))),
              "--hq", str(r.choice([1, 16, 20, 64, 100, 128])),
              "--topk", str(r.choice([1, 16, 64, 65, 128, 200, 256] + ([1024, 2048] if large else [])))]
        if r.random() < 0.3:
            a.append("--topk-length")
        if r.random() < 0.3:
            a += ["--dtype", "fp16"]
    keys = TILES.get((kern, fam), {})
    picked = [f"{k}={r.choice(v)}" for k, v in keys.items() if r.random() < 0.35]
    if picked:
        a += ["--tile", ",".join(picked)]
    return a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="sim")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--count", type=int, default=0, help="stop after this many runs (0: only the time limit)")
    ap.add_argument("--size", choices=["small", "large"], default="small")
    ap.add_argument("--archs", default="sm_80,sm_86,sm_90,sm_90a,sm_90a,sm_100a,sm_103a,sm_120")
    ap.add_argument("--ptxgen", default="./ptxgen")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--wrap", default="", help="a command each run goes under, e.g. 'compute-sanitizer --tool memcheck "
                    "--error-exitcode 3' (its findings then fail the run)")
    o = ap.parse_args()
    print(f"random_checks: seed {o.seed}, device {o.device}, size {o.size}", flush=True)
    r = random.Random(o.seed)
    end = time.time() + o.seconds
    n = {"pass": 0, "refused": 0, "FAIL": 0}
    while time.time() < end and (not o.count or sum(n.values()) < o.count):
        args = draw(r, o.archs.split(","), o.size == "large") + ["--device", o.device]
        t0 = time.time()
        try:
            p = subprocess.run(o.wrap.split() + [o.ptxgen] + args, capture_output=True, text=True, timeout=o.timeout)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            rc, out = None, f"timed out after {o.timeout} s"
        tag = "pass" if rc == 0 else "refused" if rc == 2 else "FAIL"
        n[tag] += 1
        print(f"{tag} ({time.time() - t0:.1f} s) {o.wrap + ' ' if o.wrap else ''}{o.ptxgen} {' '.join(args)}", flush=True)
        if rc != 0:
            lines = [l for l in out.strip().splitlines() if l.strip()]
            for l in (lines[-12:] if tag == "FAIL" else lines[-1:]):
                print("    " + l, flush=True)
    print(f"{n['pass']} checks passed and {n['refused']} refused with a reason (both count as passed below)", flush=True)
    print(f"{n['pass'] + n['refused']} passed, {n['FAIL']} failed", flush=True)
    return 1 if n["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
