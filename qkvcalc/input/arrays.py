"""Arrays as input: .npz files (a whole problem), .npy files (one matrix) and array-likes.

Engineers hold tensors, not JSON. This module turns them into the values of the input format,
which Problem.from_mapping then validates exactly as it does JSON:

- a `.npz` file whose keys are the input format's (`x`, `wq`, `wk`, `wv`, `mask`, `tokens` …;
  a string as a 0-d array: ``np.savez("layer.npz", x=x, …, mask="causal")``), and whose
  member `_json`, when there is one, is a 0-d string holding a JSON object of more keys (how
  `qkvcalc extract --output layer.npz` keeps its name, tokens and nested keys: no pickles), and
  a member named `key.inner` is the array `inner` of the nested key `key` (how extract keeps
  the matrices of a nested key);
- a `.npy` file as the value of one option (`--x x.npy`, `--wq wq.npy`);
- in Python, anything array-like: numpy arrays, torch tensors on any device and of any dtype
  (through ``.detach().cpu()``, as float64), or any object with ``__array__``.

Files are read with ``allow_pickle=False`` (an object array is refused, never unpickled), after
their headers are checked: the shapes a file claims must fit in the bytes it holds and in the
--max-bytes limit, so a small file cannot make qkvcalc allocate gigabytes.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError

# A damaged file makes zipfile, zlib, bz2, lzma and numpy's header reader raise almost anything
# (zlib.error, LZMAError, NotImplementedError for an unknown zip version, RuntimeError for an
# encrypted member, ValueError, EOFError …): reading one is wrapped whole, and whatever it raises
# becomes one message naming the file (array.bad_file). DAMAGED marks those places.

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"

# The fields that hold a matrix (kept as a numpy array, which Problem reads directly) and the
# vectors (biases), whose checks want plain lists. Every other field gets plain Python values.
_MATRICES = ("x", "source", "wq", "wk", "wv", "wo", "q", "k", "v")
# A problem has a few dozen keys (input/fields.py, FIELDS): an archive of more members is not one.
MAX_MEMBERS = 100
# The member holding the keys that are not arrays as one JSON object (a 0-d unicode array):
# what `qkvcalc extract --output layer.npz` writes its name, tokens and nested keys into.
JSON_MEMBER = "_json"


def kind_of(data: bytes | bytearray) -> str | None:
    """'npz' or 'npy' when the bytes are one of numpy's files (by content, not by name)."""
    if data.startswith(NPY_MAGIC):
        return "npy"
    if data.startswith(ZIP_MAGIC):
        return "npz"
    return None


def is_npy_path(text: str) -> bool:
    """An option value that names a .npy file (`--x x.npy`) rather than an inline matrix."""
    return text.strip().lower().endswith(".npy")


