"""`qkvcalc extract MODEL --layer L (--ids "…" | --text "…")`: one layer of a Hugging Face
model as a problem in the input format, on standard output (or --output FILE; FILE.npz gets
the problem as numpy arrays).

Parses options, calls qkvcalc.extract with a rich status on stderr while the model loads and
runs, and writes the JSON; nothing else. Without torch and transformers it says what to
install. Errors: one message on stderr, exit 2, nothing on stdout.
"""

# Annotations evaluated at import, as in qkvcalc.cli.explain (typer reads them every run).
import inspect
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from qkvcalc.cli.common import check_writable, console, fail, language, write_output
from qkvcalc.cli.options import DISPLAY, HIDDEN, Group, Opt, command
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate


class Dtype(str, Enum):
    auto = "auto"
    float64 = "float64"
    float32 = "float32"
    bfloat16 = "bfloat16"


MAX_ID_DIGITS = 12  # a vocabulary of a trillion tokens is far beyond any model's


def _ids(text: str) -> list[int]:
    """ASCII digits only ('²' is a digit to str.isdigit, not to int), and no id longer than a
    vocabulary could be (int() refuses 4,300 digits and more, with a traceback)."""
    parts = text.replace(",", " ").split()
    if not all(part.isascii() and part.isdigit() for part in parts):
        raise QkvcalcError("extract.ids_syntax", text=text[:200])
    if not parts:
        raise QkvcalcError("extract.ids_empty")
    longest = max(len(part.lstrip("0")) for part in parts)
    if longest > MAX_ID_DIGITS:
        raise QkvcalcError("extract.id_too_long", digits=longest)
    return [int(part) for part in parts]


def _quiet_transformers() -> None:
    """transformers' warnings, load report and progress bars would mix with the one message on
    stderr: quiet before it is imported (its environment variables), and after (its logger)."""
    if "transformers" in sys.modules:
        from transformers.utils import logging

        logging.set_verbosity_error()
        logging.disable_progress_bar()
        from huggingface_hub.utils import logging as hub_logging

        hub_logging.set_verbosity_error()  # its "Retrying in 1s" warnings
        return
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings

    warnings.filterwarnings("ignore", module="transformers")
    warnings.filterwarnings("ignore", module="torch")


# ---- the options extract and heads share (qkvcalc.cli.options) --------------------------------

REQUIRED = inspect.Parameter.empty  # an option or argument without a default: it must be given
MODEL = Group("model", (Opt("model", str, REQUIRED, settings=HIDDEN, argument=True),))
# the tokens the model reads: ids, or a text for the folder's tokenizer (exactly one of them)
GIVEN = Group(
    "given",
    (
        Opt("ids", str | None, None, ("--ids",), HIDDEN),
        Opt("text", str | None, None, ("--text",), HIDDEN),
    ),
)
# how the model runs, and where the result goes
RUN = Group(
    "run",
    (
        Opt("dtype", Dtype, Dtype.auto),
        Opt("output", Path | None, None, ("--output", "-o"), HIDDEN),
    ),
)
LAYER = Group("at", (Opt("layer", int, REQUIRED, settings=HIDDEN),))


@contextmanager
def loading(model: str, lang: str, no_color: bool, command: str) -> Iterator[Any]:
    """A status on stderr while torch and transformers load and the model runs. It is over
    before a byte is written: while it shows, rich sends whatever goes to sys.stdout to its own
    console (stderr), which would take the output along."""
    from qkvcalc.extract.runner import check_hub, check_name, require_models

    check_name(model)  # a typo'd folder is said before torch loads, without the network
    check_hub(model)  # … and a hub name that can be had neither from the cache nor the hub
    text = translate("extract.loading", lang, model=model)
    with console(no_color, stderr=True).status(text) as status:
        _quiet_transformers()
        require_models(command)  # importing torch and transformers takes seconds: under it
        _quiet_transformers()
        yield lambda msg: status.update(msg.text(lang))


def tokens(given: SimpleNamespace) -> list[int] | None:
    """--ids as numbers (or None for --text); exactly one of the two is given."""
    if (given.ids is None) == (given.text is None):
        raise QkvcalcError("extract.input_choice")
    return _ids(given.ids) if given.ids is not None else None


@command("extract", MODEL, LAYER, GIVEN, RUN, DISPLAY)
def extract(
    model: SimpleNamespace,
    at: SimpleNamespace,
    given: SimpleNamespace,
    run: SimpleNamespace,
    display: SimpleNamespace,
) -> None:
    """Take one layer's attention out of a Hugging Face model as a problem."""
    lang_code = language(display.lang)
    try:
        input_ids = tokens(given)
        if run.output is not None:
            check_writable(run.output)
        from qkvcalc.extract import extract as extracted
        from qkvcalc.extract import write_problem

        with loading(model.model, lang_code, display.no_color, "extract") as progress:
            problem = extracted(
                model.model,
                at.layer,
                input_ids=input_ids,
                text=given.text,
                dtype=run.dtype.value,
                lang=lang_code,
                progress=progress,
            )
        if run.output is None:
            write_problem(problem, sys.stdout)
            sys.stdout.flush()
        else:
            write_file(problem, run.output)
    except QkvcalcError as err:
        fail(err, lang_code)


def write_file(problem: dict, path: Path) -> None:
    """The whole file or nothing, through the one writer every command uses (write_output: a
    random temporary name created exclusively, renamed into place; a symlink written through,
    a FIFO or a device written to), streamed: a real layer's JSON is hundreds of megabytes, too
    much to hold as one string first. A name ending in .npz gets the problem as arrays."""
    from qkvcalc.extract import write_arrays, write_problem

    if path.suffix.lower() == ".npz":
        write_output(lambda stream: write_arrays(problem, stream), path, binary=True)
    else:
        write_output(lambda stream: write_problem(problem, stream), path)
