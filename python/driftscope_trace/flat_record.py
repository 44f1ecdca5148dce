"""record_flat(): a trace of the requests a vLLM or SGLang Llama / Mistral / Qwen2 model object
serves, for a caller who drives the model's forward passes (or hooks the engine's model runner)
and knows, for each pass, what the engine's scheduler and sampler know:

    with driftscope_trace.record_flat(model, "run.h5", engine="vllm", tokenizer=tok) as rec:
        rec.add_request("a", prompt_a)
        rec.add_request("b", prompt_b)
        # each step: the engine's forward over the flattened batch; the hooks take the sites
        hidden = model(input_ids, positions)
        logits = model.compute_logits(hidden[last_rows])     # the LogitsProcessor's rows
        rec.step([("a", len(prompt_a)), ("b", len(prompt_b))], logits, [token_a, token_b])
        ...
        rec.end_request("a", "eos")

step() takes the requests of the pass in flattened order with the number of tokens each fed (the
differences of vLLM's query_start_loc, SGLang's extend_seq_lens), the logits (one row per request,
its last row of the pass, as both engines compute them; or one row per token, a prompt-logprobs
run), and the token chosen for each request (None for a prefill chunk that does not finish its
prompt). Each request's rows are checked against the token ids the embedding was fed: its prompt,
then each token step() was given. The prompt rows before a request's last row have no logits from
the engine; they are lm_head's weight over their final-norm rows, as the LogitsProcessor computes
logits for these families (no logit scale, no soft cap), with one tensor-parallel rank.

Tested on stand-in modules with vLLM's structure and calling conventions, not on vLLM or SGLang
(docs/engines.md, "vLLM and SGLang")."""

import importlib.metadata
import json
import os

import numpy as np

from . import schema
from .flat_sites import FLAT, FlatBatchError, flat_hooks, flat_site_table, split_rows
from .hf_sites import LayoutError
from .identity import env_json, loaded_model_json
from .writer import TraceWriter


class _Request:
    def __init__(self, index, prompt):
        self.index, self.tokens, self.prompt_len = index, list(prompt), len(prompt)
        self.fed = 0  # positions the engine has computed
        self.ended = False


def _numpy(t):
    return t.detach().float().cpu().numpy()


