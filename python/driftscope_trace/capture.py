"""record(): a trace of the sequences a transformers model generates inside a `with` block, for an
evaluation loop that already has its model, tokenizer and generate() calls (the way nnsight or
SGLang's dumper are used):

    with driftscope_trace.record(model, "run.h5", tokenizer=tok) as rec:
        for batch in loader:
            out = model.generate(**batch, max_new_tokens=64, do_sample=False)

Every generate() call inside the block is observed, not changed: forward hooks (hf_sites.py)
take each pass's sites for every row of the batch, and after the call each row becomes one
sequence of the trace: its prompt (the positions its attention mask keeps, so left padding is
dropped), the tokens generate() returned up to and including the first EOS, one row per position
as driftscope records them. generate() computes the logits of the last prompt position only; the
other prompt positions' logits are the model's own lm_head applied to its final-norm rows.
Greedy search and sampling are supported; beam search and assisted decoding are refused.
The layout is checked before the file is made: a model the recorder cannot map raises
LayoutError and writes nothing."""

import functools
import json
import os

import numpy as np

from . import schema
from .hf_sites import SiteHooks, family_of, site_table
from .identity import env_json, loaded_model_json
from .writer import TraceWriter


class UnsupportedGeneration(ValueError):
    pass


def _numpy(t):
    return t.detach().float().cpu().numpy()