def _header(stream: io.BytesIO, origin: str) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """The shape, order and dtype a .npy stream declares, read without reading the data."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(stream)
        else:
            shape, fortran, dtype = fmt.read_array_header_2_0(stream)
    except Exception as err:  # a damaged file: any error (DAMAGED above)
        raise QkvcalcError("array.bad_file", origin=origin, reason=str(err)[:120]) from None
    return shape, fortran, dtype


# numpy reads a header of at most 10,000 bytes (max_header_size): the magic, the version, the
# header's length and that much is all _read_npy parses before the data
HEADER_PREFIX = 16 + 10_000


def _read_npy(data: bytes | bytearray | memoryview, origin: str) -> np.ndarray:
    """The array a .npy file's bytes hold: a view of those bytes (read-only when they are
    `bytes`), not a copy."""
    stream = io.BytesIO(bytes(data[:HEADER_PREFIX]))
    shape, fortran, dtype = _header(stream, origin)
    if dtype.hasobject:
        raise QkvcalcError("array.pickle", origin=origin)
    # an item of 0 bytes (|V0, <U0) still costs numpy an object per element when it is read
    # back as a list: 10¹² of them claimed by a 100-byte header is refused like any other
    # counted in Python's integers: np.prod in float64 overflowed a claimed 10²⁰⁰×10²⁰⁰ to inf
    # (a RuntimeWarning, then int(inf) raised)
    count = math.prod(int(s) for s in shape)
    need = count * max(dtype.itemsize, 1)
    have = len(data) - stream.tell()
    if need > have:
        shown = "×".join(str(s) for s in shape) or "a scalar"
        raise QkvcalcError("array.truncated", origin=origin, shape=shown, need=need, have=have)
    if dtype.itemsize == 0:  # numpy's own reader makes the empty items frombuffer cannot
        try:
            return np.lib.format.read_array(io.BytesIO(bytes(data)), allow_pickle=False)
        except Exception as err:  # a damaged file: any error (DAMAGED above)
            raise QkvcalcError("array.bad_file", origin=origin, reason=str(err)[:120]) from None
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell())
    return flat.reshape(shape, order="F" if fortran else "C")


def load_npy(data: bytes | bytearray, origin: str, field: str) -> Any:
    """One option's value from a .npy file's bytes: a matrix, a mask, a list of tokens …"""
    if kind_of(data) != "npy":
        raise QkvcalcError("array.not_npy", origin=origin)
    return as_input(_read_npy(data, origin), field)


def load_npz(data: bytes | bytearray, origin: str, limit: int) -> dict[str, Any]:
    """A problem from a .npz file's bytes: its keys are the input format's keys.

    The members' uncompressed sizes count against `limit` (--max-bytes), as the text of a JSON
    file does: a compressed file of a few kilobytes cannot unpack into gigabytes.
    """
    import zipfile  # only for a .npz: not loaded on every start

    claimed = _members_claimed(data)
    if claimed > MAX_MEMBERS:  # from the archive's last record, before zipfile lists them all
        raise QkvcalcError("array.npz_too_many", origin=origin, count=claimed, limit=MAX_MEMBERS)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except Exception as err:  # a damaged file: any error (DAMAGED above)
        raise QkvcalcError("array.bad_file", origin=origin, reason=str(err)[:120]) from None
    if len(members) > MAX_MEMBERS:  # a last record that said fewer than there are
        raise QkvcalcError(
            "array.npz_too_many", origin=origin, count=len(members), limit=MAX_MEMBERS
        )
    total = sum(member.file_size for member in members)
    if total > limit:  # what the headers claim; each member is counted again as it inflates
        raise QkvcalcError("input.too_big", limit=limit)
    budget = limit
    doc: dict[str, Any] = {}
    json_keys: set[str] = set()
    for member in members:
        name = member.filename
        if not name.endswith(".npy"):
            raise QkvcalcError("array.npz_member", origin=origin, member=name)
        key = name[: -len(".npy")]
        if key in doc:  # zip allows two members of one name; which one wins is no answer
            raise QkvcalcError("array.npz_duplicate", origin=origin, member=name)
        stored = _stored(data, member, f"{origin}[{key}]")
        raw = (
            stored
            if stored is not None
            else _inflate(archive, member, f"{origin}[{key}]", budget, limit)
        )
        budget -= len(raw)
        array = _read_npy(raw, f"{origin}[{key}]")
        if key == JSON_MEMBER:
            plain = _json_member(array, f"{origin}[{key}]")
            twice = sorted(set(plain) & set(doc))
            if twice:
                raise QkvcalcError("array.npz_duplicate", origin=origin, member=twice[0])
            doc.update(plain)
            json_keys.update(plain)
            continue
        if key in json_keys:
            raise QkvcalcError("array.npz_duplicate", origin=origin, member=name)
        doc[key] = array.item() if array.ndim == 0 and array.dtype.kind == "U" else array
    if not doc:
        raise QkvcalcError("array.npz_empty", origin=origin)
    return _nested(doc, origin)


def _nested(doc: dict[str, Any], origin: str) -> dict[str, Any]:
    """Members named `key.inner` put into the nested key `key` (beside what `_json` gave it)."""
    out = {key: value for key, value in doc.items() if "." not in key}
    for key in sorted(k for k in doc if "." in k):
        outer, inner = key.split(".", 1)
        found = out.setdefault(outer, {})
        if not isinstance(found, dict) or inner in found:
            raise QkvcalcError("array.npz_duplicate", origin=origin, member=key + ".npy")
        found[inner] = doc[key]
    return out


# A member is inflated a megabyte at a time (zipfile's read(-1) asks zlib for up to 2 GB in one
# call): a header that lies about the size costs at most what --max-bytes allows.
INFLATE_CHUNK = 1 << 20
_METHODS = {12: "bzip2", 14: "lzma"}  # zip's numbers for the methods refused by name


def _inflate(archive: Any, member: Any, origin: str, budget: int, limit: int) -> bytearray:
    """A member's bytes, counted against `budget` (what --max-bytes, `limit`, leaves after the
    members before it) as they inflate.
    Only the two methods numpy writes: bzip2 and lzma inflate a whole read in one call, so a
    few kilobytes of them could be gigabytes before any count."""
    import zipfile

    if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        method = _METHODS.get(member.compress_type, str(member.compress_type))
        raise QkvcalcError("array.npz_method", origin=origin, method=method)
    out = bytearray()
    try:
        with archive.open(member) as stream:
            while chunk := stream.read(INFLATE_CHUNK):
                out += chunk
                if len(out) > budget:
                    raise QkvcalcError("input.too_big", limit=limit)
    except QkvcalcError:
        raise
    except Exception as err:  # a damaged file: any error (DAMAGED above)
        raise QkvcalcError("array.bad_file", origin=origin, reason=str(err)[:120]) from None
    return out


# A zip member's local header: its fixed part, and where its name's and extra field's lengths are
LOCAL_HEADER = 30
LOCAL_SIGNATURE = b"PK\x03\x04"


def _stored(data: bytes | bytearray, member: Any, origin: str) -> memoryview | None:
    """A stored (uncompressed) member's bytes as a view of the file's own bytes, its CRC checked
    as zipfile checks it: a layer's arrays are then read without a copy (numpy's views of
    `bytes` are read-only, which the input takes as they are). None for a member that is
    compressed or encrypted, or whose local header is not where the directory says: those are
    read (and refused) by zipfile, as before."""
    import zipfile
    import zlib

    if member.compress_type != zipfile.ZIP_STORED or member.flag_bits & 0x1:
        return None
    at = member.header_offset
    header = bytes(data[at : at + LOCAL_HEADER])
    if len(header) != LOCAL_HEADER or not header.startswith(LOCAL_SIGNATURE):
        return None
    start = at + LOCAL_HEADER + int.from_bytes(header[26:28], "little")
    start += int.from_bytes(header[28:30], "little")
    end = start + member.file_size
    if member.compress_size != member.file_size or end > len(data):
        return None
    view = memoryview(data)[start:end]
    if zlib.crc32(view) != member.CRC:
        raise QkvcalcError(
            "array.bad_file", origin=origin, reason=f"Bad CRC-32 for file {member.filename!r}"
        )
    return view


def _members_claimed(data: bytes | bytearray) -> int:
    """How many members a zip's end record (or its zip64 record) says it holds; 0 when it has
    none that can be read (zipfile then says what is wrong)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 0xFFFF))
    if end < 0 or end + 22 > len(data):
        return 0
    count = int.from_bytes(data[end + 10 : end + 12], "little")
    locator = end - 20  # zip64: the count is 0xFFFF here and the real one in the zip64 record
    if count != 0xFFFF or locator < 0 or data[locator : locator + 4] != b"PK\x06\x07":
        return count
    at = int.from_bytes(data[locator + 8 : locator + 16], "little")
    if data[at : at + 4] != b"PK\x06\x06":
        return count
    return int.from_bytes(data[at + 32 : at + 40], "little")


