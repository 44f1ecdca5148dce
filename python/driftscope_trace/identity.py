"""The /meta descriptions of a recorder run: model identity (the same fields as driftscope's
model_json, so `driftscope diff` checks both traces are of the same weights) and environment."""

import hashlib
import json
import os
import platform
import socket

import h5py


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def weight_files(model_dir):
    """The safetensors files of a model directory, as driftscope's loader finds them ([] when
    the model was not loaded from a directory)."""
    if not model_dir or not os.path.isdir(model_dir):
        return []
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            names = sorted(set(json.load(f)["weight_map"].values()))
    elif os.path.exists(os.path.join(model_dir, "model.safetensors")):
        names = ["model.safetensors"]
    else:
        names = sorted(n for n in os.listdir(model_dir) if n.endswith((".safetensors", ".bin")))
    return [os.path.join(model_dir, n) for n in names]


def safetensors_dtype(path):
    """The dtype of the first tensor of a safetensors file (driftscope's weight_dtype), or None."""
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        for k, v in header.items():
            if k != "__metadata__":
                return v["dtype"]
    except (OSError, ValueError, KeyError):
        return None
    return None


def rope_theta(c):
    """RoPE's base: config.rope_theta in transformers 4.x, config.rope_parameters["rope_theta"] in
    5.x (where reading rope_theta quietly answers the default 10000)."""
    params = getattr(c, "rope_parameters", None)
    if isinstance(params, dict) and "rope_theta" in params:
        return float(params["rope_theta"])
    return float(getattr(c, "rope_theta", None) or 10000.0)


def model_json(model_dir, hf_config, architecture, tokenizer_identity):
    c = hf_config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    files = weight_files(model_dir)
    sliding = getattr(c, "sliding_window", None) if architecture == "mistral" else None
    j = {
        "architecture": architecture,
        "format": "huggingface",
        "path": model_dir,
        "weight_dtype": safetensors_dtype(files[0]) if files else None,
        "config": {
            "dim": c.hidden_size,
            "hidden_dim": c.intermediate_size,
            "n_layers": c.num_hidden_layers,
            "n_heads": c.num_attention_heads,
            "n_kv_heads": getattr(c, "num_key_value_heads", None) or c.num_attention_heads,
            "head_dim": head_dim,
            "vocab_size": c.vocab_size,
            "max_seq_len": c.max_position_embeddings,
            "rms_norm_eps": c.rms_norm_eps,
            "rope_theta": rope_theta(c),
            "tied_embeddings": bool(getattr(c, "tie_word_embeddings", False)),
            "qkv_bias": architecture == "qwen2" or bool(getattr(c, "attention_bias", False)),
            "sliding_window": int(sliding or 0),
        },
        "files": [{"name": os.path.basename(p), "bytes": os.path.getsize(p), "sha256": sha256_file(p)} for p in files],
        "tokenizer": tokenizer_identity,
    }
    return json.dumps(j)


def tokenizer_identity(tokenizer_json, tokenizer, vocab_size):
    """What driftscope records of a tokenizer, for the `tokenizers` (Rust) tokenizer transformers
    used: kind "hf-tokenizers"; the BOS/EOS policy as prefix/suffix ids of an empty encoding."""
    if tokenizer is None or tokenizer_json is None:
        return None
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    empty = tokenizer("", add_special_tokens=True)["input_ids"]
    prefix = [i for i in empty if i == bos] if empty else []
    suffix = [i for i in empty[len(prefix) :]] if empty else []
    policy = {
        "kind": "hf-tokenizers",
        "vocab_size": vocab_size,
        "bos_id": bos,
        "eos_id": eos,
        "add_special": {"prefix": prefix, "suffix": suffix},
        "adds_bos": bos is not None and bos in prefix,
        "adds_eos": eos is not None and eos in suffix,
        "special_in_text": True,
    }
    return {
        "path": os.path.abspath(tokenizer_json),
        "sha256": sha256_file(tokenizer_json),
        "kind": "hf-tokenizers",
        "bos_id": bos,
        "eos_id": eos,
        "policy": policy,
    }


def loaded_model_json(config, family, tokenizer, model_dir=None):
    """model_json of a model an engine loaded: its directory is `model_dir` or the config's
    _name_or_path (from_pretrained's argument), the tokenizer's `tokenizer.json` is looked up in
    the tokenizer's own name_or_path."""
    path = model_dir or getattr(config, "_name_or_path", "") or ""
    tok_json = None
    if tokenizer is not None:
        d = getattr(tokenizer, "name_or_path", "") or ""
        found = os.path.join(d, "tokenizer.json")
        tok_json = found if os.path.isfile(found) else None
    ident = tokenizer_identity(tok_json, tokenizer, config.vocab_size)
    return model_json(os.path.abspath(path) if os.path.isdir(path) else path, config, family, ident)


def env_json(extra):
    j = {
        "host": socket.gethostname(),
        "os": "%s %s %s" % (platform.system(), platform.release(), platform.machine()),
        "python": platform.python_version(),
        "h5py_version": h5py.__version__,
        "hdf5_version": h5py.version.hdf5_version,
    }
    j.update(extra)
    return json.dumps(j)
