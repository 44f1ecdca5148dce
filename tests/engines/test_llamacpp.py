"""llama.cpp as a traced engine (driftscope-trace llamacpp, llama-cpp-python's low-level API and
its eval callback), against driftscope on the bundled kjv-llama converted with llama.cpp's own
convert_hf_to_gguf.py:

- always: the refusals that need no llama.cpp (a file that is not GGUF, a GGUF of another
  architecture, written here byte by byte from the GGUF spec; llama-cpp-python missing): one
  line, exit 2, no trace.
- with llama-cpp-python installed in this venv and DRIFTSCOPE_LLAMA_CPP_SRC naming a llama.cpp
  source tree (its convert_hf_to_gguf.py and gguf-py; the llama-cpp-python sdist's vendor/llama.cpp
  is one): F32 GGUF, F32 KV cache, against driftscope fp32 on 8 prompts x 100 greedy tokens:
  identical tokens, relative L2 <= 1e-5 at every L<l>/out and final_norm; the Q8_0 GGUF's trace
  against F32's: `driftscope diff` names engine.weights. Without them the test exits 77, which
  CTest reports as skipped (building llama-cpp-python takes 9+ minutes on 2 cores: not in CI).

  python tests/engines/test_llamacpp.py DRIFTSCOPE_EXE WORK_DIR
"""
import importlib.util
import os
import struct
import subprocess
import sys
import time

from engines_common import ROOT, Comparison, check, driftscope, recorder_command

MODEL = os.path.join(ROOT, "models", "kjv-llama")
THRESHOLD = 1e-5
SKIP = 77


def gguf_bytes(arch):
    """A GGUF v3 header with one metadata key, general.architecture (the GGUF spec's layout)."""
    key, val = b"general.architecture", arch.encode()
    return (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
            + struct.pack("<IQ", 8, len(val)) + val)


def llamacpp(*args):
    return subprocess.run(recorder_command() + ["llamacpp"] + list(args), capture_output=True, text=True)


def refusals(work):
    ok = True
    out = os.path.join(work, "refused.h5")
    gpt2 = os.path.join(work, "gpt2.gguf")
    with open(gpt2, "wb") as f:
        f.write(gguf_bytes("gpt2"))
    p = llamacpp("-m", gpt2, "--prompt-ids", "1", "-o", out)
    ok &= check(p.returncode == 2 and "'gpt2'" in p.stderr and len(p.stderr.strip().splitlines()) == 1
                and not os.path.exists(out), "a GGUF of another architecture: " + p.stderr.strip())
    p = llamacpp("-m", os.path.join(MODEL, "config.json"), "--prompt-ids", "1", "-o", out)
    ok &= check(p.returncode == 2 and "not a GGUF file" in p.stderr and not os.path.exists(out),
                "a file that is not GGUF: " + p.stderr.strip())
    if importlib.util.find_spec("llama_cpp") is None:
        llama = os.path.join(work, "llama.gguf")
        with open(llama, "wb") as f:
            f.write(gguf_bytes("llama"))
        p = llamacpp("-m", llama, "--prompt-ids", "1", "-o", out)
        ok &= check(p.returncode == 2 and "llama-cpp-python" in p.stderr and "pip install" in p.stderr
                    and not os.path.exists(out), "llama-cpp-python not installed: " + p.stderr.strip())
    return ok


def convert(src, outtype, path):
    env = dict(os.environ, PYTHONPATH=os.path.join(src, "gguf-py"))
    p = subprocess.run([sys.executable, os.path.join(src, "convert_hf_to_gguf.py"), MODEL, "--outtype", outtype,
                        "--outfile", path], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("FAILED: convert_hf_to_gguf.py --outtype %s\n%s" % (outtype, p.stderr[-2000:]))


def against_driftscope(exe, work, src):
    ok = True
    t = lambda f: os.path.join(work, f)
    with open(os.path.join(MODEL, "prompts.txt")) as f, open(t("prompts8.txt"), "w") as g:
        g.writelines(f.readlines()[:8])
    for q in ("f32", "q8_0"):
        convert(src, q, t("kjv-%s.gguf" % q))
    common = ["--prompts", t("prompts8.txt"), "-n", "100", "--probes", "L*/out,final_norm", "--force"]
    driftscope(exe, "run", "-m", MODEL, *common, "-q", "-o", t("ds.h5"))
    for q in ("f32", "q8_0"):
        t0 = time.perf_counter()
        p = llamacpp("-m", t("kjv-%s.gguf" % q), "--source-model", MODEL, "--kv-type", "f32", *common,
                     "-o", t("llama_%s.h5" % q))
        ok &= check(p.returncode == 0, "llama.cpp %s recorded (%.1f s) %s" % (q, time.perf_counter() - t0,
                                                                          p.stderr.strip()[-400:]))
    c = Comparison(t("llama_f32.h5"), t("ds.h5"))
    worst = c.max_rel_l2()
    ok &= check(not c.token_mismatches(), "llama.cpp F32 against driftscope fp32: identical tokens on 8 prompts x 100 "
                "(mismatches: %s)" % c.token_mismatches())
    ok &= check(worst and max(worst.values()) <= THRESHOLD, "max relative L2 %s <= %.0e"
                % (" ".join("%s %.1e" % kv for kv in worst.items()), THRESHOLD))
    c.close()
    p, _ = driftscope(exe, "diff", t("llama_f32.h5"), t("llama_q8_0.h5"))
    ok &= check("engine.weights" in p.stdout.split("summary")[0] and "Q8_0" in p.stdout,
                "diff F32 Q8_0 names engine.weights: " + " ".join(
                    l.strip() for l in p.stdout.splitlines() if "engine.weights" in l))
    return ok


def main(exe, work):
    os.makedirs(work, exist_ok=True)
    ok = refusals(work)
    src = os.environ.get("DRIFTSCOPE_LLAMA_CPP_SRC", "")
    if importlib.util.find_spec("llama_cpp") is None or not os.path.isfile(os.path.join(src, "convert_hf_to_gguf.py")):
        print("skipped: llama.cpp against driftscope needs llama-cpp-python in %s (pip install './python[llamacpp]') "
              "and DRIFTSCOPE_LLAMA_CPP_SRC naming a llama.cpp source tree (now '%s')" % (sys.prefix, src))
        return SKIP if ok else 1
    ok &= against_driftscope(exe, work, src)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
