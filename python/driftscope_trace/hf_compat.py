"""What differs between the two transformers lines the recorder is tested on: 4.46 over Debian's
torch 1.13, and 5.x over torch 2.x from PyPI. (The decoder layer's output, a tuple in 4.x and the
tensor in 5.x, is handled where it is hooked, hf_sites.py; rope_theta's place in identity.py.)"""

import platform


def major_version():
    import transformers

    return int(transformers.__version__.split(".")[0])


def from_pretrained_kwargs(dtype, attn_implementation):
    """from_pretrained's arguments: `dtype=` in 5.x (`torch_dtype=` is deprecated there), and
    `torch_dtype=` before (4.46 does not know `dtype=`)."""
    key = "dtype" if major_version() >= 5 else "torch_dtype"
    return {key: dtype, "attn_implementation": attn_implementation}


def library_versions():
    """The versions of every library the numbers depend on, as recorded in config_json's engine
    block (so `driftscope diff` names a difference between two stacks)."""
    import numpy
    import tokenizers
    import torch
    import transformers

    return {
        "version": transformers.__version__,
        "torch": torch.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }


def engine_block(model, device):
    """config_json's "engine" object of a transformers run: library versions, device, dtype,
    attention implementation, padding side (the batch size is config_json's "batch") and torch's
    thread counts."""
    import torch

    dtype = next(model.parameters()).dtype
    engine = {"name": "transformers"}
    engine.update(library_versions())
    engine.update(
        {
            "device": str(device),
            "dtype": str(dtype).replace("torch.", ""),
            "attn_implementation": model.config._attn_implementation,
            "padding_side": "left",
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
        }
    )
    return engine
