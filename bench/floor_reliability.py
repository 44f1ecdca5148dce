"""The flip prediction's reliability over diff --floor reports (bench/floor_reliability.sh).

Per configuration: sequences, flips expected from its floor, flips observed against its batch-1
twin. Over every sequence of every configuration: predicted probability bins against the observed
flip rate, and the Brier score mean((p - y)^2).
"""

import json
import pathlib
import sys

BINS = [0.0, 0.01, 0.05, 0.2, 0.5, 0.8, 1.0]


def main(folder: str) -> None:
    pairs = []
    print("| configuration | sequences | expected flips | observed flips | P(>= observed) |")
    print("|---|---|---|---|---|")
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        noise = json.loads(path.read_text())["noise"]
        flips = noise["flips"]
        print(
            f"| {path.stem} | {flips['sequences']} | {flips['expected']:.2f} | {flips['observed']} | {flips['p']:.3g} |"
        )
        for q in flips["per_sequence"]:
            if q["compared"]:
                pairs.append((q["p_flip"], 1 if q["flipped"] else 0))
    print()
    print("| predicted P(flip) | sequences | mean predicted | observed rate |")
    print("|---|---|---|---|")
    for lo, hi in zip(BINS, BINS[1:]):
        inside = [(p, y) for p, y in pairs if lo <= p < hi or (hi == 1.0 and p == 1.0)]
        if not inside:
            print(f"| [{lo:g}, {hi:g}) | 0 | - | - |")
            continue
        mean_p = sum(p for p, _ in inside) / len(inside)
        rate = sum(y for _, y in inside) / len(inside)
        print(f"| [{lo:g}, {hi:g}) | {len(inside)} | {mean_p:.3f} | {rate:.3f} |")
    brier = sum((p - y) ** 2 for p, y in pairs) / max(1, len(pairs))
    base = sum(y for _, y in pairs) / max(1, len(pairs))
    ref = sum((base - y) ** 2 for _, y in pairs) / max(1, len(pairs))
    print()
    print(
        f"Brier score {brier:.4f} over {len(pairs)} sequences "
        f"(the climatology forecast, every sequence at the observed rate {base:.3f}: {ref:.4f})"
    )


if __name__ == "__main__":
    main(sys.argv[1])
