"""llama.cpp as a traced engine (driftscope-trace llamacpp, llama-cpp-python's low-level API and
its eval callback), against driftscope on the bundled kjv-llama converted with llama.cpp's own
convert_hf_to_gguf.py:

- always: the refusals that need no llama.cpp (a file that is not GGUF, a GGUF of another
  architecture, written here byte by byte from the GGUF spec; llama-cpp-python missing): one
  line, exit 2, no trace.
- with llama-cpp-python installed in this venv and DRIFTSCOPE_LLAMA_CPP_SRC naming a llama.cpp
  source tree (its convert_hf_to_gguf.py and gguf-py; the llama-cpp-python sdist's vendor/llama.cpp
  is one; scripts/setup_python.sh installs both for .venv-current): each bundled family (Llama,
  Qwen2, Mistral) converted to an F32 GGUF and run with an F32 KV cache against driftscope fp32 on
  8 prompts x 100 greedy tokens with every probe: identical tokens and relative L2 <= 1e-5 at
  every site llama.cpp's graph names (Qwen2's names no attn_out); Mistral's sliding window, which
  the converter drops, noted by the recorder and compared below it; the Q8_0 GGUF's trace against
  F32's: `driftscope diff` names engine.weights; `driftscope zoom` of two cheap (--probes none)
  F32 and Q8_0 traces replays both with the llama.cpp recorder. Without them the test exits 77
  (CTest: skipped).

  python tests/engines/test_llamacpp.py DRIFTSCOPE_EXE WORK_DIR
"""

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import h5py
import numpy as np

from engines_common import ROOT, Comparison, check, driftscope, recorder_command

MODELS = os.path.join(ROOT, "models")
THRESHOLD = 1e-5
SKIP = 77


def gguf_bytes(arch):
    """A GGUF v3 header with one metadata key, general.architecture (the GGUF spec's layout)."""
    key, val = b"general.architecture", arch.encode()
    return (
        b"GGUF"
        + struct.pack("<IQQ", 3, 0, 1)
        + struct.pack("<Q", len(key))
        + key
        + struct.pack("<IQ", 8, len(val))
        + val
    )


def llamacpp(*args):
    return subprocess.run(recorder_command() + ["llamacpp"] + list(args), capture_output=True, text=True)


def refusals(work):
    ok = True
    out = os.path.join(work, "refused.h5")
    gpt2 = os.path.join(work, "gpt2.gguf")
    with open(gpt2, "wb") as f:
        f.write(gguf_bytes("gpt2"))
    p = llamacpp("-m", gpt2, "--prompt-ids", "1", "-o", out)
    ok &= check(
        p.returncode == 2
        and "'gpt2'" in p.stderr
        and len(p.stderr.strip().splitlines()) == 1
        and not os.path.exists(out),
        "a GGUF of another architecture: " + p.stderr.strip(),
    )
    p = llamacpp("-m", os.path.join(MODELS, "kjv-llama", "config.json"), "--prompt-ids", "1", "-o", out)
    ok &= check(
        p.returncode == 2 and "not a GGUF file" in p.stderr and not os.path.exists(out),
        "a file that is not GGUF: " + p.stderr.strip(),
    )
    if importlib.util.find_spec("llama_cpp") is None:
        llama = os.path.join(work, "llama.gguf")
        with open(llama, "wb") as f:
            f.write(gguf_bytes("llama"))
        p = llamacpp("-m", llama, "--prompt-ids", "1", "-o", out)
        ok &= check(
            p.returncode == 2
            and "llama-cpp-python" in p.stderr
            and "pip install" in p.stderr
            and not os.path.exists(out),
            "llama-cpp-python not installed: " + p.stderr.strip(),
        )
    return ok


