"""`driftscope explain` of two traces the transformers recorder wrote (issue 47, item 5): the bundled
kjv-llama in bf16 at batch 1 (A) and at batch 8 (B), 16 prompts, 24 tokens, --probes none. The
knob level runs its trials with the recorder (driftscope-trace, found on PATH); the only knob is
batch, so every flip must be explained by {batch}, or get a verdict that says why not. There is no
op level for a recorder trace, and the report says so in one line. The flips are found here from
the traces' tokens with h5py, not from explain's report. Where this CPU's bf16 parts nowhere,
explain must refuse with its no-flip line, and the test says so.

  python tests/engines/test_explain_recorder.py DRIFTSCOPE_EXE WORK_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import time

import h5py

from engines_common import ROOT, THREADS, check, first_flips, recorder, recorder_command, stack

MODEL = os.path.join(ROOT, "models", "kjv-llama")
PROMPTS = 16
N = 24


def main(exe, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    t0 = time.perf_counter()
    with open(os.path.join(MODEL, "prompts.txt")) as f:
        lines = f.read().splitlines()[:PROMPTS]
    prompts = os.path.join(work, "prompts.txt")
    with open(prompts, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    a_path, b_path = os.path.join(work, "a.h5"), os.path.join(work, "b.h5")
    common = ["-m", MODEL, "--prompts", prompts, "-n", str(N), "--probes", "none", "--dtype", "bf16"]
    recorder(*common, "--batch", "1", "-o", a_path)
    recorder(*common, "--batch", "8", "-o", b_path)
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        flips = first_flips(a, b, PROMPTS)
    env = dict(
        os.environ,
        OMP_NUM_THREADS=THREADS,
        PATH=os.path.dirname(recorder_command()[0]) + os.pathsep + os.environ.get("PATH", ""),
    )
    env.pop("DRIFTSCOPE_TRACE", None)
    x = os.path.join(work, "explain")
    p = subprocess.run([exe, "explain", a_path, b_path, "-o", x, "-j", "2"], capture_output=True, text=True, env=env)
    if not flips:  # nothing to explain: explain must say so, and why
        err = p.stderr.strip().splitlines()
        ok = check(
            p.returncode == 2 and err and err[0].startswith("driftscope: no sequence flipped"),
            "no flip between batch 1 and 8 on this CPU: explain says so (%s)" % err,
        )
        print("(%s; %.1f s)" % (stack(), time.perf_counter() - t0))
        return ok
    ok = check(p.returncode == 0, "explain of two recorder traces: exit 0 (%s)" % p.stderr.strip()[-800:])
    if p.returncode != 0:
        return ok
    r = json.load(open(os.path.join(x, "explain.json")))
    ok &= check(r["engine"] == "transformers", "the engine: transformers (%s)" % r["engine"])
    ok &= check(
        [k["name"] for k in r["knobs"]] == ["batch"],
        "the knob in which the two recorder runs differ: batch (%s)" % r["knobs"],
    )
    ok &= check(
        sorted(f["seq"] for f in r["sequences"]) == sorted(flips),
        "a verdict for every flip the tokens show: %s" % sorted(flips),
    )
    for f in r["sequences"]:
        named = f["verdict"] == "explained" and f["knob_sets"] == [["batch"]]
        ok &= check(
            named or (f["verdict"] in ("unresolved", "no_cause") and f["why"]),
            "seq %d (step %d): names batch, or says why not (%s: %s %s)"
            % (f["seq"], f["step"], f["verdict"], f["knob_sets"], f["why"]),
        )
        ok &= check(f["step"] == flips[f["seq"]], "seq %d: the flip at step %d" % (f["seq"], flips[f["seq"]]))
    ok &= check(
        r["op_level"] is not None and r["op_level"].startswith("no op level"),
        "no op level for a recorder trace, said in one line: %s" % r["op_level"],
    )
    # the trials beyond the zoom's own replays (none with one knob: A's and B's are those)
    folder = os.path.join(x, "trials")
    trials = [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".h5")] if os.path.isdir(folder) else []
    for t in trials + [os.path.join(x, "a.h5"), os.path.join(x, "b.h5")]:
        with h5py.File(t, "r") as h:
            ok &= check(
                h.attrs["producer"].startswith("driftscope_trace"),
                "%s was written by the recorder" % os.path.basename(t),
            )
    ok &= check("── causes (" in p.stdout, "the causes table on stdout")
    print("(%d flip(s), %d knob trial(s); %s; %.1f s)" % (len(flips), len(trials), stack(), time.perf_counter() - t0))
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1], sys.argv[2]) else 1)
