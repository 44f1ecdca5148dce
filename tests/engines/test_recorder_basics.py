"""The Python TraceWriter read by driftscope (whose reader validates a foreign producer's trace
against format v1 on open), bf16 storage against torch's own bfloat16 rounding, and the
recorder's refusals: a model family it does not know, a module layout it cannot map, bad input.
Nothing is written as if it were complete. The prompts file reader against driftscope run's:
{"ids", "forced"} lines, and the lines both refuse. The inputs of tests/data/bad_inputs/run.json,
the table tests/cli/test_cli_bad_inputs_shared.cpp holds driftscope run to: refused alike (NUL
bytes in prompt files, seeds out of range, --trace-topk above the vocabulary) or accepted.

  python tests/engines/test_recorder_basics.py DRIFTSCOPE_EXE WORK_DIR
"""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

from engines_common import ROOT, check, recorder_command, stack
from driftscope_trace import TraceWriter, schema
from driftscope_trace.hf_sites import LayoutError, site_table
from driftscope_trace.prompts import PromptError, read_prompts_file
from driftscope_trace.writer import bf16_bits


def show_json(exe, path):
    p = subprocess.run([exe, "show", "--json", path], capture_output=True, text=True)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else p.stderr)


def recorder(*args, command=None):
    return subprocess.run(
        (command or recorder_command()) + ["run", "--threads", "1"] + list(args), capture_output=True, text=True
    )


def writer_traces(exe, work):
    ok = True
    rng = np.random.default_rng(0)
    path = os.path.join(work, "written.h5")
    with TraceWriter(
        path,
        hidden_dtype="bf16",
        topk=4,
        force=True,
        config_json='{"dtype": "fp32"}',
        model_json='{"config": {"n_layers": 1, "vocab_size": 6}}',
        command_line="test",
    ) as w:
        w.begin_sequence(0, [1, 2, 3])
        # prefill: 3 rows; row 0 has a tie between ids 1 and 4 (the lower id ranks first)
        logits = rng.normal(size=(3, 6))
        logits[0] = [0.0, 2.0, -1.0, 0.5, 2.0, -3.0]
        hidden = {s: rng.normal(size=(3, 8)).astype(np.float32) for s in ("embed", "L0/out", "final_norm")}
        w.append(0, hidden, logits, [5])
        w.append(0, {s: rng.normal(size=(1, 8)) for s in hidden}, rng.normal(size=(1, 6)), [4])
        w.end_sequence(0, "max_new")
        w.finish(True, "finished")
    rc, j = show_json(exe, path)
    ok &= check(rc == 0, "driftscope show --json opens the Python writer's trace (%s)" % (j if rc else "ok"))
    if rc == 0:
        s = j["sequences"][0]
        ok &= check(
            j["complete"] and s["rows"] == 4 and s["tokens"] == [1, 2, 3, 5, 4] and s["gen_len"] == 2,
            "complete, 4 rows, tokens prompt + generated, gen_len 2",
        )
        ok &= check(
            [x["name"] for x in s["sites"]] == ["embed", "L0/out", "final_norm"],
            "sites in forward order: %s" % [x["name"] for x in s["sites"]],
        )
    import h5py

    with h5py.File(path, "r") as f:
        ok &= check(f["seq/0/logits/topk_ids"][0].tolist() == [1, 4, 3, 0], "top-K ties go to the lower id")
        want = torch.from_numpy(hidden["L0/out"]).bfloat16().view(torch.int16).numpy().view(np.uint16)
        ok &= check(
            (f["seq/0/hidden/L0/out"][:3] == want).all() and f["seq/0/hidden/L0/out"].attrs["dtype"] == "bf16",
            "bf16 storage: the bits of torch's round-to-nearest-even bfloat16",
        )
    with h5py.File(path, "r") as f:
        d = f["seq/0/hidden/L0/out"]
        ok &= check(
            d.compression is None and not d.shuffle and d.chunks[0] <= 16,
            "default storage is driftscope's: no filter, at most 16 rows a chunk (%s, %s)" % (d.compression, d.chunks),
        )
        ok &= check(
            all(f["seq/0/" + n].fletcher32 for n in ("tokens", "logits/topk_ids", "logits/topk_logits", "logits/lse"))
            and not d.fletcher32,
            "tokens, top-K and lse carry HDF5's Fletcher-32 checksum, hidden states do not",
        )
    path = os.path.join(work, "deflated.h5")
    with TraceWriter(path, topk=4, force=True, compression="deflate") as w:
        w.begin_sequence(0, [1, 2])
        w.append(0, {"embed": np.ones((2, 8))}, rng.normal(size=(2, 6)), [3])
        w.end_sequence(0, "max_new")
        w.finish(True, "finished")
    with h5py.File(path, "r") as f:
        d = f["seq/0/hidden/embed"]
        ok &= check(
            d.compression == "gzip" and d.compression_opts == 1 and d.shuffle,
            "compression='deflate': shuffle + gzip level 1 (%s)" % d.compression,
        )
    rc, j = show_json(exe, path)
    ok &= check(rc == 0 and j["sequences"][0]["tokens"] == [1, 2, 3], "driftscope reads the deflated trace")
    x = np.array([1.0, -2.5, 3.1415926, 1e-30, 65504.0, np.inf, -np.inf, 1.00390625, 1.01171875], np.float32)
    ok &= check(
        (bf16_bits(x) == torch.from_numpy(x).bfloat16().view(torch.int16).numpy().view(np.uint16)).all(),
        "bf16 rounding of ties and special values matches torch",
    )

    path = os.path.join(work, "interrupted.h5")
    try:
        with TraceWriter(path, force=True) as w:
            w.begin_sequence(0, [1])
            w.append(0, {"embed": np.ones((1, 4))}, np.zeros((1, 5)), [2])
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    rc, j = show_json(exe, path)
    ok &= check(
        rc == 0
        and not j["complete"]
        and j["stop_reason"] == "interrupted"
        and j["sequences"][0]["stop_reason"] == "interrupted",
        "an exception inside the writer leaves a readable trace, complete=0, interrupted",
    )
    return ok


