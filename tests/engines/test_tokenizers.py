"""The Rust `tokenizers` library (the one behind transformers' fast tokenizers) as a second
reference for `driftscope tokenize`: identical ids on a deterministic mixed corpus of more than
1 MB (code, prose, CJK, emoji, other scripts, whitespace runs, added and special tokens) with the
bundled Qwen3 and Mistral tokenizers, the project's own kjv-llama and kjv-qwen2, and a Llama-3-layout tokenizer (Llama-3's pre-tokenizer
regex, ignore_merges, <|begin_of_text|> template) built here over Qwen3's vocabulary and merges.
Encoding without special tokens (add_special_tokens=False), special tokens matched in the text.

  python tests/engines/test_tokenizers.py DRIFTSCOPE_EXE WORK_DIR
"""

import json
import os
import random
import sys
import time

from tokenizers import Tokenizer

from engines_common import ROOT, check, run

FIXTURES = os.path.join(ROOT, "tests", "data", "tokenizers")
CORPUS_BYTES = 1_100_000

PIECES = {
    "prose": [
        "Once upon a time, there was a little girl named Lily. ",
        "She liked to play outside in the sun.",
        "The quick brown fox jumps over the lazy dog!",
        "It's a truth universally acknowledged; isn't it?",
        'He said: "We\'ll see — maybe tomorrow…" ',
        "In 1969, 3 astronauts flew 384,400 km to the Moon.",
        "naïve café résumé coöperate façade Ångström ",
        "I'd've thought they'd LOVE it. ",
        "Mr. O'Neil's dog's toys",
    ],
    "code": [
        "def f(x):\n    return x ** 2 + 1\n",
        "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
        "#include <vector>\nstd::vector<float> v(1024, 0.0f);\n",
        'if __name__ == "__main__":\n    main()\n',
        '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
        "$ ls -la /usr/local/bin | grep -E '^d'\n",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
        "    \n\n\t\t  x=1;;  //comment\r\n",
        'fn main() { println!("{:?}", vec![1u8, 2, 3]); }',
        "0x7fffffff 3.14159e-10 1_000_000 12345678901234",
    ],
    "cjk": [
        "今天天气很好，我们去公园散步吧。",
        "東京は日本の首都です。ひらがなとカタカナ、漢字。",
        "한국어 문장도 포함합니다. 안녕하세요!",
        "机器学习模型的数值漂移",
        "「こんにちは」と彼は言った。",
        "中文English混合text测试123",
    ],
    "emoji": [
        "😀😃😄 ",
        "👩‍👩‍👧‍👦 family ",
        "👍🏽👍🏿",
        "🇫🇷🇯🇵 flags ",
        "❤️‍🔥 ",
        "🧑‍💻 coding at 3am ☕",
        "✨🚀🌕",
        "\U0001f600\U0001f4a9",
    ],
    "scripts": [
        "Привет, как дела? ",
        "مرحبا بالعالم ",
        "שלום עולם ",
        "नमस्ते दुनिया ",
        "Ελληνικά γράμματα ",
        "ไทย ภาษา ",
        "e\u0301 a\u0308 combining ",
        "ﬁ ﬂ ligatures Ⅻ ① ",
        "\u00a0nbsp\u2009thin\u3000ideographic ",
    ],
    "space": [" ", "  ", "\n", "\n\n", "\t", "   \n  ", "\r\n", " \t \n"],
}


def corpus(special, seed=15):
    """Texts of 1 to ~2000 characters from the pieces above and the tokenizer's special tokens."""
    rng = random.Random(seed)
    kinds = list(PIECES) + ["special"]
    texts, size = [], 0
    while size < CORPUS_BYTES:
        parts = []
        for _ in range(rng.randint(1, 60)):
            kind = rng.choice(kinds)
            parts.append(rng.choice(special) if kind == "special" else rng.choice(PIECES[kind]))
            if rng.random() < 0.2:
                parts.append(rng.choice(PIECES["space"]))
        t = "".join(parts)
        texts.append(t)
        size += len(t.encode("utf-8"))
    return texts, size


def llama3_layout(work):
    """Llama-3's tokenizer.json layout over Qwen3's byte-level vocabulary and merges."""
    with open(os.path.join(FIXTURES, "qwen3", "tokenizer.json"), encoding="utf-8") as f:
        q = json.load(f)
    bot = max(q["model"]["vocab"].values()) + 1  # right after the BPE vocabulary, as in Llama-3
    regex = (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
        r"|\s*[\r\n]+|\s+(?!\S)|\s+"
    )
    j = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": bot,
                "content": "<|begin_of_text|>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            },
            {
                "id": bot + 1,
                "content": "<|eot_id|>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            },
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": {
            "type": "Sequence",
            "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                {
                    "type": "TemplateProcessing",
                    "single": [
                        {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}},
                    ],
                    "pair": [
                        {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                        {"Sequence": {"id": "A", "type_id": 0}},
                        {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                        {"Sequence": {"id": "B", "type_id": 1}},
                    ],
                    "special_tokens": {
                        "<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [bot], "tokens": ["<|begin_of_text|>"]}
                    },
                },
            ],
        },
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": dict(q["model"], ignore_merges=True),
    }
    d = os.path.join(work, "llama3-layout")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)
    return d


def main(exe, work):
    os.makedirs(work, exist_ok=True)
    cases = {
        "qwen3": (os.path.join(FIXTURES, "qwen3"), ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>"]),
        "mistral": (os.path.join(FIXTURES, "mistral"), ["<s>", "</s>", "<unk>"]),
        "llama3-layout": (llama3_layout(work), ["<|begin_of_text|>", "<|eot_id|>"]),
        # the project's own trained tokenizers (models/PROVENANCE.md)
        "kjv-llama": (os.path.join(ROOT, "models", "kjv-llama"), ["<s>", "</s>", "<unk>"]),
        "kjv-qwen2": (os.path.join(ROOT, "models", "kjv-qwen2"), ["<|endoftext|>"]),
    }
    ok = True
    for name, (d, special) in cases.items():
        texts, size = corpus(special)
        path = os.path.join(work, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(texts, f, ensure_ascii=False)
        t0 = time.perf_counter()
        ref = [
            e.ids
            for e in Tokenizer.from_file(os.path.join(d, "tokenizer.json")).encode_batch(
                texts, add_special_tokens=False
            )
        ]
        t_ref = time.perf_counter() - t0
        p, t_ds = run([exe, "tokenize", "--tokenizer", d, "--texts", path])
        got = [e["ids"] for e in json.loads(p.stdout)]
        bad = [i for i, (a, b) in enumerate(zip(ref, got)) if a != b]
        detail = ""
        if bad:
            i = bad[0]
            k = next((k for k, (x, y) in enumerate(zip(ref[i], got[i])) if x != y), min(len(ref[i]), len(got[i])))
            detail = " first at text %d, id %d: tokenizers %s, driftscope %s, text %r" % (
                i,
                k,
                ref[i][k : k + 5],
                got[i][k : k + 5],
                texts[i][:120],
            )
        ok &= check(
            len(got) == len(texts) and not bad,
            "%s: identical ids on %d texts, %.2f MB, %d tokens (%d differ%s)  (tokenizers %.1f s, driftscope %.1f s)"
            % (name, len(texts), size / 1e6, sum(map(len, ref)), len(bad), detail, t_ref, t_ds),
        )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1], sys.argv[2]) else 1)
