"""Record a driftscope trace (format v1) from llama.cpp, through llama-cpp-python's low-level API:

  driftscope-trace llamacpp -m model.gguf [--source-model HF_DIR] (--prompt-ids 1,2 | --prompts FILE |
      --prompt TEXT | --force-tokens A.h5) -o t.h5 [--kv-type f32|f16] [--threads N] [-n 256]
      [--probes ...] [--trace-topk 20] [--temperature 0 --top-p 1 --top-k 0 --seed 0]

Each prompt is one llama_decode of the prompt (every position's logits asked for), then one
llama_decode per new token with llama.cpp's KV cache, the next token chosen as driftscope chooses
it (sampler.py). The hidden states come from llama.cpp's eval callback (gguf_sites.py names the
graph tensors that are driftscope's sites). --source-model names the Hugging Face directory the
GGUF was converted from: its weight files are the trace's model identity (so `driftscope diff`
compares the trace with driftscope's and transformers' runs of that model), its tokenizer encodes
text prompts. The GGUF's file type (F32, F16, BF16, Q8_0, ...) and the KV cache type are in
config_json's engine block, so diff names them."""

import argparse
import ctypes
import json
import os
import shlex
import sys

import numpy as np

from . import schema, writer
from .deps import require
from .gguf_sites import ARCHITECTURES, available, site_of
from .identity import env_json, model_json, sha256_file
from .prompt_args import UsageError, add_common_flags, check_flags, check_topk, select_prompts
from .prompts import PromptError
from .sampler import sample_next, validate as validate_sampling

GGML_TYPE_F32, GGML_TYPE_F16 = 0, 1
KV_TYPES = {"f32": GGML_TYPE_F32, "f16": GGML_TYPE_F16}


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="driftscope-trace llamacpp", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-m", "--model", required=True, help="GGUF file")
    ap.add_argument("--source-model", help="the Hugging Face directory the GGUF was converted from")
    add_common_flags(ap)
    ap.add_argument(
        "--kv-type",
        default="f32",
        choices=sorted(KV_TYPES),
        help="KV cache type (llama.cpp's default is f16; f32 agrees with fp32 engines)",
    )
    ap.add_argument("--threads", type=int, default=1)
    return ap.parse_args(argv)


class _Ggml:
    """The few ggml functions the callback needs, from the library llama-cpp-python loaded."""

    def __init__(self):
        from llama_cpp import _ggml

        lib = _ggml.libggml
        self.get_name = lib.ggml_get_name
        self.get_name.argtypes, self.get_name.restype = [ctypes.c_void_p], ctypes.c_char_p
        self.nelements = lib.ggml_nelements
        self.nelements.argtypes, self.nelements.restype = [ctypes.c_void_p], ctypes.c_int64
        self.nrows = lib.ggml_nrows
        self.nrows.argtypes, self.nrows.restype = [ctypes.c_void_p], ctypes.c_int64
        self.tensor_get = lib.ggml_backend_tensor_get
        self.tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        self.tensor_get.restype = None

    @staticmethod
    def type_of(t):
        return ctypes.c_int32.from_address(t).value  # struct ggml_tensor's first field


_LOG = []


def _quiet_log(L):
    """A log callback that drops llama.cpp's messages, kept for the life of the process: llama.cpp
    holds the pointer, and a ctypes callback freed while it does crashes the next log line."""
    if not _LOG:
        _LOG.append(L.llama_log_callback(lambda level, text, data: None))
    return _LOG[0]


