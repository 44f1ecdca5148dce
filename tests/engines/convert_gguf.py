"""llama.cpp's own convert_hf_to_gguf.py, run from a llama.cpp source tree (the llama-cpp-python
sdist's vendor/llama.cpp) with its gguf-py, for the engine tests:

  python convert_gguf.py LLAMA_CPP_SRC HF_DIR --outtype f32 --outfile out.gguf

One answer is given to it: the converter names a BPE tokenizer's pre-tokenizer by hashing what the
tokenizer makes of a test text, and kjv-qwen2's own tokenizer (trained for this project) is not in
its table, so it refuses the model ("BPE pre-tokenizer was not recognized"). Here that check
answers "qwen2", the family's pre-tokenizer. It decides only how llama.cpp itself would split text;
the recorder encodes text with the model's tokenizer.json (--source-model), and the weights and
every other key are the converter's own."""

import runpy
import sys


def main():
    src = sys.argv[1]
    sys.path[:0] = [src, src + "/gguf-py"]
    from conversion import base

    known = base.TextModel.get_vocab_base_pre

    def pre_tokenizer(self, tokenizer):
        try:
            return known(self, tokenizer)
        except NotImplementedError:
            if self.hparams.get("model_type") != "qwen2":
                raise
            return "qwen2"

    base.TextModel.get_vocab_base_pre = pre_tokenizer
    sys.argv = [src + "/convert_hf_to_gguf.py"] + sys.argv[2:]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
