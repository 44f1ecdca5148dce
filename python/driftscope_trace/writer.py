"""TraceWriter: trace format v1 (docs/trace-format.md) written from Python with h5py.

The same layout, attributes and row semantics as driftscope's C++ writer (trace/writer.cpp, its
datasets made by trace/layout.cpp), the paths named in schema.py as trace/schema.h names them:
chunked (about 256 KiB per chunk), stored as they are by default (compression="none", as
driftscope's `--compression none`: 6-8x cheaper to write and 1.4-2.3x faster to diff than deflate,
and no larger on slow runs, where every flush rewrites a partly filled compressed chunk; see
docs/trace-format.md "Storage") or shuffled and deflated at level 1 (compression="deflate"),
tokens, top-K and lse with HDF5's Fletcher-32 checksum (a damaged chunk fails to read instead of
reading as a flip), datasets growing along positions;
rows buffered per sequence and written in batches of 64 or at least every half second; the root
attributes complete=0 / stop_reason="running" until finish(). Used as a context manager, an
exception (Ctrl-C included) leaves a readable file with complete=0, stop_reason="interrupted".
"""

import os
import time

import h5py
import numpy as np

from .logits import log_sum_exp, top_k
from .schema import (
    FORMAT_NAME,
    FORMAT_VERSION,
    FULL_LOGITS,
    LSE,
    META_GROUP,
    PACKAGE_VERSION,
    SEQ_GROUP,
    TOKENS_DATASET,
    TOPK_IDS,
    TOPK_LOGITS,
    hidden_path,
    logits_path,
)

HIDDEN_DTYPES = ("f32", "f16", "bf16")
COMPRESSIONS = ("none", "deflate")
_FLUSH_ROWS = 64
_FLUSH_SECONDS = 0.5
_CHUNK_BYTES = 256 * 1024


class TraceWriteError(RuntimeError):
    pass