class Engine:
    """A llama.cpp model and context with the eval callback taking the wanted sites."""

    def __init__(self, path, kv_type, threads, n_ctx, sites):
        import llama_cpp as L

        self.L, self.g = L, _Ggml()
        L.llama_log_set(_quiet_log(L), ctypes.c_void_p(0))
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = 0
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise UsageError("llama.cpp cannot load '%s' as a GGUF model" % path)
        self.arch = self.meta("general.architecture")
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        self.n_layers = L.llama_model_n_layer(self.model)
        self.n_ctx = min(n_ctx, L.llama_model_n_ctx_train(self.model))
        self.wanted, self.taken, self.error = set(sites), {}, None
        self._cb = L.ggml_backend_sched_eval_callback(self._callback)  # kept alive with self
        cp = L.llama_context_default_params()
        cp.n_ctx = cp.n_batch = cp.n_ubatch = self.n_ctx
        cp.n_threads = cp.n_threads_batch = threads
        cp.type_k = cp.type_v = KV_TYPES[kv_type]
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.cb_eval, cp.cb_eval_user_data = self._cb, None
        self.ctx = L.llama_init_from_model(self.model, cp)
        if not self.ctx:
            raise UsageError("llama.cpp cannot make a context for '%s'" % path)
        self.batch = L.llama_batch_init(self.n_ctx, 0, 1)

    def meta(self, key):
        buf = ctypes.create_string_buffer(256)
        n = self.L.llama_model_meta_val_str(self.model, key.encode(), buf, len(buf))
        return buf.value.decode() if n >= 0 else None

    def _callback(self, t, ask, user_data):
        # an exception cannot cross the C callback (ctypes prints and drops it): kept for decode()
        try:
            site = site_of(self.g.get_name(t).decode())
            if ask:
                return site in self.wanted
            if site in self.wanted:
                n, rows = self.g.nelements(t), self.g.nrows(t)
                if self.g.type_of(t) != GGML_TYPE_F32:
                    raise RuntimeError(
                        "llama.cpp's tensor for %s is not F32 (ggml type %d)" % (site, self.g.type_of(t))
                    )
                out = np.empty(n, dtype=np.float32)
                self.g.tensor_get(t, out.ctypes.data, 0, n * 4)
                self.taken[site] = out.reshape(rows, n // rows)
        except Exception as e:  # noqa: BLE001 (re-raised by decode)
            self.error = self.error or e
        return True

    def clear(self):
        self.L.llama_memory_clear(self.L.llama_get_memory(self.ctx), True)

    def decode(self, tokens, first_pos):
        """Decodes tokens at positions first_pos...; returns the logits of every position [n, V]."""
        b, n = self.batch, len(tokens)
        for i, t in enumerate(tokens):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = t, first_pos + i, 1, 1
            b.seq_id[i][0] = 0
        b.n_tokens = n
        self.taken, self.error = {}, None
        rc = self.L.llama_decode(self.ctx, b)
        if rc != 0:
            raise RuntimeError("llama_decode failed (%d)" % rc)
        if self.error is not None:
            raise self.error
        logits = np.ctypeslib.as_array(self.L.llama_get_logits(self.ctx), shape=(n * self.n_vocab,))
        return logits.reshape(n, self.n_vocab).astype(np.float64)

    def require_sites(self, sites):
        """A UsageError naming the first of `sites` the last decode's graph did not compute."""
        missing = [s for s in sites if s not in self.taken]
        if missing:
            raise UsageError(
                "llama.cpp's graph has no tensor for %s (architecture %s): leave it out "
                "of --probes" % (missing[0], self.arch)
            )

    def tokenize(self, text):
        raw = text.encode()
        buf = (self.L.llama_token * (len(raw) + 8))()
        n = self.L.llama_tokenize(self.vocab, raw, len(raw), buf, len(buf), True, True)
        return list(buf[:n])

    def close(self):
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        self.L.llama_model_free(self.model)


FILE_TYPES = {0: "F32", 1: "F16", 7: "Q8_0", 32: "BF16", 2: "Q4_0", 15: "Q4_K_M"}


def generate_one(engine, w, index, prompt, forced, sites, a, eos):
    engine.clear()
    tokens, feed, generated = list(prompt), list(prompt), 0
    while True:
        logits = engine.decode(feed, len(tokens) - len(feed))
        engine.require_sites(sites)
        hidden = {s: engine.taken[s] for s in sites}
        if (forced is not None and len(forced) == 0) or (forced is None and a.max_new == 0):
            w.append(index, hidden, logits, [])
            return "max_new"
        nxt = (
            int(forced[generated])
            if forced is not None
            else sample_next(
                logits[-1],
                a.temperature,
                a.top_p,
                a.top_k,
                a.seed,
                a.tie_break == "highest_id",
                a.repetition_penalty,
                index,
                generated,
                tokens,
            )
        )
        tokens.append(nxt)
        generated += 1
        w.append(index, hidden, logits, [nxt])
        if eos is not None and nxt == eos:
            return "eos"
        if forced is not None and generated == len(forced):
            return "forced"
        if forced is None and generated == a.max_new:
            return "max_new"
        if len(tokens) >= engine.n_ctx:
            return "context"
        feed = [nxt]


# GGUF metadata value types: size of the scalar ones (the spec's gguf_metadata_value_type)
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


def gguf_architecture(path):
    """general.architecture of a GGUF file read from its header (no llama.cpp needed), or a
    UsageError naming what is wrong with the file."""
    import struct

    def read(f, n):
        b = f.read(n)
        if len(b) != n:
            raise UsageError("'%s' is a truncated GGUF file" % path)
        return b

    def string(f):
        return read(f, struct.unpack("<Q", read(f, 8))[0]).decode("utf-8", "replace")

    def skip(f, t):
        if t in _SCALAR:
            read(f, _SCALAR[t])
        elif t == _STRING:
            string(f)
        elif t == _ARRAY:
            et, n = struct.unpack("<IQ", read(f, 12))
            for _ in range(n):
                skip(f, et)
        else:
            raise UsageError("'%s': unknown GGUF value type %d" % (path, t))

    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise UsageError(
                "'%s' is not a GGUF file (no GGUF magic): convert a Hugging Face directory with "
                "llama.cpp's convert_hf_to_gguf.py" % path
            )
        _, _, n_kv = struct.unpack("<IQQ", read(f, 20))
        for _ in range(n_kv):
            key, t = string(f), struct.unpack("<I", read(f, 4))[0]
            if key == "general.architecture" and t == _STRING:
                return string(f)
            skip(f, t)
    raise UsageError("GGUF '%s' has no general.architecture" % path)


def record(a):
    validate_sampling(a.temperature, a.top_p, a.top_k, a.repetition_penalty)
    if os.path.exists(a.output) and not a.force:
        raise UsageError("trace '%s' already exists; pass --force to overwrite it" % a.output)
    if not os.path.isfile(a.model):
        raise UsageError("GGUF file '%s' does not exist" % a.model)
    if a.threads < 1:
        raise UsageError("threads %d: --threads takes N >= 1" % a.threads)
    arch = gguf_architecture(a.model)
    if arch not in ARCHITECTURES:
        raise UsageError(
            "GGUF '%s' is architecture '%s': the llama.cpp recorder maps %s (convert a "
            "Llama, Mistral or Qwen2 model)" % (a.model, arch, ", ".join(sorted(ARCHITECTURES)))
        )
    require("llamacpp")  # after the checks that need no llama.cpp
    import llama_cpp

    engine = Engine(a.model, a.kv_type, a.threads, 4096, [])
    check_topk(a, engine.n_vocab)
    sites = available(schema.resolve_probes(a.probes, engine.n_layers), arch, a.probes)
    engine.wanted = set(sites)
    tok = None
    if a.source_model and os.path.exists(os.path.join(a.source_model, "tokenizer.json")):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(os.path.join(a.source_model, "tokenizer.json"))
    encode = (lambda text: tok.encode(text).ids) if tok is not None else engine.tokenize
    bos = engine.L.llama_vocab_bos(engine.vocab)
    eos = engine.L.llama_vocab_eos(engine.vocab)
    bos, eos = (None if bos < 0 else bos), (None if eos < 0 else eos)
    prompts = select_prompts(a, encode, bos, engine.n_vocab, engine.n_ctx, "")
    ftype = engine.L.llama_model_ftype(engine.model)
    eng = {
        "name": "llama.cpp",
        "version": "llama-cpp-python %s" % llama_cpp.__version__,
        "architecture": engine.arch,
        "weights": FILE_TYPES.get(ftype, "ftype %d" % ftype),
        "kv_type": a.kv_type,
        "flash_attn": "off",
        "threads": a.threads,
        "device": "cpu",
        "gguf": os.path.basename(a.model),
    }
    window = unapplied_window(a, prompts)
    if window:
        eng["sliding_window"] = "none (source model: %d)" % window
    config = {
        "device": "cpu",
        "dtype": "fp32",
        "batch": 1,
        "tp": 1,
        "prefill_chunk": 0,
        "prefix_cache": "off",
        "tie_break": a.tie_break,
        "add_bos": a.add_bos,
        "repetition_penalty": a.repetition_penalty,
        "max_new": a.max_new,
        "temperature": a.temperature,
        "top_p": a.top_p,
        "top_k": a.top_k,
        "seed": a.seed,
        "cuda_graphs": "off",
        "tf32": "off",
        "engine": eng,
        "trace": schema.trace_block(a.probes, a.hidden_dtype, a.topk, a.full_logits, a.compression, a.force_tokens),
    }
    # one forward pass before the trace is opened: a site the graph does not name is refused
    # with nothing written
    engine.decode(prompts[0][1][:1], 0)
    engine.require_sites(sites)
    mjson = gguf_model_json(a, engine)
    producer = "driftscope_trace %s (llama.cpp, llama-cpp-python %s)" % (schema.PACKAGE_VERSION, llama_cpp.__version__)
    env = env_json(
        {
            "driftscope_trace_version": schema.PACKAGE_VERSION,
            "llama_cpp_python_version": llama_cpp.__version__,
            "numpy_version": np.__version__,
        }
    )
    cmd = " ".join(shlex.quote(x) for x in [os.path.basename(sys.argv[0])] + sys.argv[1:])
    n_gen = 0
    with writer.TraceWriter(
        a.output,
        hidden_dtype=a.hidden_dtype,
        topk=a.topk,
        full_logits=a.full_logits,
        force=a.force,
        config_json=json.dumps(config),
        model_json=mjson,
        env_json=env,
        command_line=cmd,
        producer=producer,
        compression=a.compression,
    ) as w:
        for i, (_, ids, forced) in enumerate(prompts):
            w.begin_sequence(i, ids)
            w.end_sequence(i, generate_one(engine, w, i, ids, forced, sites, a, eos))
            n_gen += w._seqs[i].n_tokens - len(ids)
        w.finish(True, "finished")
    engine.close()
    if not a.quiet:
        print(
            "driftscope_trace: wrote %s (%d sequences, %d generated tokens, %d hidden sites, llama.cpp %s)"
            % (a.output, len(prompts), n_gen, len(sites), eng["weights"]),
            file=sys.stderr,
        )
    return 0


def unapplied_window(a, prompts):
    """The source model's sliding window when the run reaches past it, with a note on stderr:
    llama.cpp's converter writes a Mistral as architecture llama with no window, and the llama
    graph attends to every position, so from that position on llama.cpp computes another model
    (measured on kjv-mistral, window 32: positions 0-31 agree with driftscope to 8e-7, every
    sequence flips by position 56)."""
    if not a.source_model:
        return None
    with open(os.path.join(a.source_model, "config.json")) as f:
        window = json.load(f).get("sliding_window")
    reach = max(len(ids) + (len(forced) if forced is not None else a.max_new) for _, ids, forced in prompts)
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0 or reach <= window:
        return None
    if not a.quiet:
        print(
            "driftscope_trace: note: %s attends within a sliding window of %d positions; llama.cpp's graph "
            "of this GGUF attends to every position, so from position %d on it computes another model "
            "(recorded as engine.sliding_window)" % (a.source_model, window, window),
            file=sys.stderr,
        )
    return window


def gguf_model_json(a, engine):
    """The source model's identity (its weight files) when --source-model names it, else the
    GGUF's; the GGUF itself in "gguf"."""
    if a.source_model:
        import types

        with open(os.path.join(a.source_model, "config.json")) as f:
            cfg = types.SimpleNamespace(**json.load(f))  # read as it is: no transformers needed
        arch = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2"}.get(
            (getattr(cfg, "architectures", None) or [""])[0], engine.arch
        )
        j = json.loads(model_json(os.path.abspath(a.source_model), cfg, arch, None))
    else:
        j = {
            "architecture": engine.arch,
            "format": "gguf",
            "path": os.path.abspath(a.model),
            "config": {"n_layers": engine.n_layers, "vocab_size": engine.n_vocab},
            "files": [
                {"name": os.path.basename(a.model), "bytes": os.path.getsize(a.model), "sha256": sha256_file(a.model)}
            ],
        }
    j["gguf"] = {"path": os.path.abspath(a.model), "sha256": sha256_file(a.model)}
    return json.dumps(j)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        check_flags(a)
        return record(a)
    except (UsageError, PromptError, schema.ProbeError, ValueError, OSError) as e:
        print("driftscope_trace: %s" % e, file=sys.stderr)
        return 2
