"""The `qkvcalc` console script and `python -m qkvcalc`: the command line, loaded inside a guard.

Loading typer, rich and the commands takes a moment; Ctrl-C in that moment ends the way it
does later (one line, exit 130) instead of with Python's traceback. Once loaded,
qkvcalc.cli.main handles Ctrl-C and a closed pipe itself.

The help text is written when the commands are defined, before typer reads any option, so a
`--lang` on the command line is looked for here first: `qkvcalc explain --lang ko --help`
answers in Korean.
"""

from __future__ import annotations

import os
import sys

from qkvcalc.i18n import LANGS

EXIT_INTERRUPTED = 130  # as qkvcalc.cli.common, which this module must not load first


def lang_option(args: list[str]) -> str | None:
    """The value of a valid `--lang en|ko` (or `--lang=ko`) among the arguments, if any."""
    for k, arg in enumerate(args):
        if arg == "--":
            break
        value = args[k + 1] if arg == "--lang" and k + 1 < len(args) else None
        if arg.startswith("--lang="):
            value = arg.partition("=")[2]
        if value in LANGS:
            return value
    return None


def main() -> None:
    lang = lang_option(sys.argv[1:])
    if lang:  # the help text, built at import, reads the language from the environment
        os.environ["QKVCALC_LANG"] = lang
    try:
        from qkvcalc.cli import main as cli_main
    except KeyboardInterrupt:
        from qkvcalc.i18n import resolve_lang, translate

        sys.stderr.write(translate("cli.interrupted", resolve_lang()) + "\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()
