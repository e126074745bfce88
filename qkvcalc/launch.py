"""The `qkvcalc` console script and `python -m qkvcalc`: the command line, loaded inside a guard.

Loading typer, rich and the commands takes a moment; Ctrl-C in that moment ends the way it
does later (one line, exit 130) instead of with Python's traceback. Once loaded,
qkvcalc.cli.main handles Ctrl-C and a closed pipe itself.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # as qkvcalc.cli_common, which this module must not load first


def main() -> None:
    try:
        from qkvcalc.cli import main as cli_main
    except KeyboardInterrupt:
        from qkvcalc.i18n import resolve_lang, translate

        sys.stderr.write(translate("cli.interrupted", resolve_lang()) + "\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()
