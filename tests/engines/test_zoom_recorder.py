"""`driftscope zoom` of two traces the transformers recorder wrote: the bundled kjv-llama in fp32 at
batch 1 (A) and in bf16 at batch 2 (B), 4 prompts, 8 tokens, --probes none. Zoom replays both with
the recorder (driftscope-trace, found on PATH), teacher-forced through {"ids", "forced"} prompt
lines. Everything is checked here against the original traces read with h5py, not against zoom's
own numbers: the flips are where A's and B's tokens differ; each replay consumes A's tokens up to
the flip plus --after (a batch neighbour its own side's); A's replay reproduces A's top-K bit for
bit, and B's replay (batched, forced, on A's tokens, which are B's own up to the flip) B's top-K
through the flip row; the replays hold every site a driftscope --probes all run holds. Then the
refusal when the recorder cannot be found: exit 2, one driftscope: line and a hint, DIR not made.

  python tests/engines/test_zoom_recorder.py DRIFTSCOPE_EXE WORK_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

from engines_common import ROOT, THREADS, check, first_flips, recorder, recorder_command, stack

MODEL = os.path.join(ROOT, "models", "kjv-llama")
PROMPTS = (0, 6, 20, 29)  # lines of the model's prompts.txt: B parts from A at the last three
AFTER = 2
N = 8


def tokens(t, i):
    s = t["seq/%d" % i]
    return s["tokens"][:].tolist(), int(s.attrs["prompt_len"])


def sites(t, i):
    out = []
    t["seq/%d/hidden" % i].visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) else None)
    return sorted(out)


def same_topk(x, i, y, j, rows):
    """Top-K rows [0, rows) of x's sequence i and y's sequence j, ids and logits bit for bit."""
    return all(
        np.array_equal(x["seq/%d/logits/%s" % (i, k)][:rows], y["seq/%d/logits/%s" % (j, k)][:rows])
        for k in ("topk_ids", "topk_logits")
    )


def replays(exe, work, a_path, b_path, env):
    ok = True
    z = os.path.join(work, "zoom")
    p = subprocess.run(
        [exe, "zoom", a_path, b_path, "-o", z, "--after", str(AFTER), "-j", "2"],
        capture_output=True,
        text=True,
        env=env,
    )
    ok &= check(p.returncode == 0, "zoom of two recorder traces: exit 0 (%s)" % p.stderr.strip()[-600:])
    if p.returncode != 0:
        return ok, z
    a, b = h5py.File(a_path, "r"), h5py.File(b_path, "r")
    a2, b2 = h5py.File(os.path.join(z, "a.h5"), "r"), h5py.File(os.path.join(z, "b.h5"), "r")
    flips = first_flips(a, b, len(PROMPTS))
    # 3 of 4 here (near-ties of 0.003 to 0.006 logit); another CPU's bf16 may part elsewhere
    ok &= check(len(flips) >= 1, "A and B part at %d of %d prompts: %s" % (len(flips), len(PROMPTS), flips))
    # batch groups: blocks of lcm(1, 2) = 2 prompts; every block holding a flip is replayed
    replayed = sorted(i for i in range(len(PROMPTS)) if any(j // 2 == i // 2 for j in flips))
    for name, t2 in (("a", a2), ("b", b2)):
        ok &= check(
            sorted(int(k) for k in t2["seq"].keys()) == list(range(len(replayed))),
            "%s.h5 holds the %d sequences of the flipped batch groups" % (name, len(replayed)),
        )
        ok &= check(
            t2.attrs["producer"].startswith("driftscope_trace")
            and json.loads(t2["meta"].attrs["config_json"])["trace"]["probes"] == "all",
            "%s.h5 was written by the recorder with --probes all" % name,
        )
    want_sites = sites(h5py.File(all_probes(exe, work), "r"), 0)
    ok &= check(
        all(sites(t2, r) == want_sites for t2 in (a2, b2) for r in range(len(replayed))),
        "every replayed sequence holds the %d sites of driftscope run --probes all" % len(want_sites),
    )
    lines = p.stdout.strip().splitlines()
    for r, i in enumerate(replayed):
        ta, n = tokens(a, i)
        tb, _ = tokens(b, i)
        if i in flips:
            upto = n + min(len(ta) - n, flips[i] + 1 + AFTER)
            want_a = want_b = ta[:upto]
        else:  # a neighbour: its own tokens, as long as its group's flipped sequences run
            steps = max(min(len(ta) - n, flips[j] + 1 + AFTER) for j in flips if j // 2 == i // 2)
            want_a, want_b = ta[: n + min(steps, len(ta) - n)], tb[: n + min(steps, len(tb) - n)]
        ok &= check(
            tokens(a2, r)[0] == want_a and tokens(b2, r)[0] == want_b,
            "seq %d: both replays consume %s, %d tokens" % (i, "A's" if i in flips else "their own", len(want_a)),
        )
        ok &= check(same_topk(a2, r, a, i, len(want_a) - 1), "seq %d: A's replay reproduces A's top-K" % i)
        if i not in flips:
            continue
        ok &= check(
            same_topk(b2, r, b, i, n + flips[i]),
            "seq %d: B's replay (batched, forced) reproduces B's top-K through the flip row" % i,
        )
        path = os.path.join(z, "seq-%d" % i, "diff.json")
        s = json.load(open(path))["sequences"][0] if os.path.exists(path) else {}
        f = s.get("first_flip") or {}
        ok &= check(
            s.get("index") == i
            and f.get("step") == flips[i]
            and f.get("token_a") == ta[n + flips[i]]
            and f.get("token_b") == tb[n + flips[i]],
            "seq-%d/diff.json names the flip at step %d (%s vs %s)" % (i, flips[i], f.get("token_a"), f.get("token_b")),
        )
        ok &= check("seq %d: flip at step %d" % (i, flips[i]) in lines, "the verdict line of seq %d" % i)
    ok &= check(
        not os.path.exists(os.path.join(z, "flips.json")),
        "no flips.* without attributions (B was recorded by the recorder)",
    )
    return ok, z


def all_probes(exe, work):
    path = os.path.join(work, "all.h5")
    subprocess.run(
        [
            exe,
            "run",
            "--model",
            MODEL,
            "--prompt-ids",
            "1,400",
            "-n",
            "1",
            "--probes",
            "all",
            "-q",
            "--force",
            "-o",
            path,
        ],
        check=True,
    )
    return path


def refusal(exe, work, a_path, b_path, command):
    """No driftscope-trace on PATH and DRIFTSCOPE_TRACE unset: refused before DIR is made."""
    z = os.path.join(work, "refused")
    env = {k: v for k, v in os.environ.items() if k != "DRIFTSCOPE_TRACE"}
    env["PATH"] = os.path.join(work, "empty")
    os.makedirs(env["PATH"], exist_ok=True)
    p = subprocess.run([exe, "zoom", a_path, b_path, "-o", z], capture_output=True, text=True, env=env)
    err = p.stderr.strip().splitlines()
    ok = check(
        p.returncode == 2
        and len(err) == 2
        and err[0].startswith("driftscope: ")
        and "written by driftscope_trace" in err[0]
        and err[1].startswith("hint: ")
        and "pip install './python[transformers]'" in err[1]
        and not os.path.exists(z),
        "no recorder: exit 2, one driftscope: line naming the recorder, a hint, no DIR: %s" % err,
    )
    # the hint's command is the replay zoom runs when it finds the recorder (but for the folder)
    tail = command.split(" ", 1)[1].replace(os.path.join(work, "zoom"), z)
    ok &= check(
        err[-1].endswith("its replay is: driftscope-trace " + tail),
        "the hint gives the exact replay command: driftscope-trace " + tail[:60] + " ...",
    )
    return ok


def main(exe, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.perf_counter()
    with open(os.path.join(MODEL, "prompts.txt")) as f:
        lines = f.read().splitlines()
    prompts = os.path.join(work, "prompts.txt")
    with open(prompts, "w") as f:
        f.write("".join(lines[i] + "\n" for i in PROMPTS))
    a_path, b_path = os.path.join(work, "a.h5"), os.path.join(work, "b.h5")
    common = ["-m", MODEL, "--prompts", prompts, "-n", str(N), "--probes", "none"]
    recorder(*common, "-o", a_path)
    recorder(*common, "--dtype", "bf16", "--batch", "2", "-o", b_path)
    # the recorder as pip installs it beside this venv's Python; one torch thread per replay
    env = dict(
        os.environ,
        OMP_NUM_THREADS=THREADS,
        PATH=os.path.dirname(recorder_command()[0]) + os.pathsep + os.environ.get("PATH", ""),
    )
    env.pop("DRIFTSCOPE_TRACE", None)
    ok, z = replays(exe, work, a_path, b_path, env)
    if os.path.exists(os.path.join(z, "zoom.json")):
        ok &= refusal(exe, work, a_path, b_path, json.load(open(os.path.join(z, "zoom.json")))["runs"][0]["command"])
    print("(%s; %.1f s)" % (stack(), time.perf_counter() - t0))
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1], sys.argv[2]) else 1)
