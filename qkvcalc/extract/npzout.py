"""The problem as a numpy .npz file (`--output layer.npz`): the arrays at the problem's top
level (x, wq, wk, wv, wo, the biases, a 0/1 mask …) as members of their own name (`x.npy`,
float64 or int64), the matrices of a nested key (gated_delta's conv, wz …) as members named
`key.inner` (`gated_delta.wz.npy`), every other key (name, description, tokens, heads, rope,
qk_norm …) in one member, `_json.npy`: a 0-d unicode array holding those keys as a JSON object,
its floats in their shortest round-trip form. Nothing is pickled (write_array with
allow_pickle=False; no object array is written), and qkvcalc.input.arrays reads exactly this
layout back.

A float64 number takes 8 bytes here against about 18 as JSON text, and is written as its bytes
(no conversion to text), so a 7B model's layer is written in seconds."""

from __future__ import annotations

import io
import zipfile
from typing import IO, Any

import numpy as np

from qkvcalc.extract.jsonout import write_problem
from qkvcalc.input.arrays import JSON_MEMBER  # the reader's name for it: one layout, one name


def write_arrays(problem: dict[str, Any], out: IO[bytes]) -> None:
    """`problem` (numpy arrays and plain values) as a .npz archive, to the binary stream `out`
    (a FIFO too: zipfile writes a stream that cannot seek with data descriptors)."""
    arrays = {k: v for k, v in problem.items() if isinstance(v, np.ndarray) and v.ndim >= 1}
    rest = {k: v for k, v in problem.items() if k not in arrays}
    for key, value in list(rest.items()):
        if isinstance(value, dict):  # a nested key's matrices: members of their own
            inner = {k: v for k, v in value.items() if isinstance(v, np.ndarray) and v.ndim >= 2}
            arrays.update({f"{key}.{k}": v for k, v in inner.items()})
            rest[key] = {k: v for k, v in value.items() if k not in inner}
    text = io.StringIO()
    write_problem(rest, text)
    members = {
        **{k: np.ascontiguousarray(v) for k, v in arrays.items()},
        JSON_MEMBER: np.array(text.getvalue().strip()),  # 0-d (ascontiguousarray makes it 1-d)
    }
    with zipfile.ZipFile(out, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, value in members.items():
            if value.dtype.hasobject:  # never: the problem's arrays are numbers
                raise TypeError(f"{key}: an object array is not written")
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, value, allow_pickle=False)
