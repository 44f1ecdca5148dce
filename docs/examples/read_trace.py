# Reads one layer's hidden states and one position's top-5 tokens from a driftscope trace.
import sys, json, h5py, numpy as np

f = h5py.File(sys.argv[1], "r")
assert f.attrs["format"] == "driftscope-trace" and f.attrs["format_version"] == 1
seq = f["seq/0"]
h = seq["hidden/L2/out"]  # [R, D], row r = input position r
x = (h[:].astype(np.uint32) << 16).view(np.float32) if h.attrs.get("dtype") == "bf16" else h[:].astype(np.float32)
r = 5  # logits row r is the distribution of tokens[r + 1]
ids, lg, lse = seq["logits/topk_ids"][r, :5], seq["logits/topk_logits"][r, :5], seq["logits/lse"][r]
print(json.loads(f["meta"].attrs["config_json"])["dtype"], x.shape, float(np.linalg.norm(x[r])))
print([(int(i), round(float(np.exp(l - lse)), 4)) for i, l in zip(ids, lg)], "next:", int(seq["tokens"][r + 1]))
