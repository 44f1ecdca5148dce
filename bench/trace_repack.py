#!/usr/bin/env python3
"""Rewrites a trace with another compression of its datasets (for the compression study of
bench_diff_throughput --compression): same groups, attributes, values and chunk shapes; only the
filter pipeline changes. Prints the seconds spent writing the datasets (data already in memory),
which is what the filter costs the writer.

  trace_repack.py IN.h5 OUT.h5 none|fletcher32|deflate1|shuffle-deflate1|shuffle-deflate4|shuffle-deflate9

fletcher32: every dataset with HDF5's Fletcher-32 checksum and no compression (what checksumming
hidden states too would cost; driftscope checksums tokens, top-K and lse only).
"""

import sys
import time

import h5py


def filters(kind):
    if kind == "none":
        return {}
    if kind == "fletcher32":
        return {"fletcher32": True}
    shuffle = kind.startswith("shuffle-")
    level = int(kind[-1])
    return {"compression": "gzip", "compression_opts": level, "shuffle": shuffle}


def main(src, dst, kind):
    opts = filters(kind)
    items = []
    with h5py.File(src, "r") as f:

        def collect(name, obj):
            items.append((name, obj))

        f.visititems(collect)
        data = {}
        for name, obj in items:
            if isinstance(obj, h5py.Dataset):
                data[name] = (obj[...], obj.chunks, obj.maxshape, obj.dtype, dict(obj.attrs))
        groups = [(name, dict(obj.attrs)) for name, obj in items if isinstance(obj, h5py.Group)]
        root = dict(f.attrs)
    spent = 0.0
    with h5py.File(dst, "w") as g:
        for k, v in root.items():
            g.attrs[k] = v
        for name, attrs in groups:
            grp = g.require_group(name)
            for k, v in attrs.items():
                grp.attrs[k] = v
        for name, (values, chunks, maxshape, dtype, attrs) in data.items():
            t0 = time.perf_counter()
            d = g.create_dataset(name, data=values, chunks=chunks, maxshape=maxshape, dtype=dtype, **opts)
            g.flush()
            spent += time.perf_counter() - t0
            for k, v in attrs.items():
                d.attrs[k] = v
    print(f"{spent:.4f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
