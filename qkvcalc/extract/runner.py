"""The common runner: load (or take) a model, check the request, run the model up to layer L's
attention and no further, and assemble the problem from x and the family's keys.

The forward stops once layer L's attention input is captured: a forward pre-hook on that
attention module records its input and raises _Captured, so later layers never run. The model
stays in its own dtype (dtype="auto"); only layer L's tensors are converted to float64. With
dtype="float64" a checkpoint is still loaded in its own dtype, and layers 0…L are converted
one at a time as they run (stream.py), so the run takes about one layer in float64.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pickle
import re
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract import deepseek_v4, hybrid, refused
from qkvcalc.extract.check import layout
from qkvcalc.extract.common import Family, Layer
from qkvcalc.extract.origin import x_origin
from qkvcalc.i18n import Msg

DTYPES = ("auto", "float64", "float32", "bfloat16")

Progress = Callable[[Msg], None]


def families() -> dict[str, Family]:
    """model_type → its family, in the order the architectures are listed to users."""
    from qkvcalc.extract import (
        bert,
        bigcode,
        bloom,
        dbrx,
        deepseek,
        deepseek_v4,
        doge,
        falcon,
        gemma,
        gpt2,
        llama,
        minimax,
        modernbert,
        neox,
        opt,
        t5,
        zamba,
    )

    found: dict[str, Family] = {}
    for family in (
        bert.FAMILY,
        gpt2.FAMILY,
        llama.FAMILY,
        llama.NEMOTRON_H,
        llama.RECURRENT_GEMMA,
        neox.FAMILY,
        neox.PERSIMMON,
        neox.JAPANESE,
        bloom.FAMILY,
        bloom.MPT,
        t5.FAMILY,
        bigcode.FAMILY,
        opt.OPT,
        opt.XGLM,
        opt.GPT_NEO,
        opt.GPTJ,
        opt.CODEGEN,
        opt.CTRL,
        gpt2.OPENAI_GPT,
        gpt2.GPT_SW3,
        falcon.FAMILY,
        modernbert.FAMILY,
        modernbert.DECODER,
        deepseek.FAMILY,
        deepseek.KIMI_LINEAR,
        deepseek.BAILING_HYBRID,
        deepseek.DEEPSEEK_V32,
        deepseek.GLM_DSA,
        deepseek_v4.FAMILY,
        dbrx.FAMILY,
        doge.FAMILY,
        gemma.FAMILY,
        zamba.FAMILY,
        minimax.FAMILY,
    ):
        for model_type in family.names:
            found[model_type] = family
    return found


def architecture_names() -> list[str]:
    """Each architecture once (Gemma 3's text and multimodal checkpoints are one name)."""
    return list(dict.fromkeys(family.names[kind] for kind, family in families().items()))


class _Captured(Exception):
    """Not an error: raised from layer L's pre-hook to end the forward once x is in hand."""


def require_models(command: str = "extract") -> None:
    """torch and transformers, or the one message that says what to install (for `command`)."""
    for name in ("torch", "transformers"):
        try:
            __import__(name)
        except ImportError:
            raise QkvcalcError("extract.needs_models", missing=name, command=command) from None


# ---- loading ----------------------------------------------------------------------------

_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def check_name(path: str) -> None:
    """A MODEL that is not a folder here, refused at once (before torch is imported, without
    the network) when it cannot be a hub name: it starts with . ~ or /, is not of the hub's
    form owner/name, or its first part is a folder here (models/my-mdoel with a models folder
    beside it is a typo'd path, not a hub repository). A hub name is left to the hub."""
    local = Path(path).expanduser()
    if local.exists():
        return
    first = Path(path.split("/", 1)[0])
    if (
        not _HUB_NAME.match(path)
        or path.startswith((".", "~", "/"))
        or ("/" in path and first.is_dir())
    ):
        raise QkvcalcError("extract.no_folder", path=path)


def check_hub(path: str) -> None:
    """A hub name (a MODEL that is no folder here) that the local cache has no folder for,
    with the hub out of reach (offline, or one connection attempt failing), refused before
    torch is imported: transformers could not load it either, after seconds of importing.
    The command line asks this first; a run inside Python learns it from transformers."""
    if Path(path).expanduser().exists():
        return
    try:
        from huggingface_hub import constants
    except ImportError:  # the models extra is missing: require_models says so
        return
    # the cache's folder of a model repository, as huggingface_hub lays it out
    cached = Path(constants.HF_HUB_CACHE) / ("models--" + path.replace("/", "--"))
    if not cached.is_dir() and _out_of_reach(constants):
        raise QkvcalcError("extract.hub_unreachable", model=path, hub=constants.ENDPOINT)


def _config(path: str) -> Any:
    from transformers import AutoConfig

    local = Path(path).expanduser()
    if local.exists():
        if local.is_dir():
            _check_file_types(local, path)
        if not local.is_dir() or not (local / "config.json").is_file():
            raise QkvcalcError("extract.not_checkpoint", path=path)
        model_type = _model_type_of(local / "config.json")
        if not model_type:
            raise QkvcalcError("extract.no_model_type", path=path)
        if model_type != deepseek_v4.MODEL_TYPE:  # refused by its layer's kind, config read
            _family(model_type, path)  # an unknown architecture is named before transformers tries
        _refuse_custom_code(local, path)
    else:
        check_name(path)
    try:
        return AutoConfig.from_pretrained(
            str(local) if local.exists() else path, trust_remote_code=False
        )
    except OSError as err:
        from huggingface_hub import constants

        if not local.exists() and constants.HF_HUB_OFFLINE:  # unreachable, and not in the cache
            raise QkvcalcError(
                "extract.hub_unreachable", model=path, hub=constants.ENDPOINT
            ) from None
        raise _load_error(err, "extract.cannot_load", model=path) from None
    except MemoryError:
        raise QkvcalcError("extract.out_of_memory", model=path) from None
    except (ValueError, KeyError) as err:
        raise _load_error(err, "extract.cannot_load", model=path) from None
    except Exception as err:  # a field of the wrong type (num_hidden_layers "two"), and the like
        raise QkvcalcError("extract.bad_config", model=path, reason=_reason(err)) from None


@contextlib.contextmanager
def _offline_unless_reachable() -> Any:
    """A hub name, with the hub out of reach: huggingface_hub would retry each request five
    times over 26 s, warning each time. One connection attempt decides instead; unreachable,
    this run is offline (the local cache only), and the mode is restored afterwards."""
    from huggingface_hub import constants

    saved = constants.HF_HUB_OFFLINE
    if _out_of_reach(constants):
        constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved


def _out_of_reach(constants: Any) -> bool:
    """huggingface_hub's constants say the hub is offline, or one connection attempt fails."""
    return bool(constants.HF_HUB_OFFLINE) or not _reachable(constants.ENDPOINT)


def _reachable(endpoint: str, timeout: float = 5.0) -> bool:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    if not parts.hostname:
        return False
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError:
        return False
    return True


# What a checkpoint folder's entries may be: files (or links to them) and folders. A named pipe
# (config.json, model.safetensors.index.json, a tokenizer's file) would make transformers wait
# forever for a writer; a socket or a device is no file to read either.
_NOT_FILES = (stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFCHR, stat.S_IFBLK)


def _check_file_types(folder: Path, model: str) -> None:
    """Every entry of a checkpoint folder is a file or a folder (links followed, stat only:
    nothing is opened), before transformers opens any of them."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as err:
        raise QkvcalcError("extract.cannot_load", model=model, reason=_reason(err)) from None
    for entry in entries:
        try:
            kind = stat.S_IFMT(os.stat(entry.path).st_mode)
        except OSError:  # a dangling link: transformers says what it misses, if it needs it
            continue
        if kind in _NOT_FILES:
            raise QkvcalcError("extract.not_a_file", model=model, file=entry.name)


# The files in which a checkpoint names code of its own for transformers to import (auto_map:
# "AutoModel": "modeling_x.MyModel", "AutoTokenizer": [...]).
CODE_MAPS = ("config.json", "tokenizer_config.json")


def _refuse_custom_code(folder: Path, model: str) -> None:
    """A checkpoint that ships code of its own is refused, named, before transformers reads
    it: qkvcalc never runs a checkpoint's code (trust_remote_code is always False), and left
    to itself transformers would ask on stdin whether to run it, where `echo y |` says yes."""
    for name in CODE_MAPS:
        file = folder / name
        if not file.is_file():
            continue
        try:
            doc = _read_json(file)
        except QkvcalcError:
            if name == "config.json":
                raise
            continue  # a broken tokenizer config: the tokenizer is not used, as before
        if isinstance(doc, dict) and doc.get("auto_map"):
            raise QkvcalcError("extract.custom_code", model=model, file=name)


def _load_error(err: BaseException, key: str, **params: Any) -> QkvcalcError:
    """transformers' refusal to run a checkpoint's code (trust_remote_code=False) as the one
    message that says so; any other failure as `key`, with its reason."""
    if _is_custom_code(err):
        return QkvcalcError("extract.custom_code_needed", model=next(iter(params.values())))
    return QkvcalcError(key, **params, reason=_reason(err))


def _is_custom_code(err: BaseException) -> bool:
    """Whether transformers refused because the checkpoint needs its own code: with
    trust_remote_code=False it raises a ValueError that asks for trust_remote_code=True."""
    return isinstance(err, ValueError) and "trust_remote_code" in str(err)


# A checkpoint's config.json or tokenizer_config.json is a few kilobytes (a big label map
# makes it a few hundred): one of more is not read, nor is one nested past Python's stack.
MAX_CONFIG_BYTES = 16_000_000


def _read_json(file: Path) -> Any:
    try:
        size = file.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise QkvcalcError(
                "extract.config_too_big", path=str(file), size=size, limit=MAX_CONFIG_BYTES
            )
        return json.loads(file.read_text(encoding="utf-8"))
    except RecursionError:
        raise QkvcalcError("extract.config_nested", path=str(file)) from None
    except (OSError, ValueError) as err:
        raise QkvcalcError("extract.cannot_load", model=str(file), reason=_reason(err)) from None


def _model_type_of(config_json: Path) -> str:
    doc = _read_json(config_json)
    found = doc.get("model_type", "") if isinstance(doc, dict) else ""
    return found if isinstance(found, str) else str(found)


def _out_of_memory(err: BaseException) -> bool:
    """torch's allocator failing is a RuntimeError ("DefaultCPUAllocator: can't allocate
    memory"), not a MemoryError."""
    text = str(err)
    if isinstance(err, OSError) and err.errno == errno.ENOMEM:
        return True
    return any(
        words in text
        for words in ("can't allocate memory", "not enough memory", "Cannot allocate memory")
    )


def _sizes_lie(path: str, config: Any, cls: Any) -> QkvcalcError | None:
    """A checkpoint whose config says other sizes than its weights hold (transformers refuses it
    and says only "look at the above report"): the first weight whose stored shape is not the
    one the config makes, as one message; None when it cannot be told (no safetensors here, or a
    model not buildable on the meta device)."""
    import torch
    from safetensors import safe_open

    files = sorted(Path(path).expanduser().glob("*.safetensors"))
    try:
        with torch.device("meta"):
            built = cls.from_config(config, trust_remote_code=False)
        made = {name: tuple(t.shape) for name, t in built.state_dict().items()}
        prefix = f"{getattr(built, 'base_model_prefix', '')}."
        for file in files:
            with safe_open(str(file), "pt") as found:
                for key in found.keys():  # noqa: SIM118 (safe_open is no mapping)
                    name = key if key in made else key.removeprefix(prefix)
                    stored = tuple(found.get_slice(key).get_shape())
                    if name in made and stored != made[name]:
                        return QkvcalcError(
                            "extract.sizes_lie",
                            path=path,
                            weight=key,
                            stored="×".join(map(str, stored)),
                            made="×".join(map(str, made[name])),
                        )
    except Exception:  # not to be told: transformers' own reason stands
        return None
    return None


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split())
    if isinstance(err, KeyError):  # str(KeyError('nope')) is "'nope'": say what it is
        text = f"{type(err).__name__}: {text}"
    return text[:300] + ("…" if len(text) > 300 else "") or type(err).__name__


