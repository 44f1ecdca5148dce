"""driftscope_trace: write driftscope trace format v1 (docs/trace-format.md) from Python, and
record traces from real engines: Hugging Face transformers (driftscope_trace.hf, the
`driftscope-trace run` command; record() around generate() in an evaluation loop) and llama.cpp
(`driftscope-trace llamacpp`)."""
from .schema import FORMAT_NAME, FORMAT_VERSION, PACKAGE_VERSION, all_sites, default_sites, resolve_probes
from .writer import TraceWriter, TraceWriteError


def record(model, path, **kw):
    """Records the sequences `model.generate` makes inside `with record(model, path) as rec:` into
    trace `path` (driftscope_trace/capture.py). Needs torch and transformers."""
    from .capture import record as _record
    return _record(model, path, **kw)


__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "PACKAGE_VERSION", "TraceWriter", "TraceWriteError",
           "all_sites", "default_sites", "record", "resolve_probes"]
