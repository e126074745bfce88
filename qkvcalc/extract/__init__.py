"""`qkvcalc extract`: one layer of a real Hugging Face model as a qkvcalc problem.

    >>> import qkvcalc
    >>> problem = qkvcalc.extract("path/to/checkpoint", layer=3, input_ids=[15496, 995])
    >>> trace = qkvcalc.explain(**problem)

One module per architecture family (bert, gpt2, llama — LLaMA, Mistral, Qwen2, Qwen3,
Gemma 2 —, neox — and Persimmon —, bloom — and MPT —, t5, opt — and XGLM —, deepseek — the
MLA models —, dbrx …) says where a layer's attention is and how its weights become the
input format's keys; hybrid says which layers of a hybrid (Qwen3-Next, Bamba, Nemotron-H …)
are softmax attention and refuses the others by their kind (deepseek_v4: DeepSeek-V4, refused
layer by layer, naming each kind; zamba: the shared attention block
of Zamba's and Zamba2's hybrid layers, Zamba2's adapters folded in); runner loads the model,
runs it up to layer L's attention and no further, and assembles the problem; islands lifts
transformers' float32 steps for a float64 run;
jsonout writes the problem a row at a time, npzout as a .npz of arrays. torch and
transformers (the optional extra qkvcalc[models]) are imported only when a model is
extracted, never on import.

This package is itself callable, so `qkvcalc.extract(...)` is the function whether or not the
package has been imported (Python makes qkvcalc.extract the package once it is).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import Any

__all__ = ["extract", "write_arrays", "write_problem"]


def extract(
    model_or_path: Any,
    layer: int,
    *,
    input_ids: Sequence[int] | None = None,
    text: str | None = None,
    dtype: str = "auto",
    tokenizer: Any = None,
    lang: str = "en",
    progress: Any = None,
) -> dict[str, Any]:
    """Layer `layer` of a transformers model as a problem dict of qkvcalc's input format.

    `model_or_path`: a checkpoint folder (or hub name), or an already-loaded transformers model
    (run in its own dtype and mode; it is put in eval mode for the run and back afterwards).
    Give the tokens as `input_ids` or as `text` (the model's tokenizer: the folder's own, or
    `tokenizer=`). `dtype`: "auto" (the checkpoint's own), "float64" (x float64-exact: the float32
    steps transformers keeps are lifted for this run only), "float32" or "bfloat16".

    Matrices and vectors are float64 numpy arrays (qkvcalc.explain takes them as they are;
    qkvcalc.extract.write_problem writes them as JSON). Raises QkvcalcError for a request that
    cannot be met: the extra missing, an unknown architecture, a layer out of range, a token id
    outside the vocabulary, a folder that is not a checkpoint."""
    from qkvcalc.extract.runner import extract as run

    return run(
        model_or_path,
        layer,
        input_ids=input_ids,
        text=text,
        dtype=dtype,
        tokenizer=tokenizer,
        lang=lang,
        progress=progress,
    )


def write_problem(problem: dict[str, Any], out: Any) -> None:
    """The problem as JSON to a text stream, a row at a time (see jsonout)."""
    from qkvcalc.extract.jsonout import write_problem as write

    write(problem, out)


def write_arrays(problem: dict[str, Any], out: Any) -> None:
    """The problem as a numpy .npz archive to a binary stream (see npzout)."""
    from qkvcalc.extract.npzout import write_arrays as write

    write(problem, out)


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return extract(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
