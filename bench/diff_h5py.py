#!/usr/bin/env python3
"""The h5py baseline of bench_diff_throughput: reads every hidden dataset of two traces and
computes a relative L2 per row, ||b - a|| / ||a||, over the rows that `driftscope diff` compares
(the positions before the first differing token, at most the rows both hold), and prints the
largest per site summed over sequences, so the work cannot be skipped.

  diff_h5py.py A.h5 B.h5
"""

import sys

import h5py
import numpy as np


def as_float(d, rows):
    x = d[:rows]
    if d.attrs.get("dtype") in ("bf16", b"bf16"):  # bf16 is stored as the top 16 bits of a float32
        x = (x.astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float64)


def sites(group):
    out = []
    group.visititems(lambda name, obj: out.append(name) if isinstance(obj, h5py.Dataset) else None)
    return out


def main(a_path, b_path):
    total = 0.0
    with h5py.File(a_path, "r") as fa, h5py.File(b_path, "r") as fb:
        for seq in sorted(set(fa["seq"]) & set(fb["seq"]), key=int):
            ga, gb = fa["seq"][seq], fb["seq"][seq]
            ta, tb = ga["tokens"][...], gb["tokens"][...]
            n = min(len(ta), len(tb))
            same = n if np.array_equal(ta[:n], tb[:n]) else int(np.argmax(ta[:n] != tb[:n]))
            if "hidden" not in ga or "hidden" not in gb:
                continue
            for site in sites(ga["hidden"]):
                if site not in gb["hidden"]:
                    continue
                da, db = ga["hidden"][site], gb["hidden"][site]
                rows = min(same, da.shape[0], db.shape[0])
                a, b = as_float(da, rows), as_float(db, rows)
                rel = np.linalg.norm(b - a, axis=1) / np.maximum(np.linalg.norm(a, axis=1), 1e-30)
                total += float(rel.max()) if rows else 0.0
    print(f"sum over sites of the max relative L2: {total:.6g}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
