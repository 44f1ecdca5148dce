"""driftscope_trace: write driftscope trace format v1 (docs/trace-format.md) from Python, and
record traces from real engines: Hugging Face transformers (driftscope_trace.hf, the
`driftscope-trace run` command; record() around generate() in an evaluation loop), llama.cpp
(`driftscope-trace llamacpp`), and the model objects of vLLM and SGLang (record_flat(), hooks
tested on stand-ins of their modules, not on the engines)."""

from .schema import FORMAT_NAME, FORMAT_VERSION, PACKAGE_VERSION, all_sites, default_sites, resolve_probes
from .writer import TraceWriter, TraceWriteError


def record(model, path, **kw):
    """Records the sequences `model.generate` makes inside `with record(model, path) as rec:` into
    trace `path` (driftscope_trace/capture.py). Needs torch and transformers."""
    from .capture import record as _record

    return _record(model, path, **kw)


def record_flat(model, path, **kw):
    """Records the requests a vLLM or SGLang model object serves, step by step as the caller
    reports them, into trace `path` (driftscope_trace/flat_record.py). Needs torch."""
    from .flat_record import record_flat as _record_flat

    return _record_flat(model, path, **kw)


__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "PACKAGE_VERSION",
    "TraceWriter",
    "TraceWriteError",
    "all_sites",
    "default_sites",
    "record",
    "record_flat",
    "resolve_probes",
]