def _family(model_type: str, model: str) -> Family:
    found = families().get(model_type)
    if found is None:
        hybrid.check_type(model_type, model)  # a hybrid extract does not read: said as such
        refused.check_type(model_type, model)  # attention no problem can say: the reason
        known = ", ".join(architecture_names())
        raise QkvcalcError("extract.architecture", model=model, model_type=model_type, known=known)
    return found


def _torch_dtype(dtype: str) -> Any:
    import torch

    return {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]


def load(
    path: str, config: Any, dtype: str, progress: Progress | None = None, stream: bool = False
) -> tuple[Any, Any]:
    """The model (eager attention, eval mode) and its tokenizer (None when it has none). With
    `stream`, in the checkpoint's own dtype whatever `dtype` says: the run converts the layers
    it runs (stream.float64_layers)."""
    if progress:
        progress(Msg("extract.loading", model=path))
    import torch
    import transformers

    cls = transformers.T5EncoderModel if config.model_type == "t5" else transformers.AutoModel
    # mixture-of-experts layers: the default grouped kernel has no float64 version
    # DeepSeek: n_routed_experts; Aria: moe_num_experts
    experts = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
    configs = (config, hybrid.text_config(config))  # a multimodal model's: its text config's
    moe = any(getattr(found, name, None) for found in configs for name in experts)
    extra: dict[str, Any] = {"experts_implementation": "eager"} if moe else {}
    try:
        model = cls.from_pretrained(
            path,
            config=config,
            dtype="auto" if dtype == "auto" or stream else _torch_dtype(dtype),
            attn_implementation="eager",
            trust_remote_code=False,
            **extra,
        )
    except pickle.UnpicklingError:
        # torch.load(weights_only=True) met a pickle that is more than tensors: it was not
        # unpickled (it could run code), and qkvcalc never asks for it to be
        raise QkvcalcError("extract.pickled_weights", path=path) from None
    except MemoryError:
        raise QkvcalcError("extract.out_of_memory", model=path) from None
    except (OSError, ValueError, RuntimeError) as err:
        if _out_of_memory(err):
            raise QkvcalcError("extract.out_of_memory", model=path) from None
        lie = _sizes_lie(path, config, cls) if "ignore_mismatched_sizes" in str(err) else None
        raise lie or _load_error(err, "extract.no_weights", path=path) from None
    except Exception as err:
        # safetensors' own error (a damaged or lying header, a link to a file that is not
        # one), or the model not buildable from its config (0 heads, an unknown rope type)
        if _out_of_memory(err):
            raise QkvcalcError("extract.out_of_memory", model=path) from None
        if type(err).__name__ == "SafetensorError":
            raise QkvcalcError("extract.no_weights", path=path, reason=_reason(err)) from None
        raise QkvcalcError("extract.bad_config", model=path, reason=_reason(err)) from None
    if not stream and (dtype == "float64" or (dtype == "auto" and model.dtype == torch.float64)):
        # what transformers keeps in float32 whatever the dtype (_keep_in_fp32_modules_strict:
        # Kimi Linear's router and dt_bias, DeepSeek-V4's mHC weights since 5.25) widened,
        # exactly, as stream.py widens it: a float64 run lifts the float32 steps (islands.py),
        # and a float32 weight then meets float64 numbers (a checkpoint saved in float64 and
        # read with --dtype auto too)
        model = model.to(_torch_dtype("float64"))
    model.eval()
    return model, _tokenizer(path)


