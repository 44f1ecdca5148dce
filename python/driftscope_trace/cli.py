"""The console command `driftscope-trace` (pip install ./python):

  driftscope-trace run ...        record from Hugging Face transformers (driftscope_trace.hf)
  driftscope-trace llamacpp ...   record from llama.cpp through llama-cpp-python (driftscope_trace.gguf_run)
  driftscope-trace --version

`python3 -m driftscope_trace` is the same command. Exit codes as driftscope's: 2 for bad input
(a missing optional dependency included), 130 when interrupted."""

import sys

from .schema import PACKAGE_VERSION


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["--version"], ["-V"]):
        print("driftscope-trace %s" % PACKAGE_VERSION)
        return 0
    if argv[:1] == ["llamacpp"]:
        from . import gguf_run

        return gguf_run.main(argv[1:])
    if argv[:1] in (["-h"], ["--help"], []):
        print(__doc__.strip())
        return 0 if argv else 2
    from . import hf

    return hf.main(argv)


if __name__ == "__main__":
    sys.exit(main())