def schema_names():
    """Every name and path of trace/schema.h (`inline constexpr const char* kTopkIds = "topk_ids";`)
    is in schema.py with the same value, under the same name in Python's spelling (TOPK_IDS)."""
    with open(os.path.join(ROOT, "trace", "schema.h")) as f:
        names = re.findall(r'inline constexpr const char\* k(\w+) = "([^"]*)";', f.read())
    python = {re.sub(r"(?<!^)(?=[A-Z])", "_", n).upper(): v for n, v in names}
    wrong = {n: v for n, v in python.items() if getattr(schema, n, None) != v}
    return check(
        len(names) >= 11 and not wrong,
        "schema.py names the %d groups and datasets of trace/schema.h "
        "(missing or different: %s)" % (len(names), wrong or "none"),
    )


def refusals(work):
    ok = True
    gpt2 = os.path.join(work, "gpt2")
    os.makedirs(gpt2, exist_ok=True)
    with open(os.path.join(gpt2, "config.json"), "w") as f:
        json.dump(
            {
                "architectures": ["GPT2LMHeadModel"],
                "model_type": "gpt2",
                "vocab_size": 64,
                "n_embd": 16,
                "n_layer": 1,
                "n_head": 2,
            },
            f,
        )
    out = os.path.join(work, "gpt2.h5")
    p = recorder("-m", gpt2, "--prompt-ids", "1,2", "-o", out)
    ok &= check(
        p.returncode == 2
        and "GPT2LMHeadModel" in p.stderr
        and "not a family driftscope loads" in p.stderr
        and not os.path.exists(out),
        "an unknown family stops with exit 2, names the class, writes nothing: " + p.stderr.strip().splitlines()[-1],
    )

    bundled = os.path.join(ROOT, "models", "kjv-llama")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(bundled, attn_implementation="eager")
    model.model.layers[3].self_attn.o_proj = torch.nn.Identity()
    try:
        site_table(model)
        ok &= check(False, "a module layout that cannot be mapped is refused")
    except LayoutError as e:
        ok &= check("'model.layers.3.self_attn.o_proj'" in str(e), "an unmappable layout names the module: %s" % e)

    out = os.path.join(work, "bad_ids.h5")
    p = recorder("-m", bundled, "--prompt-ids", "1,2000", "-o", out)
    ok &= check(
        p.returncode == 2 and "2000" in p.stderr and not os.path.exists(out),
        "a token id outside the vocabulary: exit 2, nothing written: " + p.stderr.strip(),
    )
    p = recorder(
        "-m",
        bundled,
        "--prompt-ids",
        "1",
        "--probes",
        "L9/out",
        "-o",
        out,
        command=[sys.executable, "-m", "driftscope_trace.hf"],
    )
    ok &= check(
        p.returncode == 2 and "L9/out" in p.stderr and not os.path.exists(out),
        "python -m driftscope_trace.hf (the older command) still runs; an unknown probe: exit 2, "
        "nothing written: " + p.stderr.strip(),
    )
    p = recorder("-m", bundled, "--prompt-ids", "1", "--batch", "0", "-o", out)
    ok &= check(
        p.returncode == 2 and "--batch" in p.stderr and not os.path.exists(out),
        "--batch 0: exit 2, nothing written: " + p.stderr.strip(),
    )
    # fp16 on the CPU: torch 1.13 has no Half matmul there (refused before anything is written,
    # not a traceback after the trace is opened); today's torch computes it
    p = recorder("-m", bundled, "--prompt-ids", "1,2", "-n", "2", "--dtype", "fp16", "-o", out)
    if int(torch.__version__.split(".")[0]) < 2:
        ok &= check(
            p.returncode == 2
            and "cannot compute in fp16 on cpu" in p.stderr
            and len(p.stderr.strip().splitlines()) == 1
            and not os.path.exists(out),
            "fp16 on torch %s's CPU: exit 2, one line, nothing written: %s" % (torch.__version__, p.stderr.strip()),
        )
    else:
        ok &= check(
            p.returncode == 0 and os.path.exists(out),
            "fp16 on torch %s's CPU records" % torch.__version__ + p.stderr.strip(),
        )
        os.remove(out)
    return ok


