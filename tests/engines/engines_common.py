"""Helpers of the engine tests: run driftscope and the transformers recorder, read two traces
with h5py and compare them site by site. transformers is the reference: nothing here computes
an expected value with the code under test.

The recorder under test is the driftscope-trace package installed in the venv that runs the test
(scripts/setup_python.sh installs python/ into .venv and .venv-current): importing this module
fails when that copy differs from python/driftscope_trace, so a stale install is never tested."""

import filecmp
import json
import os
import subprocess
import sys
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREADS = "1"  # 2 shared cores: keep torch to one thread


def _installed_is_source():
    source = os.path.join(ROOT, "python", "driftscope_trace")
    try:
        import driftscope_trace
    except ImportError:
        sys.exit("FAILED: driftscope_trace is not installed in %s\nhint: run scripts/setup_python.sh" % sys.prefix)
    installed = os.path.dirname(os.path.abspath(driftscope_trace.__file__))
    names = sorted(n for n in os.listdir(source) if n.endswith(".py"))
    _, differ, missing = filecmp.cmpfiles(source, installed, names, shallow=False)
    if differ or missing:
        sys.exit(
            "FAILED: the driftscope_trace installed in %s differs from python/driftscope_trace (%s)\n"
            "hint: run scripts/setup_python.sh (it re-installs the package when python/ changed)"
            % (sys.prefix, ", ".join(differ + missing))
        )


_installed_is_source()


def stack():
    """'transformers X, torch Y' of this venv, for the test's messages."""
    import torch
    import transformers

    return "transformers %s, torch %s" % (transformers.__version__, torch.__version__)


def transformers_major():
    import transformers

    return int(transformers.__version__.split(".")[0])


def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("FAILED (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:], p.stderr[-3000:]))
    return p, time.perf_counter() - t0


def driftscope(exe, *args):
    return run([exe] + list(args))


def recorder_command():
    """The console command pip installed beside this venv's Python."""
    return [os.path.join(os.path.dirname(sys.executable), "driftscope-trace")]


def recorder(*args, threads=THREADS):
    env = dict(os.environ, OMP_NUM_THREADS=threads)
    return run(recorder_command() + ["run", "--threads", threads, "-q"] + list(args), env=env)


def first_flips(a, b, n):
    """{i: the first generated step where the tokens of sequence i (< n) of the h5py traces a and b
    differ}, for the sequences where they do."""
    flips = {}
    for i in range(n):
        sa, sb = a["seq/%d" % i], b["seq/%d" % i]
        ta, tb, start = sa["tokens"][:].tolist(), sb["tokens"][:].tolist(), int(sa.attrs["prompt_len"])
        step = next((p - start for p in range(start, min(len(ta), len(tb))) if ta[p] != tb[p]), None)
        if step is not None:
            flips[i] = step
    return flips


def hidden(seq, site):
    h = seq["hidden/" + site]
    if h.attrs.get("dtype") == "bf16":
        return (h[:].astype(np.uint32) << 16).view(np.float32)
    return h[:].astype(np.float32)


def rel_l2_rows(ref, x):
    """Relative L2 of each row of x against ref (float64)."""
    ref, x = ref.astype(np.float64), x.astype(np.float64)
    return np.linalg.norm(x - ref, axis=1) / np.maximum(np.linalg.norm(ref, axis=1), 1e-30)


def topk_disagreements(ids_a, vals_a, ids_b, vals_b, tol):
    """Rows [r] where two traces' top-K lists of one distribution disagree by more than tol (a number,
    or one per row): an id in both lists whose logits differ by more than tol, or an id in one list
    only whose logit lies more than tol above the other list's last (K-th) logit. Within tol the
    lists may order near-ties either way, as two summation orders' roundings may."""
    tol = np.broadcast_to(np.asarray(tol, dtype=np.float64), (ids_a.shape[0],))
    bad = []
    for r in range(ids_a.shape[0]):
        a = dict(zip(ids_a[r].tolist(), vals_a[r].astype(np.float64).tolist()))
        b = dict(zip(ids_b[r].tolist(), vals_b[r].astype(np.float64).tolist()))
        t, last_a, last_b = tol[r], min(a.values()), min(b.values())
        if (
            any(abs(a[i] - b[i]) > t for i in a.keys() & b.keys())
            or any(a[i] > last_b + t for i in a.keys() - b.keys())
            or any(b[i] > last_a + t for i in b.keys() - a.keys())
        ):
            bad.append(r)
    return bad


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

    def common_sites(self):
        """Every hidden site both traces hold (read from their first sequence)."""
        names = []
        first = self.a["seq"][self.seqs[0]]
        first["hidden"].visit(lambda k: names.append(k) if isinstance(first["hidden"][k], h5py.Dataset) else None)
        return [n for n in names if "hidden/" + n in self.b["seq"][self.seqs[0]]]

    def max_rel_l2(self, sites=None, rows_limit=None):
        """{site: max over every sequence and position of the relative L2}, over the positions
        both traces computed from the same tokens (all of them when the tokens agree) and below
        rows_limit; sites: L<l>/out and final_norm unless named."""
        worst = {}
        for s in self.seqs:
            sa, sb = self.a["seq"][s], self.b["seq"][s]
            ta, tb = sa["tokens"][:], sb["tokens"][:]
            n = min(len(ta), len(tb))
            same = n if (ta[:n] == tb[:n]).all() else int(np.nonzero(ta[:n] != tb[:n])[0][0])
            for site in sites or self.sites():
                ha, hb = hidden(sa, site), hidden(sb, site)
                rows = min(same, ha.shape[0], hb.shape[0], rows_limit or same)
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