class Recording:
    def __init__(
        self,
        model,
        path,
        *,
        tokenizer=None,
        probes="default",
        topk=20,
        hidden_dtype="f32",
        full_logits=False,
        compression="none",
        force=False,
    ):
        site_table(model)  # a LayoutError before anything is written
        self.model, self.path, self.tokenizer = model, path, tokenizer
        self.sites = schema.resolve_probes(probes, model.config.num_hidden_layers)
        self._writer_args = dict(
            hidden_dtype=hidden_dtype, topk=topk, full_logits=full_logits, compression=compression, force=force
        )
        # what the trace stores: a top-K beyond the vocabulary is cut to it, as driftscope records it
        self._trace_block = schema.trace_block(
            probes, hidden_dtype, min(topk, model.config.vocab_size), full_logits, compression
        )
        if os.path.exists(path) and not force:
            raise FileExistsError("trace '%s' already exists; pass force=True to overwrite it" % path)
        self.n_sequences = 0
        self._batches, self._generation = [], {}
        self._steps = None

    # -- the with block --
    def __enter__(self):
        own = self.model.__dict__
        self._saved = {k: own[k] for k in ("forward", "generate") if k in own}
        self._forward, self._generate = self.model.forward, self.model.generate

        # functools.wraps keeps the signatures generate() inspects (it passes position_ids only
        # to a forward whose signature names them)
        @functools.wraps(self._forward)
        def forward(*args, **kw):
            return self._observed_forward(*args, **kw)

        @functools.wraps(self._generate)
        def generate(*args, **kw):
            return self._observed_generate(*args, **kw)

        self._writer = TraceWriter(
            self.path,
            producer=self._producer(),
            command_line="driftscope_trace.record",
            model_json=self._model_json(),
            env_json=self._env_json(),
            **self._writer_args,
        )
        self._hooks = SiteHooks(self.model, set(self.sites) | {"final_norm"})
        self.model.forward, self.model.generate = forward, generate
        return self

    def __exit__(self, exc_type, exc, tb):
        for k in ("forward", "generate"):  # the model's own methods back, as they were
            if k in self._saved:
                self.model.__dict__[k] = self._saved[k]
            else:
                del self.model.__dict__[k]
        self._hooks.remove()
        self._writer.set_meta("config_json", self._config_json())
        self._writer.finish(exc_type is None, "finished" if exc_type is None else "interrupted")
        return False

    # -- what generate() calls --
    def _observed_forward(self, *args, **kw):
        if self._steps is None:
            return self._forward(*args, **kw)
        self._hooks.clear()
        out = self._forward(*args, **kw)
        ids = kw.get("input_ids", args[0] if args else None)
        mask = kw.get("attention_mask")
        taken = {s: _numpy(t) for s, t in self._hooks.taken.items()}
        self._steps.append((ids.detach().cpu().numpy(), None if mask is None else mask.detach().cpu().numpy(), taken))
        return out

    def _observed_generate(self, *args, **kw):
        if kw.get("num_beams", 1) > 1 or kw.get("assistant_model") is not None:
            raise UnsupportedGeneration(
                "driftscope_trace.record follows greedy search and sampling, not beam search or assisted decoding"
            )
        self._steps = []
        try:
            out = self._generate(*args, **kw)
        finally:
            steps, self._steps = self._steps, None
        sequences = out.sequences if hasattr(out, "sequences") else out
        self._note_generation(kw, sequences.shape[0])
        self._write_batch(steps, sequences.detach().cpu().numpy())
        return out

    # -- turning the observed passes into sequences --
    def _eos_ids(self):
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.model.config.eos_token_id
        return set(eos if isinstance(eos, (list, tuple)) else ([] if eos is None else [eos]))

    def _write_batch(self, steps, sequences):
        if not steps:
            raise UnsupportedGeneration("generate() made no forward pass that record() could observe")
        ids0, mask0, taken0 = steps[0]
        width = ids0.shape[1]
        eos = self._eos_ids()
        for b in range(sequences.shape[0]):
            keep = np.ones(width, dtype=bool) if mask0 is None else mask0[b].astype(bool)
            prompt = ids0[b][keep].tolist()
            new = sequences[b, width:].tolist()
            ends = [k for k, t in enumerate(new) if t in eos]
            gen = new[: ends[0] + 1] if ends else new
            if len(steps) < len(gen):
                raise UnsupportedGeneration(
                    "generate() returned %d new tokens after %d passes" % (len(gen), len(steps))
                )
            index = self.n_sequences
            self.n_sequences += 1
            self._writer.begin_sequence(index, prompt)
            self._writer.append(
                index, {s: taken0[s][b][keep] for s in self.sites}, self._prefill_logits(taken0, b, keep), gen[:1]
            )
            for k in range(1, len(gen)):
                ids_k, _, taken_k = steps[k]
                if int(ids_k[b, -1]) != gen[k - 1]:
                    raise UnsupportedGeneration(
                        "pass %d of generate() was fed token %d, not the token %d it "
                        "returned" % (k, int(ids_k[b, -1]), gen[k - 1])
                    )
                self._writer.append(
                    index, {s: taken_k[s][b][-1:] for s in self.sites}, taken_k["logits"][b][-1:], gen[k : k + 1]
                )
            self._writer.end_sequence(index, "eos" if ends else "max_new")

    def _prefill_logits(self, taken, b, keep):
        """The prompt rows' logits: the engine's own where generate() computed them (the last
        position, or all), lm_head over the final-norm rows for the others."""
        logits, normed = taken["logits"][b], taken["final_norm"][b]
        if logits.shape[0] == normed.shape[0]:
            return logits[keep]
        import torch

        head = self.model.get_output_embeddings()
        p = next(head.parameters())
        with torch.no_grad():
            rest = head(torch.from_numpy(normed[: -logits.shape[0]]).to(device=p.device, dtype=p.dtype))
        return np.concatenate([_numpy(rest), logits])[keep]

    # -- /meta --
    def _note_generation(self, kw, batch):
        g = self.model.generation_config
        sample = bool(kw.get("do_sample", g.do_sample))
        self._batches.append(batch)
        self._generation = {
            "max_new": kw.get("max_new_tokens", g.max_new_tokens),
            "temperature": float(kw.get("temperature", g.temperature) or 1.0) if sample else 0.0,
            "top_p": float(kw.get("top_p", g.top_p) or 1.0) if sample else 1.0,
            "top_k": int(kw.get("top_k", g.top_k) or 0) if sample else 0,
            "repetition_penalty": float(kw.get("repetition_penalty", g.repetition_penalty) or 1.0),
        }

    def _config_json(self):
        from .hf_compat import engine_block

        p = next(self.model.parameters())
        sizes = sorted(set(self._batches))
        engine = engine_block(self.model, p.device)
        engine["padding_side"] = getattr(self.tokenizer, "padding_side", None)
        engine["api"] = "record"
        dtype = schema.DTYPE_NAMES.get(engine["dtype"], engine["dtype"])
        j = {
            "device": p.device.type,
            "dtype": dtype,
            "batch": sizes[0] if len(sizes) == 1 else sizes,
            "tp": 1,
            "prefill_chunk": 0,
            "prefix_cache": "off",
            "tie_break": "lowest_id",
            "cuda_graphs": "off",
            "engine": engine,
            "trace": self._trace_block,
        }
        j.update(self._generation)
        return json.dumps(j)

    def _model_json(self):
        return loaded_model_json(self.model.config, family_of(self.model), self.tokenizer)

    def _producer(self):
        from .hf_compat import library_versions

        v = library_versions()
        return "driftscope_trace %s (transformers %s, torch %s)" % (schema.PACKAGE_VERSION, v["version"], v["torch"])

    def _env_json(self):
        from .hf_compat import library_versions

        v = library_versions()
        return env_json(
            {
                "driftscope_trace_version": schema.PACKAGE_VERSION,
                "transformers_version": v["version"],
                "torch_version": v["torch"],
                "numpy_version": v["numpy"],
            }
        )


def record(model, path, **kw):
    """A Recording of `model` into trace `path` (format v1): use it as `with record(...) as rec:`."""
    return Recording(model, path, **kw)