# What a folder holds when it has a tokenizer. transformers 5 builds some tokenizers (Gemma's)
# with an empty vocabulary when there is none, so a folder without these files has none.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "spiece.model",
    "vocab.json",
    "vocab.txt",
)


def _tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    local = Path(path).expanduser()
    if local.is_dir() and not any((local / name).is_file() for name in TOKENIZER_FILES):
        return None
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False)
    except Exception as err:  # no tokenizer files, or one transformers cannot read: ids stand in
        if _is_custom_code(err):
            raise QkvcalcError("extract.custom_code_needed", model=path) from None
        return None
    # Without tokenizer files (a hub name whose repository has none) transformers makes an
    # empty tokenizer of the model's kind: no word beyond its special tokens, every id decoded
    # as "". That is no tokenizer either.
    words: dict[str, int] = tokenizer.get_vocab()
    return tokenizer if len(words) > len(set(tokenizer.all_special_ids)) else None


# ---- the request ------------------------------------------------------------------------


def _token_ids(
    model: Any, name: str, input_ids: Sequence[int] | None, text: str | None, tokenizer: Any
) -> list[int]:
    if (input_ids is None) == (text is None):
        raise QkvcalcError("extract.input_choice")
    if text is not None:
        if tokenizer is None:
            raise QkvcalcError("extract.no_tokenizer", model=name)
        ids = list(tokenizer(text)["input_ids"])
    else:
        ids = _as_ids(input_ids)
    _check_ids(ids, int(model.get_input_embeddings().num_embeddings), name)
    return ids


