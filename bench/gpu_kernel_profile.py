#!/usr/bin/env python3
"""Where a CUDA decode step's device time goes, from the CUPTI kernel records of a trace
(`driftscope run --device cuda --kernels on`, docs/trace-format.md "/kernels").

    bench/gpu_kernel_profile.py TRACE.h5 [TRACE.h5 ...] [--json OUT.json]

For each trace: the decode passes (pass 2 on; pass 0 is the prompt's and pass 1 the first decode
step, which records the CUDA graph), their summed kernel time per step against the run's batch, and
per op label the device time per step, launches per step and the time per launch, largest first.
The sum of kernel times per step is what a step costs when no launch gap is left (CUDA graphs):
set beside the weight bytes over the copy bandwidth (bench_gpu_decode), it says how far each op is
from the memory-bandwidth limit.
"""

import argparse
import collections
import json

import h5py
import numpy as np


def profile(path):
    with h5py.File(path, "r") as f:
        k = f["kernels"]
        passes = k["pass"][:]
        dur = k["duration_ns"][:]
        ops = k["op"].asstr()[:]
        names = k["name"].asstr()[:]
        config = json.loads(f["meta"].attrs["config_json"])
    sel = passes >= 2
    steps = len(np.unique(passes[sel]))
    if steps == 0:
        raise SystemExit(f"{path}: no decode pass after the first (run with -n 3 or more)")
    per_op = collections.defaultdict(lambda: [0, 0, set()])
    for op, name, d in zip(ops[sel], names[sel], dur[sel]):
        e = per_op[op]
        e[0] += int(d)
        e[1] += 1
        e[2].add(name.split("(")[0][:60])
    rows = [
        {
            "op": op,
            "us_per_step": t / steps / 1e3,
            "launches_per_step": c / steps,
            "us_per_launch": t / c / 1e3,
            "kernels": sorted(n),
        }
        for op, (t, c, n) in per_op.items()
    ]
    rows.sort(key=lambda r: -r["us_per_step"])
    return {
        "trace": path,
        "batch": config.get("batch"),
        "decode_steps": steps,
        "kernel_us_per_step": float(dur[sel].sum()) / steps / 1e3,
        "launches_per_step": int(sel.sum()) / steps,
        "ops": rows,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--json")
    args = ap.parse_args()
    out = [profile(p) for p in args.traces]
    for p in out:
        print(
            f"{p['trace']}: batch {p['batch']}, {p['decode_steps']} decode steps, "
            f"{p['kernel_us_per_step']:.1f} us of kernels per step "
            f"({p['launches_per_step']:.0f} launches)"
        )
        for r in p["ops"]:
            print(
                f"  {r['op']:14s} {r['us_per_step']:8.1f} us/step {r['launches_per_step']:5.0f} "
                f"launches {r['us_per_launch']:8.2f} us each  {', '.join(r['kernels'])}"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
