"""`qkvcalc extract MODEL --layer L (--ids "…" | --text "…")`: one layer of a Hugging Face
model as a problem in the input format, on standard output (or --output FILE).

Parses options, calls qkvcalc.extract with a rich status on stderr while the model loads and
runs, and writes the JSON; nothing else. Without torch and transformers it says what to
install. Errors: one message on stderr, exit 2, nothing on stdout.
"""

# Annotations evaluated at import, as in qkvcalc.cli.explain (typer reads them every run).
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from qkvcalc.cli.common import (
    LangOption,
    NoColorOption,
    check_writable,
    console,
    fail,
    help_text,
    language,
    write_output,
)
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


def extract(
    model: Annotated[str, typer.Argument(help=help_text("help.extract.model"), show_default=False)],
    layer: Annotated[int, typer.Option(help=help_text("help.extract.layer"), show_default=False)],
    ids: Annotated[
        str | None, typer.Option("--ids", help=help_text("help.extract.ids"), show_default=False)
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", help=help_text("help.extract.text"), show_default=False)
    ] = None,
    dtype: Annotated[Dtype, typer.Option(help=help_text("help.extract.dtype"))] = Dtype.auto,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help=help_text("help.extract.output"), show_default=False),
    ] = None,
    lang: LangOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Take one layer's attention out of a Hugging Face model as a problem."""
    lang_code = language(lang)
    try:
        if (ids is None) == (text is None):
            raise QkvcalcError("extract.input_choice")
        input_ids = _ids(ids) if ids is not None else None
        if output is not None:
            check_writable(output)
        from qkvcalc.extract import extract as run
        from qkvcalc.extract import write_problem
        from qkvcalc.extract.runner import require_models

        # the status is over before a byte is written: while it shows, rich sends whatever
        # goes to sys.stdout to its own console (stderr), which would take the problem along
        loading = translate("extract.loading", lang_code, model=model)
        with console(no_color, stderr=True).status(loading) as status:
            _quiet_transformers()
            require_models()  # importing torch and transformers takes seconds: under the status
            _quiet_transformers()
            problem = run(
                model,
                layer,
                input_ids=input_ids,
                text=text,
                dtype=dtype.value,
                lang=lang_code,
                progress=lambda msg: status.update(msg.text(lang_code)),
            )
        if output is None:
            write_problem(problem, sys.stdout)
            sys.stdout.flush()
        else:
            _write_file(problem, output)
    except QkvcalcError as err:
        fail(err, lang_code)


def _write_file(problem: dict, path: Path) -> None:
    """The whole file or nothing, through the one writer every command uses (write_output: a
    random temporary name created exclusively, renamed into place; a symlink written through,
    a FIFO or a device written to), streamed: a real layer's JSON is hundreds of megabytes, too
    much to hold as one string first."""
    from qkvcalc.extract import write_problem

    write_output(lambda stream: write_problem(problem, stream), path)
