"""`qkvcalc studio`: the problem as boxes to edit, every stage as a table that follows (a Textual
app, qkvcalc.studio), in this terminal or, with --serve, in a browser (textual-serve).

Reads the problem as `explain` reads it (a file, a preset, --random), checks that it computes,
and starts the app; textual is imported only here and in qkvcalc.studio. Errors: a
QkvcalcError becomes one message on stderr and exit 2, nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run.
import os
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import typer

from qkvcalc.cli.common import fail, language
from qkvcalc.cli.options import DISPLAY, HIDDEN, SOURCE, Group, Opt, command
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate

LOCAL = "127.0.0.1"

SERVE = Group(
    "serve",
    (
        Opt("save", Path, Path("qkvcalc-studio.json"), ("--save",), HIDDEN),
        Opt("serve", bool, False, ("--serve",)),
        Opt("host", str, LOCAL, ("--host",), HIDDEN),
        Opt("port", int, 8000, ("--port",), {"min": 1, "max": 65535, **HIDDEN}),
    ),
)


@command("studio", SOURCE, SERVE, DISPLAY)
def studio(source: SimpleNamespace, serve: SimpleNamespace, display: SimpleNamespace) -> None:
    """Edit any number of a problem and watch every stage follow."""
    lang = language(display.lang)
    try:
        doc = _problem(source, lang)
        if serve.serve:
            _serve(source, serve, lang, doc)
            return
        from qkvcalc.studio import Studio

        app = Studio(doc, lang, save_to=serve.save)  # a problem that does not compute fails here
        _terminal()
    except QkvcalcError as err:
        fail(err, lang)
    if display.no_color:
        os.environ["NO_COLOR"] = "1"  # what Textual reads
    app.run()


def _terminal(tty_path: str = "/dev/tty") -> None:
    """Textual reads the keys on standard input and draws on standard error. Where either is
    not a terminal (`echo | qkvcalc studio --preset doc`, a script's < /dev/null, 2> log), the
    controlling terminal takes its place, where --step reads its keys too: without it the app
    would draw into the pipe and wait for keys that never come. No terminal at all: one
    message. Under --serve (textual-serve's TEXTUAL_DRIVER) the browser's pipes are the
    terminal, and nothing changes."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return
    wrong = [fd for fd in (0, 2) if not os.isatty(fd)]
    if not wrong:
        return
    try:
        tty = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise QkvcalcError("studio.no_terminal") from None
    try:
        if not os.isatty(tty):
            raise QkvcalcError("studio.no_terminal")
        for fd in wrong:
            os.dup2(tty, fd)
    finally:
        os.close(tty)


def _problem(source: SimpleNamespace, lang: str) -> dict[str, Any]:
    """The problem's document: a file, a preset or random numbers, never standard input (the
    studio reads its keys there)."""
    from qkvcalc.input.sources import gather

    if source.source == "-":
        raise QkvcalcError("studio.stdin")
    if source.random or source.seed is not None or source.size is not None:
        from qkvcalc.quiz.problems import new_seed, parse_size, random_problem

        if not source.random:
            raise QkvcalcError("quiz.seed_without_random")
        named = [n for n, on in (("SOURCE", source.source), ("--preset", source.preset)) if on]
        if named:
            raise QkvcalcError("quiz.random_with_source", given=", ".join(named))
        n, d = parse_size(source.size or "3,2")
        source.seed = new_seed() if source.seed is None else source.seed
        typer.echo(
            translate("explain.random_seed", lang, seed=source.seed, size=f"{n},{d}"), err=True
        )
        return random_problem(source.seed, n, d)
    if source.source is None and source.preset is None:
        raise QkvcalcError("studio.stdin")
    from qkvcalc.input.problem import Problem

    return gather(
        source.source, source.preset, {}, sys.stdin.buffer, True, validate=Problem.from_mapping
    )


def _serve(source: SimpleNamespace, serve: SimpleNamespace, lang: str, doc: dict) -> None:
    """The studio in a browser: textual-serve starts `qkvcalc studio` with the same problem for
    every page that opens it. It listens on 127.0.0.1 unless --host says otherwise, and then
    says who can reach it."""
    from qkvcalc.studio.session import Session

    Session(doc, lang)  # the problem computes, or the message is said here, not in the browser
    try:
        from textual_serve.server import Server
    except ImportError:
        raise QkvcalcError("studio.serve_missing") from None
    args = [sys.executable, "-m", "qkvcalc", "studio", "--lang", lang]
    if source.preset is not None:
        args += ["--preset", source.preset]
    elif source.random:
        args += ["--random", "--seed", str(source.seed), "--size", source.size or "3,2"]
    else:
        args.append(str(Path(source.source).resolve()))
    args += ["--save", str(serve.save.resolve())]
    everywhere = serve.host in ("0.0.0.0", "::", "")
    # the address a browser elsewhere uses (the page's websocket connects back to it)
    address = _own_address() if everywhere else serve.host
    typer.echo(translate("studio.serving", lang, host=address, port=serve.port))
    if _loopback(serve.host):
        typer.echo(translate("studio.serving_local", lang, host=serve.host))
    elif everywhere:
        typer.echo(translate("studio.serving_open", lang, host=serve.host, port=serve.port))
    else:
        typer.echo(translate("studio.serving_host", lang, host=serve.host, port=serve.port))
    sys.stdout.flush()
    public = f"http://{address}:{serve.port}"
    command = shlex.join(args)
    Server(
        command, host=serve.host, port=serve.port, title="qkvcalc studio", public_url=public
    ).serve()


def _loopback(host: str) -> bool:
    """Whether only this machine reaches `host`: localhost, 127.0.0.0/8, ::1."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: whoever can resolve it may reach it
        return False


def _own_address() -> str:
    """This machine's address on its network (the one its default route leaves from): a UDP
    socket is pointed at a private address, which sends nothing."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return str(probe.getsockname()[0])
        except OSError:
            return LOCAL
