"""driftscope_models: the project's own small trained models (models/), made reproducibly by
scripts/make_models from a corpus that a Debian package ships (corpus.py): a tokenizer trained on
it (tokenizer.py), transformers models trained on it (train.py), written as Hugging Face
directories by save_pretrained and as llama2.c checkpoints (llama2c.py), with their provenance
(provenance.py). The families and their shapes are in families.py."""
