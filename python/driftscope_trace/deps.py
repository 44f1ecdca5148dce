"""The optional dependencies of the recorders, checked before anything is written: a missing one
stops the command with one line naming it and the pip command that installs it (exit 2)."""

import importlib.util

# module -> (what needs it, the extra of `pip install driftscope-trace[...]` that brings it)
_EXTRAS = {
    "torch": "transformers",
    "transformers": "transformers",
    "tokenizers": "transformers",
    "safetensors": "transformers",
    "llama_cpp": "llamacpp",
    "gguf": "llamacpp",
}
_NEEDS = {"transformers": ("torch", "transformers", "tokenizers", "safetensors"), "llamacpp": ("llama_cpp",)}


class MissingDependency(ValueError):
    pass


def require(engine):
    """Raises MissingDependency naming the first module of the engine's that cannot be imported."""
    for module in _NEEDS[engine]:
        if importlib.util.find_spec(module) is None:
            raise MissingDependency(
                "the %s recorder needs the Python package '%s', which is not installed: "
                "pip install 'driftscope-trace[%s]' (from the repository: pip install './python[%s]')"
                % (
                    engine,
                    module.replace("_", "-") if module != "llama_cpp" else "llama-cpp-python",
                    _EXTRAS[module],
                    _EXTRAS[module],
                )
            )