class FlatRecording:
    def __init__(
        self,
        model,
        path,
        *,
        engine,
        engine_version=None,
        tokenizer=None,
        model_dir=None,
        probes="default",
        topk=20,
        hidden_dtype="f32",
        full_logits=False,
        compression="none",
        force=False,
        sampling=None,
    ):
        flat_site_table(model)  # a LayoutError before anything is written
        self.model, self.path, self.engine = model, path, engine
        self.family = FLAT.family(model)
        _check_head(model)
        self.tokenizer, self.model_dir = tokenizer, model_dir
        self.sampling = dict(sampling or {})
        self.engine_version = engine_version or _installed_version(engine)
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
        self._requests = {}
        self._sizes, self._chunked = set(), False

    # -- the with block --
    def __enter__(self):
        mj = loaded_model_json(self.model.config, self.family, self.tokenizer, self.model_dir)
        self._writer = TraceWriter(
            self.path,
            producer=self._producer(),
            command_line="driftscope_trace.record_flat",
            model_json=mj,
            env_json=self._env_json(),
            **self._writer_args,
        )
        self._hooks = flat_hooks(self.model, self.sites)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._hooks.remove()
        self._writer.set_meta("config_json", self._config_json())
        self._writer.finish(exc_type is None, "finished" if exc_type is None else "interrupted")
        return False

    # -- what the caller reports --
    def add_request(self, rid, prompt):
        """A new request and its whole prompt (token ids); returns its sequence index."""
        if rid in self._requests:
            raise FlatBatchError("request %r was added before" % (rid,))
        prompt = [int(t) for t in prompt]
        if not prompt:
            raise FlatBatchError("request %r has an empty prompt" % (rid,))
        r = self._requests[rid] = _Request(len(self._requests), prompt)
        self._writer.begin_sequence(r.index, prompt)
        return r.index

    def step(self, scheduled, logits, tokens):
        """One forward pass of the model: scheduled [(request id, tokens fed)] in flattened order,
        logits [requests or tokens, V] (torch or numpy), tokens [token id or None] per request.
        Everything is checked before any row of the step is written."""
        taken, self._hooks.taken = self._hooks.taken, {}
        rids, counts = [rid for rid, _ in scheduled], [int(n) for _, n in scheduled]
        if len(set(rids)) != len(rids) or len(tokens) != len(rids):
            raise FlatBatchError(
                "a step lists each request once with one token (or None) each: "
                "%d requests, %d tokens" % (len(rids), len(tokens))
            )
        reqs = [self._live(rid) for rid in rids]
        parts = split_rows(taken, counts)
        logits = self._logits(logits, len(rids), sum(counts))
        for rid, r, n, part, tok in zip(rids, reqs, counts, parts, tokens):
            _check_fed(rid, r, part["input_ids"], n, tok)
        per_request = logits.shape[0] == len(rids)
        at = 0
        for i, (r, n, part, tok) in enumerate(zip(reqs, counts, parts, tokens)):
            rows = logits[i : i + 1] if per_request else logits[at : at + n]
            if per_request and n > 1:
                rows = np.concatenate([self._head(part["final_norm"][:-1]), rows])
            at += n
            r.fed += n
            new = [] if tok is None else [int(tok)]
            r.tokens += new
            self._chunked |= r.fed < r.prompt_len
            self._writer.append(r.index, {s: _numpy(part[s]) for s in self.sites}, rows, new)
        self._sizes.add(len(rids))

    def end_request(self, rid, stop_reason):
        """The request stopped (eos, max_new, context, forced, interrupted): its sequence ends."""
        if stop_reason not in schema.STOP_REASONS or stop_reason == "running":
            raise ValueError("stop reason '%s': one of %s" % (stop_reason, ", ".join(schema.STOP_REASONS[:-1])))
        r = self._live(rid)
        r.ended = True
        self._writer.end_sequence(r.index, stop_reason)

    # -- checks and the logits the engine did not compute --
    def _live(self, rid):
        r = self._requests.get(rid)
        if r is None or r.ended:
            raise FlatBatchError("request %r %s" % (rid, "has ended" if r else "was never added (add_request)"))
        return r

    def _logits(self, logits, n_requests, n_tokens):
        logits = _rows(logits)
        if logits.shape[0] not in (n_requests, n_tokens):
            raise FlatBatchError(
                "logits have %d rows: one per request (%d) or per token (%d) "
                "expected" % (logits.shape[0], n_requests, n_tokens)
            )
        vocab = self.model.config.vocab_size
        if logits.shape[1] != vocab:
            raise FlatBatchError(
                "logits have %d columns, the vocabulary %d (the LogitsProcessor's "
                "output, not lm_head's padded rows)" % (logits.shape[1], vocab)
            )
        return logits

    def _head(self, normed):
        """lm_head's weight (its first vocab_size rows: the engines pad the vocabulary) over
        final-norm rows, as the LogitsProcessor computes logits."""
        import torch

        head = self.model.lm_head
        w = head.weight[: self.model.config.vocab_size]
        bias = getattr(head, "bias", None)
        bias = None if bias is None else bias[: w.shape[0]]
        with torch.no_grad():
            out = torch.nn.functional.linear(normed.to(w.dtype), w, bias)
        return out.double().cpu().numpy()

    # -- /meta --
    def _config_json(self):
        import torch

        p = next(self.model.parameters())
        sizes = sorted(self._sizes) or [0]
        dtype = str(p.dtype).replace("torch.", "")
        engine = {
            "name": self.engine,
            "version": self.engine_version,
            "torch": torch.__version__,
            "numpy": np.__version__,
            "device": str(p.device),
            "dtype": dtype,
            "threads": torch.get_num_threads(),
            "chunked_prefill": self._chunked,
            "api": "record_flat",
        }
        j = {
            "device": p.device.type,
            "dtype": schema.DTYPE_NAMES.get(dtype, dtype),
            "batch": sizes[0] if len(sizes) == 1 else sizes,
            "tp": 1,
            "prefix_cache": "off",
            "cuda_graphs": "off",
            "engine": engine,
            "trace": self._trace_block,
        }
        j.update(self.sampling)
        return json.dumps(j)

    def _producer(self):
        import torch

        return "driftscope_trace %s (%s %s, torch %s)" % (
            schema.PACKAGE_VERSION,
            self.engine,
            self.engine_version or "(version unknown)",
            torch.__version__,
        )

    def _env_json(self):
        import torch

        return env_json(
            {
                "driftscope_trace_version": schema.PACKAGE_VERSION,
                "engine": self.engine,
                "engine_version": self.engine_version,
                "torch_version": torch.__version__,
                "numpy_version": np.__version__,
            }
        )


def _check_head(model):
    """lm_head holds every row of the vocabulary (one tensor-parallel rank): the prompt rows'
    logits are computed from it."""
    head = getattr(getattr(model, "lm_head", None), "weight", None)
    rows, vocab = (0 if head is None else head.shape[0]), model.config.vocab_size
    if rows < vocab:
        raise LayoutError(
            "lm_head holds %d of the %d vocabulary rows: record_flat needs the whole "
            "head, one tensor-parallel rank" % (rows, vocab)
        )


def _check_fed(rid, r, ids, n, tok):
    """The n token ids the embedding was fed for request r are its next known tokens, and a token
    is chosen only where the pass reached the end of its prompt."""
    want = r.tokens[r.fed : r.fed + n]
    if len(want) < n:
        raise FlatBatchError(
            "request %r fed %d tokens at position %d, where %d are known (a token "
            "chosen and not passed to step(), or a preempted request recomputed)" % (rid, n, r.fed, len(want))
        )
    got = [int(t) for t in ids.cpu().tolist()]
    if got != want:
        raise FlatBatchError(
            "request %r was fed tokens %s at positions %d.., not its own %s "
            "(counts in another order than the flattened batch? a cached prefix "
            "skipped?)" % (rid, got, r.fed, want)
        )
    if tok is not None and r.fed + n < r.prompt_len:
        raise FlatBatchError(
            "request %r: a token chosen at position %d, inside its prompt of %d" % (rid, r.fed + n, r.prompt_len)
        )


def _installed_version(engine):
    try:
        return importlib.metadata.version(engine)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None


def _rows(logits):
    """Logits as float64 numpy [rows, V]."""
    if hasattr(logits, "detach"):
        logits = logits.detach().double().cpu().numpy()
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2:
        raise FlatBatchError("logits must be [rows, vocab], got shape %s" % (logits.shape,))
    return logits


def record_flat(model, path, **kw):
    """A FlatRecording of a vLLM / SGLang `model` into trace `path` (format v1): use it as
    `with record_flat(...) as rec:`."""
    return FlatRecording(model, path, **kw)
