#!/usr/bin/env python3
"""Damages a copy of a trace with h5py, independently of driftscope's reader, for the tests of
damaged-trace handling (tests/cli/test_cli_damaged.cpp).

  damage_trace.py zero-chunk FILE DATASET ROW   overwrite the stored bytes of the chunk holding ROW
  damage_trace.py read FILE DATASET             exit 0 if h5py reads the whole dataset, 1 if not
  damage_trace.py attr FILE OBJECT NAME VALUE   set a string attribute (bytes: VALUE is hex)
  damage_trace.py int-attr FILE OBJECT NAME N   set an int64 attribute
  damage_trace.py tokens-2d FILE SEQ            replace /seq/SEQ/tokens by a (T, 1) dataset
  damage_trace.py widen FILE DATASET            replace a hidden dataset by one a column wider
  damage_trace.py drop-rows FILE DATASET N      replace a dataset by its first rows minus N
"""

import sys

import h5py
import numpy as np


def replace(f, name, data):
    attrs = dict(f[name].attrs)
    del f[name]
    d = f.create_dataset(name, data=data, chunks=True, compression="gzip", shuffle=True)
    for k, v in attrs.items():
        d.attrs[k] = v


def main(argv):
    op, path = argv[1], argv[2]
    if op == "zero-chunk":
        name, row = argv[3], int(argv[4])
        with h5py.File(path, "r") as f:
            d = f[name]
            offset = (row - row % d.chunks[0],) + (0,) * (d.ndim - 1)
            info = d.id.get_chunk_info_by_coord(offset)
            at, size = info.byte_offset, info.size
        with open(path, "r+b") as raw:
            raw.seek(at)
            raw.write(b"\0" * size)
        return 0
    if op == "read":
        try:
            with h5py.File(path, "r") as f:
                f[argv[3]][...]
        except Exception as e:  # noqa: BLE001 - any failure to read is the answer
            print(type(e).__name__, e)
            return 1
        return 0
    with h5py.File(path, "r+") as f:
        if op == "attr":
            obj, name, value = f[argv[3]], argv[4], argv[5]
            raw = bytes.fromhex(value[4:]) if value.startswith("hex:") else value.encode()
            if name in obj.attrs:
                del obj.attrs[name]
            # Raw bytes as a variable-length UTF-8 string, as driftscope writes its attributes.
            obj.attrs.create(name, raw, dtype=h5py.string_dtype("utf-8"))
        elif op == "int-attr":
            f[argv[3]].attrs[argv[4]] = np.int64(int(argv[5]))
        elif op == "tokens-2d":
            name = f"seq/{argv[3]}/tokens"
            replace(f, name, f[name][...].reshape(-1, 1))
        elif op == "widen":
            v = f[argv[3]][...]
            replace(f, argv[3], np.concatenate([v, v[:, :1]], axis=1))
        elif op == "drop-rows":
            v = f[argv[3]][...]
            replace(f, argv[3], v[: v.shape[0] - int(argv[4])])
        else:
            print(__doc__)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