def convert(src, model, outtype, path):
    """llama.cpp's own convert_hf_to_gguf.py, through convert_gguf.py (which answers its BPE
    pre-tokenizer check for kjv-qwen2's tokenizer, not in llama.cpp's table)."""
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run(
        [sys.executable, os.path.join(here, "convert_gguf.py"), src, model, "--outtype", outtype, "--outfile", path],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        sys.exit("FAILED: convert_hf_to_gguf.py %s --outtype %s\n%s" % (model, outtype, p.stderr[-2000:]))


def summary(worst):
    return " ".join("%s %.1e" % kv for kv in sorted(worst.items()))


def against_driftscope(exe, work, src):
    """Each bundled family: llama.cpp F32 (F32 KV cache) against driftscope fp32, every site."""
    ok = True
    t = lambda f: os.path.join(work, f)
    with open(os.path.join(MODELS, "kjv-llama", "prompts.txt")) as f, open(t("prompts8.txt"), "w") as g:
        g.writelines(f.readlines()[:8])
    common = ["--prompts", t("prompts8.txt"), "-n", "100", "--probes", "all", "--force"]
    for family, sites in (("llama", 26), ("qwen2", 22), ("mistral", 26)):
        model = os.path.join(MODELS, "kjv-" + family)
        convert(src, model, "f32", t("%s-f32.gguf" % family))
        driftscope(exe, "run", "-m", model, *common, "-q", "-o", t("ds-%s.h5" % family))
        t0 = time.perf_counter()
        p = llamacpp(
            "-m",
            t("%s-f32.gguf" % family),
            "--source-model",
            model,
            "--kv-type",
            "f32",
            *common,
            "-o",
            t("llama-%s.h5" % family),
        )
        ok &= check(
            p.returncode == 0,
            "%s: llama.cpp F32 recorded (%.1f s) %s" % (family, time.perf_counter() - t0, p.stderr.strip()[-300:]),
        )
        if p.returncode != 0:
            continue
        with open(os.path.join(model, "config.json")) as f:
            window = json.load(f).get("sliding_window")
        c = Comparison(t("llama-%s.h5" % family), t("ds-%s.h5" % family))
        worst, flips = c.max_rel_l2(c.common_sites(), window), c.token_mismatches()
        c.close()
        if window:
            # llama.cpp's converter writes Mistral as architecture llama with no window: the
            # positions below the window agree, the recorder says so and records it
            with h5py.File(t("llama-%s.h5" % family), "r") as f:
                eng = json.loads(f["meta"].attrs["config_json"])["engine"]
            ok &= check(
                "sliding window of %d" % window in p.stderr
                and eng.get("sliding_window") == "none (source model: %d)" % window,
                "%s: the unapplied sliding window (%d) is noted and recorded: %s"
                % (family, window, eng.get("sliding_window")),
            )
        else:
            ok &= check(not flips, "%s: identical tokens on 8 prompts x 100 (mismatches: %s)" % (family, flips))
        ok &= check(
            len(worst) == sites and max(worst.values()) <= THRESHOLD,
            "%s: %d sites%s, max relative L2 %.1e <= %.0e: %s"
            % (
                family,
                len(worst),
                " below position %d" % window if window else "",
                max(worst.values()),
                THRESHOLD,
                summary(worst),
            ),
        )
    convert(src, os.path.join(MODELS, "kjv-llama"), "q8_0", t("llama-q8_0.gguf"))
    p = llamacpp(
        "-m",
        t("llama-q8_0.gguf"),
        "--source-model",
        os.path.join(MODELS, "kjv-llama"),
        "--kv-type",
        "f32",
        *common,
        "-o",
        t("llama-q8_0.h5"),
    )
    ok &= check(p.returncode == 0, "llama: llama.cpp Q8_0 recorded " + p.stderr.strip()[-300:])
    if p.returncode == 0:
        p, _ = driftscope(exe, "diff", t("llama-llama.h5"), t("llama-q8_0.h5"))
        ok &= check(
            "engine.weights" in p.stdout.split("summary")[0] and "Q8_0" in p.stdout,
            "diff F32 Q8_0 names engine.weights: "
            + " ".join(l.strip() for l in p.stdout.splitlines() if "engine.weights" in l),
        )
        # teacher-forced: Q8_0 on driftscope's tokens keeps every row comparable
        p = llamacpp(
            "-m",
            t("llama-q8_0.gguf"),
            "--source-model",
            os.path.join(MODELS, "kjv-llama"),
            "--kv-type",
            "f32",
            "--force-tokens",
            t("ds-llama.h5"),
            "--probes",
            "all",
            "--force",
            "-o",
            t("llama-q8_0-forced.h5"),
        )
        flips = [0]
        if p.returncode == 0:
            c = Comparison(t("ds-llama.h5"), t("llama-q8_0-forced.h5"))
            flips = c.token_mismatches()
            c.close()
        ok &= check(
            p.returncode == 0 and not flips,
            "Q8_0 teacher-forced on driftscope's tokens: the same tokens (%s) %s" % (flips, p.stderr.strip()[-200:]),
        )
    return ok


def zoom_replay(exe, work):
    """driftscope zoom of two llama.cpp traces (F32 and Q8_0, probes none) replays both with the
    llama.cpp recorder: A's replay holds A's tokens up to flip + after, B's replay is forced on
    them, both with every probe llama.cpp names."""
    ok = True
    t = lambda f: os.path.join(work, f)
    model = os.path.join(MODELS, "kjv-llama")
    for q in ("f32", "q8_0"):
        p = llamacpp(
            "-m",
            t("llama-%s.gguf" % q),
            "--source-model",
            model,
            "--kv-type",
            "f32",
            "--prompts",
            os.path.join(model, "prompts.txt"),
            "-n",
            "40",
            "--probes",
            "none",
            "--force",
            "-q",
            "-o",
            t("cheap-%s.h5" % q),
        )
        if p.returncode != 0:
            return check(False, "llama.cpp %s recorded for zoom: %s" % (q, p.stderr.strip()[-300:]))
    shutil.rmtree(t("zoom"), ignore_errors=True)  # a zoom left by an earlier run would resume
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    env.pop("DRIFTSCOPE_TRACE", None)
    p = subprocess.run(
        [exe, "zoom", t("cheap-f32.h5"), t("cheap-q8_0.h5"), "-o", t("zoom"), "--after", "4"],
        capture_output=True,
        text=True,
        env=env,
    )
    ok &= check(
        p.returncode == 0 and "replay-b done" in p.stderr,
        "zoom of llama.cpp F32 vs Q8_0 ran the recorder: " + p.stderr.strip().replace("\n", " | ")[-300:],
    )
    if p.returncode != 0:
        return ok
    with open(t("zoom/zoom.json")) as f:
        z = json.load(f)
    with (
        h5py.File(t("cheap-f32.h5"), "r") as a,
        h5py.File(t("zoom/a.h5"), "r") as ra,
        h5py.File(t("zoom/b.h5"), "r") as rb,
    ):
        bad = []
        for s in z["sequences"]:
            i, seq = s["replay_index"], s["seq"]
            ta, t1, t2 = a["seq/%d/tokens" % seq][:], ra["seq/%d/tokens" % i][:], rb["seq/%d/tokens" % i][:]
            n_prompt = int(a["seq/%d" % seq].attrs["prompt_len"])
            if (
                len(t1) != n_prompt + s["flip_step"] + 1 + 4
                or not (t1 == ta[: len(t1)]).all()
                or not np.array_equal(t1, t2)
                or len(ra["seq/%d/hidden" % i].keys()) != 6
            ):
                bad.append(seq)
        ok &= check(
            z["sequences"] and not bad,
            "%d zoomed sequences: replays hold A's tokens to flip + 4 and "
            "every layer (bad: %s)" % (len(z["sequences"]), bad),
        )
    return ok


def main(exe, work):
    os.makedirs(work, exist_ok=True)
    ok = refusals(work)
    # scripts/setup_python.sh keeps the sdist's llama.cpp source beside the venv's llama-cpp-python
    src = os.environ.get("DRIFTSCOPE_LLAMA_CPP_SRC") or os.path.join(sys.prefix, "llama.cpp")
    if importlib.util.find_spec("llama_cpp") is None or not os.path.isfile(os.path.join(src, "convert_hf_to_gguf.py")):
        print(
            "skipped: llama.cpp against driftscope needs llama-cpp-python in %s (pip install './python[llamacpp]') "
            "and DRIFTSCOPE_LLAMA_CPP_SRC naming a llama.cpp source tree (now '%s')" % (sys.prefix, src)
        )
        return SKIP if ok else 1
    ok &= against_driftscope(exe, work, src)
    ok &= zoom_replay(exe, work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
