#!/usr/bin/env python3
"""Summarises `driftscope diff --json` reports of pairs of runs: per pair, how many sequences
flip, at which generated steps they first flip, and where the drift begins (the onset site).

    scripts/flips_summary.py LABEL=DIFF.json [LABEL=DIFF.json ...] [--json OUT.json]

Prints a Markdown table (one row per pair) and the onset sites counted per pair; --json writes
the same as an object keyed by label (the `flips` table of bench/results/gpu-*.json).
"""

import argparse
import collections
import json
import statistics
import sys


def summarise(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    steps, onsets, onset_layers = [], collections.Counter(), collections.Counter()
    for seq in report["sequences"]:
        flip = seq.get("first_flip")
        if flip:
            steps.append(flip["step"])
        onset = seq.get("onset")
        if onset:
            site = onset["site"]
            onsets[site] += 1
            onset_layers[site.split("/")[1] if "/" in site else site] += 1
    summary = report["summary"]
    return {
        "sequences": summary["sequences"],
        "flipped": summary["diverged"],
        "flip_percent": summary["div_percent"],
        "first_flip_steps": sorted(steps),
        "first_flip_median": statistics.median(steps) if steps else None,
        "onset_sites": dict(onsets.most_common()),
        "onset_kinds": dict(onset_layers.most_common()),
        "config_diff": report.get("config_diff", {}),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pairs", nargs="+", help="LABEL=DIFF.json")
    ap.add_argument("--json", help="write the summaries here")
    args = ap.parse_args()
    out = {}
    for pair in args.pairs:
        label, sep, path = pair.partition("=")
        if not sep:
            sys.exit(f"flips_summary: '{pair}' is not LABEL=DIFF.json")
        out[label] = summarise(path)
    print("| pair | flipped | first-flip steps (median; all) | onset kinds |")
    print("|---|---|---|---|")
    for label, s in out.items():
        steps = s["first_flip_steps"]
        shown = ", ".join(map(str, steps[:12])) + (" ..." if len(steps) > 12 else "")
        kinds = ", ".join(f"{k} {n}" for k, n in s["onset_kinds"].items())
        print(f"| {label} | {s['flipped']} of {s['sequences']} | {s['first_flip_median']}; {shown} | {kinds} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
