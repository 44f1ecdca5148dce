"""Tokenizers trained on the corpus with Hugging Face's `tokenizers` library, in the two styles the
families use, saved through transformers' own tokenizer classes (save_pretrained):

- "sentencepiece": Llama 2's layout. A BPE over pieces that begin with U+2581 ("▁" for a space),
  byte fallback (<0x00>..<0xFF> at ids 3..258 after <unk>, <s>, </s>), BOS added by the
  post-processor. Its merges are every split of a merged token into two tokens, ranked by the
  merged token's id, which is how llama2.c's encoder merges (the highest-scoring token the
  concatenation of two neighbours makes): so tokenizer.json and the llama2.c tokenizer.bin
  written beside it give the same ids.
- "byte-level": Qwen2's layout. NFC, Qwen2's split regex, GPT-2's byte-to-character map, no BOS,
  <|endoftext|> as the last id.
"""

import json
import struct

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

SPACE = "\u2581"
SPECIALS = ["<unk>", "<s>", "</s>"]
BYTES = ["<0x%02X>" % b for b in range(256)]
ENDOFTEXT = "<|endoftext|>"
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _sentencepiece_normalizer():
    return normalizers.Sequence([normalizers.Prepend(SPACE), normalizers.Replace(" ", SPACE)])


def train_sentencepiece(docs, vocab_size):
    """A Tokenizer (tokenizers library) in Llama 2's layout with vocab_size ids."""
    t = Tokenizer(models.BPE())
    t.normalizer = _sentencepiece_normalizer()
    t.pre_tokenizer = pre_tokenizers.Split(SPACE, behavior="merged_with_next")
    n_trained = vocab_size - len(SPECIALS) - len(BYTES)
    t.train_from_iterator(docs, trainers.BpeTrainer(vocab_size=n_trained, show_progress=False))
    trained = json.loads(t.to_str())["model"]
    alphabet = [tok for tok, _ in sorted(trained["vocab"].items(), key=lambda kv: kv[1]) if len(tok) == 1]
    merged = ["".join(m.split(" ") if isinstance(m, str) else m) for m in trained["merges"]]
    pieces = SPECIALS + BYTES + merged + alphabet
    if len(pieces) != vocab_size or len(set(pieces)) != vocab_size:
        raise RuntimeError(
            "the trained vocabulary has %d pieces (%d distinct), not %d" % (len(pieces), len(set(pieces)), vocab_size)
        )
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = []
    for piece in merged:  # in id order: a lower id merges first
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                merges.append([left, right])
    spec = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            dict(id=i, content=s, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
            for i, s in enumerate(SPECIALS)
        ],
        "normalizer": json.loads(_sentencepiece_normalizer().__getstate__()),
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {
            "type": "Sequence",
            "decoders": [
                {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0},
            ],
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    return Tokenizer.from_str(json.dumps(spec))


def train_byte_level(docs, vocab_size):
    """A Tokenizer in Qwen2's layout with vocab_size ids, <|endoftext|> the last."""
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - 1, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    t.train_from_iterator(docs, trainer)
    t.add_special_tokens([ENDOFTEXT])
    if t.get_vocab_size() != vocab_size:
        raise RuntimeError("the byte-level vocabulary has %d ids, not %d" % (t.get_vocab_size(), vocab_size))
    return t


def hf_tokenizer(style, tok):
    """The transformers tokenizer object that save_pretrained writes, and (bos, eos) ids."""
    if style == "sentencepiece":
        from transformers import LlamaTokenizerFast

        hf = LlamaTokenizerFast(
            tokenizer_object=tok,
            bos_token="<s>",
            eos_token="</s>",
            unk_token="<unk>",
            add_bos_token=True,
            add_eos_token=False,
            legacy=True,
            model_max_length=512,
            clean_up_tokenization_spaces=False,
        )
        return hf, 1, 2
    from transformers import Qwen2TokenizerFast

    hf = Qwen2TokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token=ENDOFTEXT,
        pad_token=ENDOFTEXT,
        unk_token=None,
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )
    eos = tok.token_to_id(ENDOFTEXT)
    return hf, None, eos


def write_llama2c_tokenizer(tok, path):
    """llama2.c's tokenizer.bin: int32 max_token_length, then per id a float32 score, an int32
    length and the bytes. Scores rank merged pieces by id (the first merge scores 0, the next -1,
    ...), as llama2.c's export of a SentencePiece model does; specials and bytes score 0. "▁" is
    written as a space; BOS and EOS as "\\n<s>\\n" and "\\n</s>\\n", as llama2.c writes them."""
    vocab = sorted(tok.get_vocab().items(), key=lambda kv: kv[1])
    first_merged = len(SPECIALS) + len(BYTES)
    entries = []
    for piece, i in vocab:
        text = {"<s>": "\n<s>\n", "</s>": "\n</s>\n"}.get(piece, piece.replace(SPACE, " "))
        score = 0.0 if i < first_merged else -float(i - first_merged)
        entries.append((score, text.encode("utf-8")))
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(b) for _, b in entries)))
        for score, b in entries:
            f.write(struct.pack("<fi", score, len(b)))
            f.write(b)
