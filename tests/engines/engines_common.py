"""Helpers of the engine tests: run driftscope and the transformers recorder, read two traces
with h5py and compare them site by site. transformers is the reference: nothing here computes
an expected value with the code under test."""
import json
import os
import subprocess
import sys
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREADS = "1"  # 2 shared cores: keep torch to one thread


def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p, time.perf_counter() - t0


def driftscope(exe, *args):
    return run([exe] + list(args))


def recorder(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS=THREADS)
    return run([sys.executable, "-m", "driftscope_trace.hf", "run", "--threads", THREADS, "-q"] + list(args), env=env)


def hidden(seq, site):
    h = seq["hidden/" + site]
    if h.attrs.get("dtype") == "bf16":
        return (h[:].astype(np.uint32) << 16).view(np.float32)
    return h[:].astype(np.float32)


def rel_l2_rows(ref, x):
    """Relative L2 of each row of x against ref (float64)."""
    ref, x = ref.astype(np.float64), x.astype(np.float64)
    return np.linalg.norm(x - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)


class Comparison:
    """Sequence-by-sequence comparison of trace B (driftscope) against trace A (the reference)."""

    def __init__(self, path_a, path_b):
        self.a, self.b = h5py.File(path_a, "r"), h5py.File(path_b, "r")
        self.n_layers = json.loads(self.a["meta"].attrs["model_json"])["config"]["n_layers"]
        self.seqs = sorted(self.a["seq"].keys(), key=int)
        if sorted(self.b["seq"].keys(), key=int) != self.seqs:
            sys.exit("FAILED: the traces hold different sequences")

    def token_mismatches(self):
        """[(seq, first differing position)] of sequences whose tokens differ."""
        out = []
        for s in self.seqs:
            ta, tb = self.a["seq"][s]["tokens"][:], self.b["seq"][s]["tokens"][:]
            if len(ta) != len(tb) or (ta != tb).any():
                n = min(len(ta), len(tb))
                diff = np.nonzero(ta[:n] != tb[:n])[0]
                out.append((int(s), int(diff[0]) if len(diff) else n))
        return out

    def sites(self):
        return ["L%d/out" % l for l in range(self.n_layers)] + ["final_norm"]

    def max_rel_l2(self):
        """{site: max over every sequence and position of the relative L2}, over the positions
        both traces computed from the same tokens (all of them when the tokens agree)."""
        worst = {}
        for s in self.seqs:
            sa, sb = self.a["seq"][s], self.b["seq"][s]
            ta, tb = sa["tokens"][:], sb["tokens"][:]
            n = min(len(ta), len(tb))
            same = n if (ta[:n] == tb[:n]).all() else int(np.nonzero(ta[:n] != tb[:n])[0][0])
            for site in self.sites():
                ha, hb = hidden(sa, site), hidden(sb, site)
                rows = min(same, ha.shape[0], hb.shape[0])
                if rows == 0:
                    continue
                worst[site] = max(worst.get(site, 0.0), float(rel_l2_rows(ha[:rows], hb[:rows]).max()))
        return worst

    def close(self):
        self.a.close()
        self.b.close()


def check(cond, what):
    print(("ok      " if cond else "FAILED  ") + what)
    return bool(cond)