def _json_member(array: np.ndarray, origin: str) -> dict[str, Any]:
    """The keys a .npz keeps as text (qkvcalc extract's `_json.npy`: name, tokens, nested keys): a
    0-d unicode array holding one JSON object, read as strictly as a JSON problem is."""
    from qkvcalc.input.parse import load_json

    if array.ndim != 0 or array.dtype.kind != "U":
        raise QkvcalcError("array.npz_json", origin=origin)
    try:
        found = load_json(str(array.item()))
    except QkvcalcError as err:
        raise err.within("input.from", origin=origin) from None
    if not isinstance(found, dict):
        raise QkvcalcError("array.npz_json", origin=origin)
    return found


def _is_plain(value: object) -> bool:
    return value is None or isinstance(value, list | tuple | str | bytes | int | float | dict)


def to_numpy(value: Any) -> np.ndarray | None:
    """An array-like as a numpy array, or None when it is not one (a list, a number …).

    A torch tensor may live on a GPU and be bfloat16, which numpy cannot hold: it is detached,
    moved to the CPU and, when it holds floating-point numbers, widened to float64 first.
    """
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if _is_plain(value):
        return None
    if all(hasattr(value, a) for a in ("detach", "cpu", "numpy")):  # a torch tensor
        tensor = value.detach().cpu()
        if getattr(tensor, "is_floating_point", lambda: False)():
            tensor = tensor.double()
        return np.asarray(tensor.numpy())
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        try:
            return np.asarray(value)
        except (TypeError, ValueError, RuntimeError):
            return None
    return None


def _float64(array: np.ndarray, name: str) -> np.ndarray:
    """A float array as float64: a long double beyond float64's range (1e4000) is refused by
    its cell, not cast to inf with numpy's overflow warning on stderr."""
    with np.errstate(over="ignore"):
        wide = np.asarray(array, dtype=np.float64)
    lost = np.isinf(wide) & np.isfinite(array)
    if lost.any():
        at = tuple(int(i) for i in np.argwhere(lost)[0])
        where = "[" + ",".join(str(i + 1) for i in at) + "]"
        raise QkvcalcError("number.too_large", field=name + where, text=str(array[at]))
    return wide


def as_input(value: Any, field: str) -> Any:
    """A field's value as the input format holds it: array-likes become numpy arrays (matrices)
    or plain Python values (masks, tokens, numbers); anything else is returned as it is."""
    array = to_numpy(value)
    if array is None:
        return value
    from qkvcalc.input.fields import DISPLAY
    from qkvcalc.labels import shape_text

    name = DISPLAY.get(field, field)
    if array.dtype.kind == "c":
        raise QkvcalcError("array.dtype", field=name, dtype=str(array.dtype))
    if array.dtype.kind in "fiu" and field in _MATRICES:
        if array.ndim > 2:
            raise QkvcalcError(
                "array.too_many_dims", field=name, ndim=array.ndim, shape=shape_text(array.shape)
            )
        if array.ndim == 2 or array.ndim == 1:
            return _float64(array, name) if array.dtype.kind == "f" else array
    if array.dtype.kind in "SV":
        raise QkvcalcError("array.dtype", field=name, dtype=str(array.dtype))
    return array.tolist()
