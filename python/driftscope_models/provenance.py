"""models/PROVENANCE.md: where every file under models/ came from, written by scripts/make_models
after it trains. Each file's line reads "- `PATH` — N bytes, sha256 HEX"; tests/models checks the
committed files against these lines."""

import hashlib
import os
import platform


def file_line(root, rel):
    path = os.path.join(root, rel)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return "- `%s` — %s bytes, sha256 %s" % (rel, format(os.path.getsize(path), ","), digest)


def blas_library():
    real = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    return real if os.path.exists(real) else "unknown"


def write(root, corpus_info, tokenizer_text, results, software):
    lines = [
        "# The project's own models",
        "",
        "Every file under `models/` was made by `scripts/make_models` from the corpus below: the",
        "tokenizers and the weights are trained by the script, nothing is copied from elsewhere.",
        "Third-party fixtures (llama2.c's `stories260K`, `aidreams260K`) live in `../shared/models`,",
        "read only by the tests that compare against their published outputs.",
        "",
        "## Corpus",
        corpus_info,
        "",
        "## Software and determinism",
        "Made with: " + ", ".join("%s %s" % kv for kv in software.items()) + ".",
        "Training runs on a fixed seed and a fixed thread count with torch's deterministic",
        "algorithms, so a second run with the same software gives the same bytes. The bytes also",
        "depend on the BLAS library torch calls (here `%s`, OpenBLAS: `scripts/make_models`" % blas_library(),
        "needs Debian's libopenblas0-openmp) and on the instruction set its kernels pick (this",
        "machine: %s, AVX2)." % platform.machine(),
        "",
        "## Tokenizers",
        tokenizer_text,
        "",
    ]
    for r in results:
        lines += ["## %s/ — %s" % (r["name"], r["about"]), ""]
        lines += [
            "Shape: %s. %s parameters. Trained %d steps of %d windows of %d tokens "
            "(%s tokens seen); final training loss %.3f (mean of the last 20 steps)."
            % (
                r["shape"],
                format(r["params"], ","),
                r["steps"],
                r["batch"],
                r["window"],
                format(r["tokens_seen"], ","),
                r["loss"],
            ),
            "",
        ]
        lines += ["Greedy continuation of `%s` (transformers fp32, 40 tokens): %s" % (r["prompt"], r["sample"]), ""]
        lines += [
            file_line(root, os.path.join(r["name"], f)) for f in sorted(os.listdir(os.path.join(root, r["name"])))
        ]
        lines += [""]
    lines += [
        "## Prompts",
        "",
        "`kjv-llama/prompts.txt`: 32 openings in the corpus's style, written by hand",
        "(python/driftscope_models/prompts.txt) for the demo, the sweeps and the tests.",
        "",
    ]
    with open(os.path.join(root, "PROVENANCE.md"), "w") as f:
        f.write("\n".join(lines))