def _as_ids(input_ids: Any) -> list[int]:
    return [int(i) for i in np.asarray(input_ids).reshape(-1)]


def _check_ids(ids: list[int], size: int | None, model: str) -> None:
    if not ids:
        raise QkvcalcError("extract.ids_empty")
    for token_id in ids:
        if size is not None and not 0 <= token_id < size:
            raise QkvcalcError(
                "extract.token_id", id=token_id, model=model, size=size, last=size - 1
            )


# What extract takes on, decided from the config and the request before anything is built:
# a layer stack longer than any released model's (building 10⁶ layers took a minute and ended
# in a MemoryError), weights that cannot fit this machine's memory, more tokens than a
# learned position table has rows (GPT-2, BERT) or than a problem qkvcalc explains well.
MAX_LAYERS = 1_000
MAX_TOKENS = 8_192
# families whose positions are a table of fixed rows
LEARNED_POSITIONS = (
    "gpt2",
    "bert",
    "gpt_bigcode",
    "opt",
    "gpt_neo",
    "gptj",
    "openai-gpt",
    "biogpt",
)
# families whose positions are a fixed sinusoidal table of max_position_embeddings rows (CTRL)
POSITION_TABLES = ("ctrl",)
_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}


def _whole(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_config(
    config: Any, model: str, dtype: str, stream: bool = False, tokens: int = 1
) -> None:
    """The sizes a config gives, checked before transformers builds anything from them; with
    `stream` (a float64 run that converts one layer at a time), the memory that run takes for
    this many tokens, against what the machine has available now."""
    sizes = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size")
    for name in (*sizes, "vocab_size"):
        try:
            value = getattr(config, name, None)
        except Exception:  # a field each layer has its own of (Gemma 4's num_key_value_heads)
            value = None
        if value is not None and (not _whole(value) or value < 1):
            # named as config.json writes it: GPT-2's n_head, T5's num_heads
            key = getattr(config, "attribute_map", {}).get(name, name)
            raise QkvcalcError("extract.config_field", model=model, field=key, value=repr(value))
    try:
        fields = config.to_dict()
    except Exception:  # a config transformers built but cannot list: nothing to check
        fields = {}
    for name, value in fields.items():
        if isinstance(value, float) and not np.isfinite(value):
            raise QkvcalcError("extract.config_not_finite", model=model, field=name, value=value)
    layers = getattr(config, "num_hidden_layers", None) or 0
    if layers > MAX_LAYERS:
        raise QkvcalcError("extract.too_many_layers", model=model, count=layers, limit=MAX_LAYERS)
    if stream:
        _check_stream(config, model, tokens)
        return
    width = getattr(config, "hidden_size", None) or 0
    vocab = getattr(config, "vocab_size", None) or 0
    parameters = 12 * layers * width * width + 2 * vocab * width  # attention + MLP, embeddings
    own = str(getattr(config, "dtype", None) or "float32").removeprefix("torch.")
    need = parameters * _BYTES.get(dtype if dtype != "auto" else own, 4)
    have = _memory()
    if have is not None and need > have:
        raise QkvcalcError(
            "extract.too_big", model=model, need=_gigabytes(need), have=_gigabytes(have)
        )


def _check_stream(config: Any, model: str, tokens: int) -> None:
    from qkvcalc.extract import stream

    need = stream.need(config, tokens)
    limits = [found for found in (stream.available(), _memory()) if found is not None]
    if limits and need > min(limits):
        raise QkvcalcError(
            "extract.too_big_float64",
            model=model,
            tokens=tokens,
            need=_gigabytes(need),
            have=_gigabytes(min(limits)),
        )


def _memory() -> int | None:
    """The bytes this process may use: the machine's memory, or less under a ulimit."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            total = min(total, soft)
    except (ImportError, OSError, ValueError):
        pass
    return total


def _gigabytes(count: int) -> str:
    return f"{count / 1e9:.1f} GB"


def _check_length(count: int, config: Any, family_type: str, model: str) -> None:
    if count > MAX_TOKENS:
        raise QkvcalcError("extract.too_many_tokens", count=count, limit=MAX_TOKENS)
    positions: Any = getattr(config, "max_position_embeddings", None)
    if family_type in LEARNED_POSITIONS and _whole(positions) and count > int(positions):
        raise QkvcalcError(
            "extract.too_many_positions", count=count, model=model, positions=positions
        )
    if family_type in POSITION_TABLES and _whole(positions) and count > int(positions):
        raise QkvcalcError(
            "extract.too_many_table_positions", count=count, model=model, positions=positions
        )


def _check_layer(layer: Any, count: int | None, model: str) -> None:
    if count is None:
        return
    whole = isinstance(layer, (int, np.integer)) and not isinstance(layer, bool)
    if not whole or not 0 <= layer < count:
        raise QkvcalcError("extract.layer", layer=layer, model=model, count=count, last=count - 1)


def _tokens(ids: list[int], tokenizer: Any) -> list[str]:
    if tokenizer is None:
        return [str(i) for i in ids]
    return [str(tokenizer.decode([i])) for i in ids]


# ---- the run ------------------------------------------------------------------------------


def first_row(output: Any) -> np.ndarray:
    """A module's output (a tensor, or a tuple that starts with one) for the first sequence,
    as float64 numpy."""
    import torch

    tensor = output[0] if isinstance(output, tuple) else output
    return np.asarray(tensor.detach()[0].to(dtype=torch.float64, device="cpu").numpy())


@contextlib.contextmanager
def one_thread_convolutions(model: Any) -> Any:
    """The modules that hold a grouped convolution (Qwen3-Next's and Qwen3.5's Gated DeltaNet
    with its depthwise conv1d over q | k | v, the Mamba mixers) run on one thread, the rest as
    torch is set. torch splits a float64 depthwise convolution into one parallel region per
    channel, each waiting for its slowest thread: on a machine whose cores are busy, the 8,192
    channels of a Qwen3-Next layer took 2.5 to 18 s on two threads, and 0.13 to 0.17 s on one.
    Gated DeltaNet calls F.conv1d with its Conv1d's weight, so the module that holds the
    convolution is the one run so. The run is the layer's own either way; the thread count is
    restored after."""
    import torch

    before = torch.get_num_threads()

    def one(module: Any, args: Any) -> None:
        torch.set_num_threads(1)

    def back(module: Any, args: Any, output: Any) -> None:
        torch.set_num_threads(before)

    handles = []
    for module in model.modules():
        children = module.children()
        if any(isinstance(c, torch.nn.Conv1d) and c.groups > 1 for c in children):
            handles += [module.register_forward_pre_hook(one), module.register_forward_hook(back)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        torch.set_num_threads(before)


def capture(
    model: Any, family: Family, layer: int, ids: list[int], float64: bool
) -> tuple[np.ndarray, dict[str, Any], np.ndarray | None]:
    """Layer `layer`'s attention input for these ids, as float64, the tensors its call was
    given by name (attention_mask, Falcon's alibi …; "block_input": the block's own input, as
    the run gave it), and its output projection's own output (None when the attention never
    called it); the run ends right there, at the latest when the layer's block ends."""
    import torch

    from qkvcalc.extract.islands import float64_islands

    block = family.stack(model)[layer]
    attention, projection = family.attention(block), family.output(block)
    seen: list[Any] = []
    given: list[dict[str, Any]] = []
    out: list[np.ndarray] = []

    def pre_hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        seen.append(hidden.detach()[0].to(dtype=torch.float64, device="cpu").numpy())
        given.append({k: v.detach() for k, v in kwargs.items() if isinstance(v, torch.Tensor)})

    def out_hook(module: Any, args: Any, output: Any) -> None:
        if seen:  # the projection of the attention the pre-hook saw
            out.append(first_row(output))
            raise _Captured

    def end(module: Any, args: Any, output: Any) -> None:
        raise _Captured  # the block ended without its attention calling the projection

    def block_hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs.get("hidden_states")
        if isinstance(hidden, torch.Tensor) and not entered:
            entered.append(hidden.detach().clone())  # what x's norm (if any) was given

    def source_hook(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        hidden = args[0] if args else kwargs["hidden_states"]
        sources.append(hidden.detach()[0].to(dtype=torch.float64, device="cpu").numpy())

    entered: list[Any] = []
    handles = [
        block.register_forward_pre_hook(block_hook, with_kwargs=True),
        attention.register_forward_pre_hook(pre_hook, with_kwargs=True),
        projection.register_forward_hook(out_hook),
        block.register_forward_hook(end),
    ]
    earlier = family.shares(model, layer)  # KV sharing: that layer's x makes K and V
    sources: list[np.ndarray] = []
    if earlier is not None:
        found = family.attention(family.stack(model)[earlier])
        handles.append(found.register_forward_pre_hook(source_hook, with_kwargs=True))
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    cached = getattr(model.config, "use_cache", None)
    model.config.use_cache = False  # one pass, no cache: a hybrid's cache of linear layers
    try:  # alone cannot even say its length (transformers' Cache.get_seq_length raises)
        with torch.no_grad():
            islands = float64_islands(model) if float64 else contextlib.nullcontext()
            with islands, one_thread_convolutions(model), contextlib.suppress(_Captured):
                family.run(model, torch.tensor([ids], device=device))
    except (MemoryError, QkvcalcError, AttributeError):
        raise  # AttributeError: a renamed attribute, named by check.layout
    except Exception as err:  # transformers' own forward failed before the layer was read
        if _out_of_memory(err):
            raise
        raise QkvcalcError(
            "extract.model_failed",
            model_type=model.config.model_type,
            layer=layer,
            error=f"{type(err).__name__}: {_first_line(err)}",
        ) from None
    finally:
        model.config.use_cache = cached
        for handle in handles:
            handle.remove()
        model.train(was_training)
    if not seen:  # the model never reached the layer: not something a user can fix
        raise RuntimeError(f"layer {layer}'s attention did not run")
    if sources:
        given[0]["kv_source"] = sources[0]
    if entered:
        given[0]["block_input"] = entered[0]
    return seen[0], given[0], out[0] if out else None


def _first_line(err: BaseException) -> str:
    """An exception's message, its first line, at most 300 characters."""
    text = (str(err).strip().splitlines() or [""])[0]
    return text if len(text) <= 300 else text[:299] + "…"


def _allowed(mask: Any) -> np.ndarray | None:
    """An attention mask as the layer is given it — eager's additive one (0, or a bias, where a
    key may be seen, the dtype's minimum where not), or a boolean one (True = may attend) — as
    a boolean n × m matrix of the first sequence (its first head's); None for no mask."""
    import torch

    if not isinstance(mask, torch.Tensor) or mask.dim() != 4:
        return None
    first = mask[0, 0].detach().cpu()
    if first.dtype == torch.bool:
        return np.asarray(first.numpy(), dtype=bool)
    return np.asarray((first > torch.finfo(first.dtype).min / 2).numpy(), dtype=bool)


def _check_finite(values: dict[str, Any], model: str, layer: int) -> None:
    """NaN or ±∞ in a checkpoint (a weight, rms_norm_eps) would be written as a bare NaN, which
    no JSON reader takes: refused, naming where it is."""
    for name, value in values.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            bad = ~np.isfinite(value)
            if bad.any():
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                raise QkvcalcError(
                    "extract.not_finite", model=model, layer=layer, field=name, where=list(where)
                )
        elif isinstance(value, float) and not np.isfinite(value):
            raise QkvcalcError(
                "extract.not_finite_value", model=model, layer=layer, field=name, value=value
            )
        elif isinstance(value, dict):
            _check_finite(value, model, layer)


# The notes that say the weights are a shared block's (zamba.py): the description then says so
BLOCK_NOTES = ("extract.shared_block", "extract.adapters_folded")


def describe(
    family: Any,
    model: Any,
    layer: int,
    shown: str,
    n: int,
    dtype: str,
    lang: str,
    x_is: Msg | None = None,
) -> str:
    """The problem's description: the layer, its x (`x_is`: what x is, origin.x_origin), and
    whose weights they are (a KV-shared layer's W_K, W_V and key norm are an earlier layer's,
    as its source is; Zamba's shared block's are several layers', said in the family's notes)."""
    arch = family.names[model.config.model_type]
    earlier = family.shares(model, layer)
    notes = family.notes(model, layer)
    key = "extract.description" if earlier is None else "extract.description_kv_shared"
    block = any(note.key in BLOCK_NOTES for note in notes)  # Zamba's shared block
    key = "extract.description_block" if block and earlier is None else key
    linear = _linear(family, model, layer)  # a Gated DeltaNet or KDA layer: not self-attention
    if linear is not None:
        key = linear
    said = Msg(key, layer=layer, model=shown, arch=arch, n=n, dtype=dtype).text(lang)
    if x_is is not None:
        said += " " + Msg(x_is.key, arch=arch, **x_is.params).text(lang)
    if earlier is not None:  # KV sharing: K and V from an earlier layer's input
        said += " " + Msg("extract.kv_shared", earlier=earlier).text(lang)
    for note in notes:
        said += " " + note.text(lang)
    return said


def _linear(family: Any, model: Any, layer: int) -> str | None:
    """The description's key of a linear-attention layer (Gated DeltaNet, gdn.py; Kimi Delta
    Attention, kda.py), None for attention."""
    from qkvcalc.extract import gdn, kda

    try:
        mixer = family.attention(family.stack(model)[layer])
    except Exception:  # a family whose layout says nothing of it: the ordinary description
        return None
    if gdn.is_layer(mixer):
        return "extract.description_linear"
    return "extract.description_kda" if kda.is_layer(mixer) else None


def extract(
    model_or_path: Any,
    layer: int,
    *,
    input_ids: Sequence[int] | None = None,
    text: str | None = None,
    dtype: str = "auto",
    tokenizer: Any = None,
    lang: str = "en",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """See qkvcalc.extract.extract."""
    require_models()
    import torch

    if dtype not in DTYPES:
        raise QkvcalcError("extract.dtype", dtype=dtype)
    model: Any
    if isinstance(model_or_path, (str, os.PathLike)):
        name = str(model_or_path)
        shown = (Path(name).name or name) if Path(name).expanduser().exists() else name
        hub = not Path(name).expanduser().exists()
        with _offline_unless_reachable() if hub else contextlib.nullcontext():
            config = _config(name)
            deepseek_v4.check(config, layer, shown)
            refused.check_config(config, shown)  # BitNet's quantized checkpoints (BitLinear)
            _family(config.model_type, name)
            # what the config tells already, said before a large checkpoint spends minutes
            if (input_ids is None) == (text is None):
                raise QkvcalcError("extract.input_choice")
            stream = dtype == "float64"  # one layer at a time: see stream.py
            count = len(_as_ids(input_ids)) if input_ids is not None else 1
            _check_config(config, shown, dtype, stream, count)
            _check_layer(layer, getattr(config, "num_hidden_layers", None), shown)
            hybrid.check_layer(config, layer, shown)
            refused.check_layer(config, layer, shown)
            if input_ids is not None:
                _check_ids(_as_ids(input_ids), getattr(config, "vocab_size", None), shown)
                _check_length(len(_as_ids(input_ids)), config, config.model_type, shown)
            model, own_tokenizer = load(name, config, dtype, progress, stream)
        tokenizer = tokenizer if tokenizer is not None else own_tokenizer
    elif isinstance(model_or_path, torch.nn.Module) and hasattr(model_or_path, "config"):
        model = model_or_path
        shown = str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        own = next(model.parameters()).dtype
        if dtype != "auto" and _torch_dtype(dtype) != own:
            raise QkvcalcError("extract.dtype_loaded", dtype=dtype, own=str(own).split(".")[-1])
        deepseek_v4.check(model.config, layer, shown)
        refused.check_config(model.config, shown)
        _family(model.config.model_type, shown)
        stream = False  # a model given is run as it is
    else:
        raise QkvcalcError("extract.not_a_model", kind=type(model_or_path).__name__)
    config = model.config
    family = _family(config.model_type, shown)
    with layout(shown, config.model_type):
        stack = family.stack(model)
    _check_layer(layer, len(stack), shown)
    hybrid.check_layer(config, layer, shown)
    refused.check_layer(config, layer, shown)
    layer = int(layer)
    ids = _token_ids(model, shown, input_ids, text, tokenizer)
    _check_length(len(ids), config, config.model_type, shown)
    if stream and text is not None:  # the tokens counted now: the memory their run takes
        _check_stream(config, shown, len(ids))

    if progress:
        progress(Msg("extract.running", model=shown, layer=layer))
    x, keys, out, dtype_name, x_is = _run_layer(model, family, stack, layer, ids, stream, shown)
    _check_finite({"x": x, **keys}, shown, layer)
    said = describe(family, model, layer, shown, len(ids), dtype_name, lang, x_is)
    problem = {
        "name": Msg("extract.name", model=shown, layer=layer).text(lang),
        "description": said,
        "tokens": _tokens(ids, tokenizer),
        "x": x,
        **keys,
    }
    check_problem(problem, out, shown, config.model_type, layer, dtype_name)
    return problem


def check_problem(
    problem: dict[str, Any],
    out: np.ndarray | None,
    model: str,
    model_type: str,
    layer: int,
    dtype: str,
) -> None:
    """The problem refused unless qkvcalc computes the layer's own output `out` from it
    (check.py); `out` None: the attention never called the projection extract reads."""
    from qkvcalc.extract.check import TESTED, transformers_version, verify

    if out is None:
        raise QkvcalcError(
            "extract.no_output",
            model=model,
            model_type=model_type,
            layer=layer,
            version=transformers_version(),
            tested=TESTED,
        )
    verify(problem, out, model=model, model_type=model_type, layer=layer, dtype=dtype)


def _run_layer(
    model: Any,
    family: Family,
    stack: Sequence[Any],
    layer: int,
    ids: list[int],
    stream: bool,
    shown: str,
) -> tuple[np.ndarray, dict[str, Any], np.ndarray | None, str, Msg | None]:
    """x, the family's keys, the output projection's own output, the run's dtype's name and
    what x is (origin.x_origin), from one run up to layer `layer` (its layers in float64 one
    at a time with `stream`)."""
    import torch

    from qkvcalc.extract.stream import float64_layers

    config = model.config
    converting = float64_layers(model, stack, layer) if stream else contextlib.nullcontext()
    try:
        with converting, layout(shown, config.model_type):
            run_dtype = torch.float64 if stream else next(model.parameters()).dtype
            float64 = run_dtype == torch.float64
            x, given, out = capture(model, family, layer, ids, float64)
            block = stack[layer]
            entered = given.pop("block_input", None)
            attention = family.attention(block)
            x_is = None if entered is None else x_origin(block, attention, entered, x, layer)
            allowed = _allowed(given.get("attention_mask"))
            with torch.no_grad():
                keys = family.keys(
                    Layer(
                        model, config, block, family.attention(block), layer, len(ids), allowed,
                        given,
                    )
                )  # fmt: skip
    except MemoryError:
        raise QkvcalcError("extract.out_of_memory", model=shown) from None
    except RuntimeError as err:
        if _out_of_memory(err):
            raise QkvcalcError("extract.out_of_memory", model=shown) from None
        raise
    return x, keys, out, str(run_dtype).split(".")[-1], x_is
