#!/usr/bin/env python3
"""Gathers what scripts/gpu_run.sh measured on a lent GPU into one machine-readable file,
bench/results/gpu-YYYY-MM-DD.json (issue 49's figures), so a later run can be compared with it.

    scripts/gpu_results.py DIR [-o OUT.json]

DIR holds what gpu_run.sh wrote: device.txt (nvidia-smi's name, driver, memory), prefill.json
(bench_gpu_prefill), decode.json (bench_gpu_decode), transformers.json (bench/gpu_transformers.py),
observer.txt (the exit code of the [graphs] observer test), flips/flips.json
(scripts/gpu_flips.sh), certify.log (`run --certify`'s verdict in `show`), oom.log and steps.txt
(the memory refusal), kernel_profile.json (bench/gpu_kernel_profile.py), hf_ops.json
(scripts/hf_ops_compare.py). A missing piece is recorded as null, never guessed.
"""

import argparse
import datetime
import json
import os


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def load(path):
    text = read_text(path)
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    d = args.dir
    device = driver = None
    device_txt = read_text(os.path.join(d, "device.txt"))
    if device_txt is not None:
        parts = [p.strip() for p in device_txt.split("\n", 1)[0].split(",")]
        device, driver = parts[0], parts[1] if len(parts) > 1 else None
    prefill = load(os.path.join(d, "prefill.json"))
    decode = load(os.path.join(d, "decode.json"))
    hf = load(os.path.join(d, "transformers.json"))
    flips = load(os.path.join(d, "flips", "flips.json"))
    certify = read_text(os.path.join(d, "certify.log"))
    oom = read_text(os.path.join(d, "oom.log"))
    steps = read_text(os.path.join(d, "steps.txt")) or ""
    observer_txt = read_text(os.path.join(d, "observer.txt"))
    observer = None if observer_txt is None else observer_txt.strip() == "0"

    out = {
        "device": device,
        "driver": driver,
        "date": datetime.date.today().isoformat(),
        "decode_bs1_tok_s": None,
        "decode_bs1_limit_tok_s": None,
        "decode_bs1_fraction_of_limit": None,
        "prefill_tok_s": None,
        "prefill_fraction_of_cublaslt": None,
        "prefill_runs": prefill["runs"] if prefill else None,
        "batched_tok_s": {},
        "batched_fraction_of_limit": {},
        "batched_speedup_vs_transformers_sdpa": {},
        "transformers_tok_s": hf["runs"] if hf else None,
        "trace_overhead_default_probes": {},
        "trace_overhead_all_probes": {},
        "observer_identical": observer,
        "flips": flips,
        # run --certify on the device: show's verdict line, e.g. "identical (2299 logits rows, ...)"
        "certify": next(
            (ln.split(None, 1)[1] for ln in (certify or "").splitlines() if ln.startswith("certify")),
            None,
        ),
        # the run that cannot fit: refused with exit 2 and no trace left behind
        "oom_refused": None if oom is None else ("== oom: exit 2" in steps and "oom trace left behind: no" in steps),
        "oom_message": oom.strip().splitlines()[0] if oom and oom.strip() else None,
        "kernel_profile": load(os.path.join(d, "kernel_profile.json")),
        "hf_ops": load(os.path.join(d, "hf_ops.json")),
    }
    if prefill and prefill.get("runs"):
        best = max(prefill["runs"], key=lambda r: r["tok_s"])
        out["prefill_tok_s"] = best["tok_s"]
        out["prefill_fraction_of_cublaslt"] = best["fraction_of_cublaslt"]
        out["prefill_best_kernel"] = best["kernel"]
    if decode:
        for b, f in decode["batches"].items():
            out["batched_tok_s"][b] = f["tok_s"]
            out["batched_fraction_of_limit"][b] = f["fraction_of_limit"]
            out["trace_overhead_default_probes"][b] = f["trace_overhead_default"]
            out["trace_overhead_all_probes"][b] = f["trace_overhead_all"]
            sdpa = (hf or {}).get("runs", {}).get("sdpa", {}).get(b)
            if sdpa:
                out["batched_speedup_vs_transformers_sdpa"][b] = f["tok_s"] / sdpa["tok_s"]
        one = decode["batches"].get("1")
        if one:
            out["decode_bs1_tok_s"] = one["tok_s"]
            out["decode_bs1_limit_tok_s"] = one["limit_tok_s"]
            out["decode_bs1_fraction_of_limit"] = one["fraction_of_limit"]
            out["decode_bs1_graphs_off_tok_s"] = one.get("graphs_off_tok_s")
    path = args.output or os.path.join(d, f"gpu-{out['date']}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    print(
        json.dumps(
            {k: v for k, v in out.items() if k not in ("flips", "prefill_runs", "kernel_profile", "hf_ops")}, indent=1
        )
    )


if __name__ == "__main__":
    main()
