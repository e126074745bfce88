"""Arrays in: a .npz file as the problem, .npy files as option values, and array-likes (numpy,
torch) from Python, read safely (allow_pickle=False) and under the same limits as JSON.

The command-line cases read files written to a temporary folder, in this process (what a
command prints or refuses); the refusal to unpickle and a binary archive on a real pipe run as
real processes.
"""

from __future__ import annotations

import contextlib
import io
import json
import zipfile

import numpy as np
import pytest

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.input import presets
from tests.conftest import in_process, run_qkvcalc

SENTENCE = presets.load("sentence")
ARRAYS = {
    "x": np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 1.0]]),
    "wq": np.array([[1.0, 0.0], [0.0, 1.0]]),
    "wk": np.array([[1.0, 1.0], [0.0, 1.0]]),
    "wv": np.array([[1.0, 0.0], [1.0, 1.0]]),
}


def expected_json() -> dict:
    result = in_process("explain", "--preset", "sentence", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def one_error(result, *fragments: str) -> str:
    """Bad input: exit 2, nothing on stdout, one message on stderr naming what is wrong."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


def test_npz_file_is_a_problem(tmp_path):
    path = tmp_path / "layer.npz"
    np.savez(path, **ARRAYS, mask="causal", tokens=np.array(["I", "love", "cats"]))
    result = in_process("explain", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    doc, want = json.loads(result.stdout), expected_json()
    assert doc["output"] == want["output"]
    assert doc["problem"]["tokens"] == ["I", "love", "cats"]
    assert doc["problem"]["mask"] == "causal"


def test_npz_compressed_from_stdin_with_keys_of_any_case(tmp_path):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, X=ARRAYS["x"], W_Q=ARRAYS["wq"], wk=ARRAYS["wk"], wv=ARRAYS["wv"])
    result = run_qkvcalc("explain", "-", "--format", "json", input=buffer.getvalue())
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["output"]) == 3


def test_npy_files_as_option_values(tmp_path):
    for name, value in ARRAYS.items():
        np.save(tmp_path / f"{name}.npy", value.astype(np.float32))
    np.save(tmp_path / "mask.npy", np.tril(np.ones((3, 3), dtype=bool)))
    args = [f"--{name}={tmp_path / name}.npy" for name in ARRAYS]
    result = in_process(
        "explain", *args, "--mask", str(tmp_path / "mask.npy"), "--tokens", "I love cats",
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"] == expected_json()["output"]


def test_npy_option_overrides_a_preset(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[1, 2], [0, 1], [1, 1]]))
    result = in_process(
        "explain", "--preset", "sentence", "--x", str(tmp_path / "x.npy"), "--format", "json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"] == expected_json()["output"]


def test_an_object_array_is_never_unpickled(tmp_path):
    path = tmp_path / "evil.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    one_error(run_qkvcalc("explain", "--preset", "doc", "--x", str(path)), "allow_pickle=False")
    npz = tmp_path / "evil.npz"
    np.savez(npz, x=np.array([{"a": 1}], dtype=object), wq=ARRAYS["wq"])
    one_error(
        run_qkvcalc("explain", str(npz)), "evil.npz[x] holds Python objects", "allow_pickle=False"
    )


def test_a_header_that_claims_more_than_the_file_holds(tmp_path):
    # a 200-byte file that says it holds 10¹² float64s: refused from its header, nothing
    # allocated
    path = tmp_path / "huge.npy"
    header = {"descr": "<f8", "fortran_order": False, "shape": (1_000_000, 1_000_000)}
    with path.open("wb") as stream:
        np.lib.format.write_array_header_1_0(stream, header)
        stream.write(b"\0" * 64)
    one_error(in_process("explain", "--preset", "doc", "--x", str(path)), "1000000×1000000")


def test_a_compressed_npz_counts_its_unpacked_size_against_max_bytes(tmp_path):
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, x=np.zeros((1000, 1000)), **{k: ARRAYS[k] for k in ("wq", "wk")})
    assert path.stat().st_size < 100_000  # 8 MB of zeros, compressed
    one_error(
        in_process("explain", str(path), "--max-bytes", "1000000"), "larger than 1000000 bytes"
    )


def test_npz_numbers_count_against_max_elements(tmp_path):
    path = tmp_path / "layer.npz"
    np.savez(path, **ARRAYS)
    one_error(in_process("explain", str(path), "--max-elements", "5"), "X is 3×2")


def test_npz_errors_are_those_of_the_input_format(tmp_path):
    path = tmp_path / "typo.npz"
    np.savez(path, **ARRAYS, maks="causal")
    one_error(in_process("explain", str(path)), "'maks'", "'mask'")
    path = tmp_path / "missing.npz"
    np.savez(path, x=ARRAYS["x"], wq=ARRAYS["wq"])
    one_error(in_process("explain", str(path)), "missing W_K, W_V")
    path = tmp_path / "batch.npz"
    np.savez(path, **{**ARRAYS, "x": ARRAYS["x"][None]})
    one_error(in_process("explain", str(path)), "3-dimensional", "1×3×2")


def test_npy_as_the_whole_input_says_what_to_do(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, ARRAYS["x"])
    one_error(in_process("explain", str(path)), "np.savez", "--x x.npy")


def test_broken_numpy_files(tmp_path):
    path = tmp_path / "broken.npz"
    data = io.BytesIO()
    np.savez(data, **ARRAYS)
    path.write_bytes(data.getvalue()[:200])  # a zip cut short
    one_error(in_process("explain", str(path)), "not a numpy file")
    path = tmp_path / "notes.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    one_error(in_process("explain", str(path)), "'readme.txt'")
    missing = tmp_path / "nowhere.npy"
    one_error(in_process("explain", "--preset", "doc", "--x", str(missing)), "no such file")


def test_korean_message_for_an_array_error(tmp_path):
    path = tmp_path / "evil.npy"
    np.save(path, np.array([None], dtype=object), allow_pickle=True)
    stderr = one_error(in_process("explain", "--preset", "doc", "--x", str(path), "--lang", "ko"))
    assert "언피클" in stderr


# ---- from Python -----------------------------------------------------------------------------


def test_numpy_arrays_of_any_dtype_from_python():
    trace = qkvcalc.explain(
        x=ARRAYS["x"].astype(np.float32),
        wq=ARRAYS["wq"].astype(np.int64),
        wk=ARRAYS["wk"],
        wv=ARRAYS["wv"],
        mask=np.tril(np.ones((3, 3), dtype=bool)),
        tokens=np.array(["I", "love", "cats"]),
        heads=np.int64(1),
    )
    assert trace.output.tolist() == expected_json()["output"]
    assert trace.problem.tokens == ("I", "love", "cats")


def test_array_like_objects_from_python():
    class Wrapped:  # anything with __array__ (JAX, xarray, pandas …)
        def __init__(self, value):
            self.value = value

        def __array__(self, dtype=None, copy=None):
            return np.asarray(self.value, dtype=dtype)

    trace = qkvcalc.explain(**{k: Wrapped(v) for k, v in ARRAYS.items()}, mask="causal")
    assert trace.output.tolist() == expected_json()["output"]


def test_torch_tensors_from_python():
    torch = pytest.importorskip("torch", reason="pip install torch==2.13.0")
    x = torch.tensor(ARRAYS["x"], dtype=torch.bfloat16, requires_grad=True)  # exact in bf16
    trace = qkvcalc.explain(
        x=x,
        wq=torch.eye(2),
        wk=torch.tensor(ARRAYS["wk"], dtype=torch.float16),
        wv=torch.tensor(ARRAYS["wv"], dtype=torch.int32),
        mask=torch.ones(3, 3, dtype=torch.bool).tril(),
        key_padding=torch.tensor([1, 1, 1]),
        scale=torch.tensor(2**-0.5, dtype=torch.float64),
        tokens=["I", "love", "cats"],
    )
    np.testing.assert_allclose(trace.output, expected_json()["output"], rtol=1e-12)
    with pytest.raises(QkvcalcError, match="3-dimensional array"):
        qkvcalc.explain(x=x[None], wq=torch.eye(2), wk=torch.eye(2), wv=torch.eye(2))
    with pytest.raises(QkvcalcError, match="complex"):
        qkvcalc.explain(x=torch.zeros(2, 2, dtype=torch.complex64), wq=[[1]], wk=[[1]], wv=[[1]])
    with pytest.raises(QkvcalcError, match=r"X\[1,1\]"):  # a NaN is named by its cell
        qkvcalc.explain(x=torch.full((1, 2), float("nan")), wq=torch.eye(2), wk=[[1]], wv=[[1]])


def test_npz_named_after_a_preset_is_not_announced_as_it(tmp_path):
    # arrays of other shapes than the preset's (comparing them must not fail either)
    path = tmp_path / "named.npz"
    np.savez(path, name="sentence", **{k: v[:2] for k, v in ARRAYS.items()}, tokens="a b")
    result = in_process("explain", str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "preset" not in json.loads(result.stdout)["problem"]
    shown = in_process("explain", str(path)).stdout
    assert "preset sentence:" not in shown and "edited from preset sentence" in shown


def test_damaged_numpy_files_are_one_error_each():
    """Flipped, cut and inserted bytes in .npz files (stored, deflate, LZMA, bzip2) and a .npy: the
    archive and header readers raise many kinds of errors, each must become a QkvcalcError."""
    import random
    import zipfile

    from qkvcalc.input.problem import Problem
    from qkvcalc.input.sources import _as_object

    def member(a):
        buffer = io.BytesIO()
        np.save(buffer, a)
        return buffer.getvalue()

    bases = []
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA, zipfile.ZIP_BZIP2):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=method) as archive:
            for key, value in ARRAYS.items():
                archive.writestr(f"{key}.npy", member(value))
            archive.writestr("mask.npy", member(np.array("causal")))
        bases.append(buffer.getvalue())
    bases.append(member(ARRAYS["x"]))
    rng = random.Random(15)
    for _ in range(1500):
        data = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.6:
                data[at] = rng.randrange(256)
            elif op < 0.8:
                del data[at : at + rng.randint(1, 20)]
            else:
                data[at:at] = rng.randbytes(rng.randint(1, 8))
        with contextlib.suppress(QkvcalcError):
            Problem.from_mapping(_as_object(bytes(data), "f.npz", 10**8), max_elements=10**6)


def test_a_stored_npz_is_read_as_views_of_its_bytes_and_its_crc_still_checked(tmp_path):
    """np.savez (and extract --output) stores its members uncompressed: their arrays are views
    of the file's bytes (read-only, no copy: a 7B layer's weights are not copied twice), equal
    to what numpy reads; a flipped byte in a member's numbers is refused by its CRC, as
    zipfile's own reader refuses it."""
    from qkvcalc.input.arrays import load_npz

    path = tmp_path / "layer.npz"
    np.savez(path, **ARRAYS, mask=np.array("causal"), fortran=np.asfortranarray(ARRAYS["wq"]))
    data = path.read_bytes()
    doc = load_npz(data, "layer.npz", 10**8)
    with np.load(path) as expected:
        for key, value in ARRAYS.items():
            assert np.array_equal(doc[key], expected[key]) and doc[key].dtype == value.dtype
            assert not doc[key].flags.writeable
            assert np.shares_memory(doc[key], np.frombuffer(data, dtype=np.uint8))
        assert np.array_equal(doc["fortran"], expected["fortran"])
    assert doc["mask"] == "causal"
    # one byte of x's numbers flipped (its last byte: the member's data, not its header)
    at = data.index(b"x.npy") + len(b"x.npy")
    end = data.index(b"PK\x03\x04", at)
    damaged = bytearray(data)
    damaged[end - 1] ^= 0xFF
    with pytest.raises(QkvcalcError) as err:
        load_npz(bytes(damaged), "layer.npz", 10**8)
    assert err.value.msg.key == "array.bad_file" and "CRC" in str(err.value)