def forced_prompts_reader(exe, work):
    """{"ids", "forced"} lines read as driftscope reads them: the prompts and continuations as
    written here, and every line driftscope run refuses refused by the recorder too (exit 2 from
    both, the recorder's message naming the line)."""
    ok = True
    path = os.path.join(work, "forced.jsonl")
    with open(path, "w") as f:
        f.write('{"ids": [1, 403], "forced": [407, 9]}\n\n{"ids": [5]}\n{"ids": [7], "forced": []}\nplain text\n')
    got = read_prompts_file(path, lambda text: [1, len(text)])
    want = [(None, [1, 403], [407, 9]), (None, [5], None), (None, [7], []), ("plain text", [1, 10], None)]
    ok &= check(got == want, "forced JSONL read: prompt, continuation (or None, or []) per line: %s" % got)
    bundled = os.path.join(ROOT, "models", "kjv-llama")
    bad = {
        '{"text": "a", "forced": [3]}': '"forced" goes with "ids"',
        '{"ids": [1], "forced": 3}': '"forced" goes with "ids"',
        '{"ids": [1], "forced": [2, -1]}': '"forced" holds -1, not a token id',
        '{"ids": [1], "forced": [2.0]}': '"forced" holds 2.0, not a token id',
        '{"ids": [1], "forced": [true]}': '"forced" holds true, not a token id',
        '{"ids": [1], "forced": ["2"]}': '"forced" holds "2", not a token id',
        '{"ids": [1], "forced": [4294967297]}': '"forced" holds 4294967297, not a token id',
        '{"ids": [-1], "forced": [2]}': '"ids" holds -1, not a token id',
        '{"ids": [1], "text": "a", "forced": [2]}': 'give "text" or "ids", not both',
        '{"ids": 1, "forced": [2]}': 'needs a "text" string or an "ids" list',
        '{"forced": [2]}': '"forced" goes with "ids"',
    }
    for n, (line, message) in enumerate(bad.items()):
        path = os.path.join(work, "bad-%d.jsonl" % n)
        with open(path, "w") as f:
            f.write('{"ids": [1]}\n' + line + "\n")
        try:
            read_prompts_file(path, None)
            mine = None
        except PromptError as e:
            mine = str(e)
        out = os.path.join(work, "bad-%d.h5" % n)
        p = subprocess.run(
            [exe, "run", "--model", bundled, "--prompts", path, "-n", "1", "-q", "-o", out],
            capture_output=True,
            text=True,
        )
        ok &= check(
            mine is not None
            and mine.startswith(path + ":2: ")
            and message in mine
            and p.returncode == 2
            and message in p.stderr
            and not os.path.exists(out),
            "%s: refused by the recorder (%s) and by driftscope run (exit %d)" % (line, mine, p.returncode),
        )
    return ok


