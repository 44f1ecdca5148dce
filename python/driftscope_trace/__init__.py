"""driftscope_trace: write driftscope trace format v1 (docs/trace-format.md) from Python, and
record traces from Hugging Face transformers (driftscope_trace.hf)."""
from .schema import FORMAT_NAME, FORMAT_VERSION, PACKAGE_VERSION, all_sites, default_sites, resolve_probes
from .writer import TraceWriter, TraceWriteError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "PACKAGE_VERSION", "TraceWriter", "TraceWriteError",
           "all_sites", "default_sites", "resolve_probes"]