def bf16_bits(x):
    """Round-to-nearest-even float32 -> bf16 bit patterns (uint16), NaN kept quiet."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, ((u >> 16) | 0x0040).astype(np.uint16), rounded)


def _chunk_rows(width, elem_size, compression):
    """Rows per chunk as driftscope's writer (trace/layout.cpp, chunk_rows_for): unfiltered, at most
    16 (HDF5 stores a sequence's last chunk whole, unfilled rows included, and only deflate
    shrinks them); deflated, the rows of about 256 KiB, at most 1024 (4096 for rank-1 datasets)."""
    cap = 16 if compression == "none" else (4096 if width == 0 else 1024)
    if width == 0:
        return cap
    fit = max(1, _CHUNK_BYTES // max(1, width * elem_size))
    rows = 1
    while rows * 2 <= min(fit, cap):
        rows *= 2
    return rows


class _Seq:
    def __init__(self, group, prompt_len):
        self.group = group
        self.prompt_len = prompt_len
        self.rows = 0  # rows on disk, the same in every dataset
        self.n_tokens = prompt_len
        self.hidden = {}  # site -> buffered list of [n, D] float32 arrays
        self.sites = []  # site order of the first step
        self.ids, self.vals, self.lse, self.full = [], [], [], []
        self.tokens = []
        self.buffered = 0


class TraceWriter:
    def __init__(
        self,
        path,
        *,
        hidden_dtype="f32",
        topk=20,
        full_logits=False,
        force=False,
        config_json="{}",
        model_json="{}",
        env_json="{}",
        command_line="",
        producer="driftscope_trace " + PACKAGE_VERSION,
        compression="none",
    ):
        if compression not in COMPRESSIONS:
            raise ValueError("unknown compression '%s': --compression takes none or deflate" % compression)
        self._compression = compression
        self._filters = {} if compression == "none" else {"shuffle": True, "compression": "gzip", "compression_opts": 1}
        if hidden_dtype not in HIDDEN_DTYPES:
            raise ValueError("unknown hidden dtype '%s': --hidden-dtype takes f32, f16 or bf16" % hidden_dtype)
        if topk < 1:
            raise ValueError("topk %d must be >= 1" % topk)
        if os.path.exists(path) and not force:
            raise FileExistsError("trace '%s' already exists; pass --force to overwrite it" % path)
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            raise FileNotFoundError("folder '%s' does not exist" % parent)
        self.path, self.hidden_dtype, self.topk, self.full_logits = path, hidden_dtype, topk, full_logits
        self._f = h5py.File(path, "w")
        a = self._f.attrs
        a["format"] = FORMAT_NAME
        a["format_version"] = np.int64(FORMAT_VERSION)
        a["tool_version"] = PACKAGE_VERSION
        a["producer"] = producer
        a["complete"] = np.int64(0)
        a["stop_reason"] = "running"
        meta = self._f.create_group(META_GROUP)
        for k, v in (
            ("config_json", config_json),
            ("model_json", model_json),
            ("env_json", env_json),
            ("command_line", command_line),
        ):
            meta.attrs[k] = v
        self._f.create_group(SEQ_GROUP)
        self._f.flush()
        self._seqs = {}
        self._last_flush = time.monotonic()
        self._finished = False

    # -- context manager: an exception leaves an interrupted, readable trace --
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self._finished:
            self.finish(False, "interrupted")
        return False

    def _growing(self, group, name, dtype, width, chunk_rows, checksum=False):
        shape, maxshape, chunks = (
            ((0,), (None,), (chunk_rows,)) if width == 0 else ((0, width), (None, width), (chunk_rows, width))
        )
        return group.create_dataset(
            name, shape=shape, maxshape=maxshape, chunks=chunks, dtype=dtype, fletcher32=checksum, **self._filters
        )

    @staticmethod
    def _append(ds, values):
        n = values.shape[0]
        at = ds.shape[0]
        ds.resize(at + n, axis=0)
        if n:
            ds[at : at + n] = values

    def set_meta(self, name, value):
        """Replaces a /meta attribute (config_json, model_json, env_json, command_line) before
        finish(): a recorder that learns its configuration while recording writes it last."""
        self._f[META_GROUP].attrs[name] = value

    def begin_sequence(self, seq, prompt):
        g = self._f[SEQ_GROUP].create_group(str(seq))
        tokens = self._growing(g, TOKENS_DATASET, np.int32, 0, _chunk_rows(0, 4, self._compression), checksum=True)
        self._append(tokens, np.asarray(prompt, dtype=np.int32))
        g.attrs["prompt_len"] = np.int64(len(prompt))
        g.attrs["gen_len"] = np.int64(0)
        g.attrs["stop_reason"] = "running"
        self._seqs[seq] = _Seq(g, len(prompt))

    def append(self, seq, hidden, logits, new_tokens):
        """One forward step of one sequence: hidden {site: [n, D]} for the n new positions (in
        forward order of sites), logits [n, V] (float64 or float32; None: no logits), and the
        tokens chosen after it."""
        s = self._seqs[seq]
        n = None
        for site, h in hidden.items():
            h = np.asarray(h, dtype=np.float32)
            if h.ndim != 2:
                raise ValueError("hidden %s must be [rows, width], got shape %s" % (site, h.shape))
            n = h.shape[0] if n is None else n
            if h.shape[0] != n:
                raise ValueError("hidden %s has %d rows, other sites %d" % (site, h.shape[0], n))
            if site not in s.hidden:
                s.hidden[site] = []
                s.sites.append(site)
            s.hidden[site].append(h)
        if logits is not None:
            logits = np.asarray(logits, dtype=np.float64)
            n = logits.shape[0] if n is None else n
            if logits.shape[0] != n:
                raise ValueError("logits have %d rows, hidden states %d" % (logits.shape[0], n))
            ids, vals = top_k(logits, self.topk)
            s.ids.append(ids)
            s.vals.append(vals.astype(np.float32))
            s.lse.append(log_sum_exp(logits).astype(np.float32))
            if self.full_logits:
                s.full.append(logits.astype(np.float32))
        s.tokens.extend(int(t) for t in new_tokens)
        s.buffered += n or 0
        if s.buffered >= _FLUSH_ROWS:
            self._flush(s)
        if time.monotonic() - self._last_flush > _FLUSH_SECONDS:
            self._flush_all()

    def _flush(self, s):
        if s.buffered == 0 and not s.tokens:
            return
        try:
            self._write_buffered(s)
        except Exception:
            self._rollback(s)
            raise

    @staticmethod
    def _rollback(s):
        """Cuts every dataset of the sequence back to the last fully written step."""

        def cut(obj):
            if isinstance(obj, h5py.Dataset):
                obj.resize(s.n_tokens if obj.name.endswith("/" + TOKENS_DATASET) else s.rows, axis=0)

        s.group.visititems(lambda name, obj: cut(obj))

    def _write_buffered(self, s):
        g = s.group
        for site in s.sites:
            v = np.concatenate(s.hidden[site])
            name = hidden_path(site)
            if name not in g:
                dt = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}[self.hidden_dtype]
                d = self._growing(
                    g, name, dt, v.shape[1], _chunk_rows(v.shape[1], np.dtype(dt).itemsize, self._compression)
                )
                if self.hidden_dtype == "bf16":
                    d.attrs["dtype"] = "bf16"
            if self.hidden_dtype == "bf16":
                v = bf16_bits(v)
            elif self.hidden_dtype == "f16":
                v = v.astype(np.float16)
            self._append(g[name], v)
            s.hidden[site] = []
        if s.lse:
            ids, vals, lse = np.concatenate(s.ids), np.concatenate(s.vals), np.concatenate(s.lse)
            if logits_path(TOPK_IDS) not in g:
                k = ids.shape[1]
                self._growing(
                    g, logits_path(TOPK_IDS), np.int32, k, _chunk_rows(k, 4, self._compression), checksum=True
                )
                self._growing(
                    g, logits_path(TOPK_LOGITS), np.float32, k, _chunk_rows(k, 4, self._compression), checksum=True
                )
                self._growing(g, logits_path(LSE), np.float32, 0, _chunk_rows(0, 4, self._compression), checksum=True)
                if self.full_logits:
                    v = s.full[0].shape[1]
                    self._growing(g, logits_path(FULL_LOGITS), np.float32, v, _chunk_rows(v, 4, self._compression))
            self._append(g[logits_path(TOPK_IDS)], ids)
            self._append(g[logits_path(TOPK_LOGITS)], vals)
            self._append(g[logits_path(LSE)], lse)
            if self.full_logits:
                self._append(g[logits_path(FULL_LOGITS)], np.concatenate(s.full))
            s.ids, s.vals, s.lse, s.full = [], [], [], []
        self._append(g[TOKENS_DATASET], np.asarray(s.tokens, dtype=np.int32))
        s.rows += s.buffered
        s.n_tokens += len(s.tokens)
        g.attrs["gen_len"] = np.int64(s.n_tokens - s.prompt_len)
        s.tokens, s.buffered = [], 0

    def _flush_all(self):
        for s in self._seqs.values():
            self._flush(s)
        self._f.flush()
        self._last_flush = time.monotonic()

    def end_sequence(self, seq, stop_reason):
        s = self._seqs[seq]
        self._flush(s)
        s.group.attrs["stop_reason"] = stop_reason

    def finish(self, complete, stop_reason):
        """Writes what is buffered, marks sequences still running as interrupted, sets the root
        attributes complete and stop_reason, closes the file."""
        if self._finished:
            return
        self._finished = True
        error = None
        try:
            for s in self._seqs.values():
                self._flush(s)
        except Exception as e:  # a write failure: the file keeps what was written before it
            error = str(e)
        for s in self._seqs.values():
            if s.group.attrs["stop_reason"] == "running":
                s.group.attrs["stop_reason"] = "interrupted"
        ok = error is None
        self._f.attrs["complete"] = np.int64(1 if complete and ok else 0)
        self._f.attrs["stop_reason"] = stop_reason if ok else "interrupted"
        if not ok:
            self._f.attrs["error"] = error
        self._f.close()
        if not ok:
            raise TraceWriteError("writing trace '%s' failed: %s" % (self.path, error))