def shared_bad_inputs(work):
    """The cases of tests/data/bad_inputs/run.json (read by tests/cli/test_cli_bad_inputs_shared.cpp
    too, against driftscope run): each refused one exits 2 with one line, its message and its
    hint, and writes no trace; each accepted one records."""
    with open(os.path.join(ROOT, "tests", "data", "bad_inputs", "run.json")) as f:
        table = json.load(f)
    ok = True
    for n, case in enumerate(table["cases"]):
        d = os.path.join(work, "bad-input-%d" % n)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for name, text in case.get("files", {}).items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(text.encode("utf-8"))
        out = os.path.join(d, "out.h5")
        p = recorder(
            "--model",
            os.path.join(ROOT, table["model"]),
            "-n",
            "1",
            "-q",
            "-o",
            out,
            *[a.replace("{dir}", d) for a in case["args"]],
        )
        err = p.stderr.strip().splitlines()
        if case["exit"] == 0:
            ok &= check(
                p.returncode == 0 and os.path.exists(out),
                "%s: recorded (exit %d) %s" % (case["name"], p.returncode, p.stderr.strip()[-300:]),
            )
            continue
        message = case["message"].replace("{dir}", d)
        ok &= check(
            p.returncode == case["exit"]
            and len(err) == 1
            and err[0].startswith("driftscope_trace: " + message)
            and case["hint"] in err[0]
            and not os.path.exists(out),
            "%s: exit %d, one line with the message and the hint, nothing written: %s"
            % (case["name"], p.returncode, p.stderr.strip()[-400:]),
        )
    return ok


def packaging(work):
    """The console command, and the missing optional dependencies named with their pip command."""
    ok = True
    p = subprocess.run(recorder_command() + ["--version"], capture_output=True, text=True)
    ok &= check(
        p.returncode == 0 and p.stdout.strip() == "driftscope-trace 0.1.0",
        "driftscope-trace --version: %s" % p.stdout.strip(),
    )
    # Debian's own Python has h5py and numpy but not transformers: the writer imports, the
    # transformers recorder names what is missing
    bare = "/usr/bin/python3"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    has = subprocess.run([bare, "-c", "import transformers"], capture_output=True).returncode == 0
    out = os.path.join(work, "missing.h5")
    if has:
        print("note    %s has transformers: the missing-dependency case is not run" % bare)
    else:
        p = subprocess.run(
            [
                bare,
                "-m",
                "driftscope_trace",
                "run",
                "-m",
                os.path.join(ROOT, "models", "kjv-llama"),
                "--prompt-ids",
                "1",
                "-o",
                out,
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        ok &= check(
            p.returncode == 2
            and "'transformers'" in p.stderr
            and "pip install" in p.stderr
            and len(p.stderr.strip().splitlines()) == 1
            and not os.path.exists(out),
            "transformers not installed: one line, exit 2, nothing written: " + p.stderr.strip(),
        )
    return ok


def main(exe, work):
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    ok = schema_names()
    ok &= writer_traces(exe, work)
    ok &= refusals(work)
    ok &= forced_prompts_reader(exe, work)
    ok &= shared_bad_inputs(work)
    ok &= packaging(work)
    print("(%s)" % stack())
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1], sys.argv[2]) else 1)
