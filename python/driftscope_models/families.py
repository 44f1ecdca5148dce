"""The models scripts/make_models trains: one per family the loaders read. Each entry names its
directory under models/, its tokenizer, its transformers configuration and its training run.
Shapes are chosen to stay under 3 MB as float32 and to train in minutes on two cores."""

COMMON = dict(
    max_position_embeddings=512,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    hidden_act="silu",
    initializer_range=0.02,
    torch_dtype="float32",
)

FAMILIES = [
    dict(
        name="kjv-llama",
        tokenizer="sentencepiece",
        vocab_size=1024,
        llama2c=True,
        prompts=True,
        model_type="llama",
        steps=550,
        config=dict(
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=4,
            num_attention_heads=8,
            num_key_value_heads=4,
            tie_word_embeddings=True,
            attention_bias=False,
            mlp_bias=False,
        ),
        about="Llama: grouped-query attention (8 query heads share 4 key/value heads, so "
        "tensor-parallel degrees 1, 2 and 4 divide both), tied embeddings; also written as a llama2.c checkpoint. The default model.",
    ),
    dict(
        name="kjv-qwen2",
        tokenizer="byte-level",
        vocab_size=1024,
        llama2c=False,
        model_type="qwen2",
        steps=500,
        config=dict(
            hidden_size=64,
            intermediate_size=192,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            tie_word_embeddings=False,
            use_sliding_window=False,
        ),
        about="Qwen2: q/k/v biases, untied embeddings, a byte-level BPE tokenizer without BOS.",
    ),
    dict(
        name="kjv-mistral",
        tokenizer="sentencepiece",
        vocab_size=1024,
        llama2c=False,
        model_type="mistral",
        steps=500,
        config=dict(
            hidden_size=64,
            intermediate_size=192,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=1,
            tie_word_embeddings=False,
            sliding_window=32,
        ),
        about="Mistral: sliding-window attention (32 positions), 4 query heads on 1 key/value head, untied embeddings.",
    ),
]

SEED = 1234
THREADS = 2
BATCH = 32
WINDOW = 128
