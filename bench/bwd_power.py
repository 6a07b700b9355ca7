#!/usr/bin/env python3
"""Energy per backward: ours (wgmma, through libptxgen), cuDNN (PyTorch SDPA) and FA4 where carried, one process, one
GPU, the same tensors. Each side rests first (so that it starts below the power cap), then runs `--runs` backwards back
to back, each between two CUDA events; the GPU's energy counter (NVML, millijoules) is read around them. Prints, per
side: the median time of the first 5 runs and of the last half, the average power, joules per backward, TFLOP/J and
the SM clock NVML reads right after. The question it answers: does a side slow down because it meets the power cap
(its own time moves between its first and last runs), and how many FLOPs does each get from a joule.

usage: PYTHONPATH=python python3 bench/bwd_power.py [--shape b,s,hq,hkv,d,causal ...] [--runs N] [--rest S]
"""
import argparse, ctypes, statistics, time
import torch
from torch.nn.attention import SDPBackend
from bwd_peers import Fa4Bwd, flops, ours
from peer_bench import BwdPeer, expand_kv, fa4_func, forward_o_lse


class Nvml:
    """The few NVML calls this needs, through ctypes (libnvidia-ml ships with the driver)."""
    def __init__(self):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._ok(self.lib.nvmlInit_v2(), "nvmlInit")
        self.dev = ctypes.c_void_p()
        self._ok(self.lib.nvmlDeviceGetHandleByIndex_v2(torch.cuda.current_device(), ctypes.byref(self.dev)), "handle")

    @staticmethod
    def _ok(rc, what):
        if rc != 0: raise RuntimeError(f"NVML {what} failed: {rc}")

    def energy_mj(self):
        v = ctypes.c_ulonglong()
        self._ok(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.dev, ctypes.byref(v)), "energy")
        return v.value

    def sm_clock(self):
        v = ctypes.c_uint()
        self._ok(self.lib.nvmlDeviceGetClockInfo(self.dev, 1, ctypes.byref(v)), "clock")   # NVML_CLOCK_SM
        return v.value

    def throttle(self):
        v = ctypes.c_ulonglong()
        self._ok(self.lib.nvmlDeviceGetCurrentClocksEventReasons(self.dev, ctypes.byref(v)), "reasons")
        return v.value


def measure(nv, fn, runs, rest):
    time.sleep(rest)
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(runs)]
    e0, t0 = nv.energy_mj(), time.perf_counter()
    for a, b in ev:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    e1, t1 = nv.energy_mj(), time.perf_counter()
    clock, reasons = nv.sm_clock(), nv.throttle()
    ms = [a.elapsed_time(b) for a, b in ev]
    return ms, (e1 - e0) / 1e3, t1 - t0, clock, reasons


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", help="b,s,hq,hkv,d,causal")
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--rest", type=float, default=8.0, help="seconds idle before each side")
    a = ap.parse_args()
    nv = Nvml()
    torch.manual_seed(1234)
    fa4 = fa4_func()
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  cudnn {torch.backends.cudnn.version()}  "
          f"runs {a.runs}, rest {a.rest} s, seed 1234")
    print(f"{'shape':28s} {'side':6s} {'first5 ms':>9s} {'last ms':>8s} {'TFLOP/s':>8s} {'W':>6s} {'J/bwd':>7s} "
          f"{'TFLOP/J':>7s} {'MHz':>5s} {'reasons':>8s}")
    for spec in a.shape or ["4,4096,32,32,128,0", "4,4096,32,32,128,1"]:
        b, s, hq, hkv, d, causal = [int(x) for x in spec.split(",")]
        scale = d ** -0.5
        q = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(b, s, hkv, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        do = torch.randn(b, s, hq, d, device="cuda", dtype=torch.bfloat16)
        kx, vx = expand_kv(k, hq // hkv), expand_kv(v, hq // hkv)
        o, lse, _ = forward_o_lse(q, kx, vx, scale, bool(causal))
        t = dict(q=q, k=k, v=v, o=o, lse=lse, do=do, dq=torch.empty_like(q), dk=torch.empty_like(k),
                 dv=torch.empty_like(v))
        sides = {"ours": ours(t, bool(causal), "wgmma", None, scale),
                 "cudnn": BwdPeer(SDPBackend.CUDNN_ATTENTION, q, kx, vx, do, bool(causal), scale)}
        if fa4 is not None: sides["fa4"] = Fa4Bwd(fa4, q, k, v, do, bool(causal))
        f = flops(b, s, hq, d, causal)
        label = f"b{b} s{s} h{hq}/{hkv} d{d}{' causal' if causal else ''}"
        for name, fn in sides.items():
            for _ in range(3): fn()   # compile, first-touch
            ms, joules, wall, clock, reasons = measure(nv, fn, a.runs, a.rest)
            first, last = statistics.median(ms[:5]), statistics.median(ms[len(ms) // 2:])
            jb = joules / a.runs
            print(f"{label:28s} {name:6s} {first:9.3f} {last:8.3f} {f / last / 1e9:8.1f} {joules / wall:6.0f} "
                  f"{jb:7.3f} {f / jb / 1e12:7.3f} {clock:5d} {reasons:#8x}", flush=True)
            print(f"#   {name} runs in order (ms): " + " ".join(f"{x:.2f}" for x in ms[:12]) + " ... " +
                  " ".join(f"{x:.2f}" for x in ms[-6:]))


if __name__ == "__main__":
    main()
