"""The ``memsieve`` command: parse, call the library, print. User mistakes exit 2 with one line."""

from __future__ import annotations

import signal
import sys

import click
import typer

from memsieve.cli.options import printable
from memsieve.errors import MemsieveError

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="memsieve: long-term memory for conversational agents.",
    no_args_is_help=True,
)

# Importing the command modules registers their commands on ``app``.
from memsieve.cli import (  # noqa: E402,F401
    audit,
    context,
    demo,
    eval,
    forget,
    ingest,
    migrate,
    search,
    serve,
    train,
    train_validity,
)


def _classes(name: str) -> tuple[type, ...]:
    """Exception class ``name`` from click and from the copies newer typer releases vendor
    (``typer._click.exceptions``, ``typer.exceptions``): a user mistake must be caught
    whichever of them raised it."""
    import importlib

    found = []
    for module in ("click.exceptions", "typer._click.exceptions", "typer.exceptions"):
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if cls is not None and cls not in found:
            found.append(cls)
    return tuple(found)


_EXIT, _ABORT = _classes("Exit"), _classes("Abort")
_USAGE, _CLICK = _classes("UsageError"), _classes("ClickException")


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and turn every user error into a message and exit code 2."""
    try:
        rv = typer.main.get_command(app).main(args=argv, prog_name="memsieve",
                                              standalone_mode=False)
    except MemsieveError as err:
        click.echo(f"error: {printable(str(err))}", err=True)
        return 2
    except _EXIT as err:
        return err.exit_code
    except _USAGE as err:  # one line, like every other user mistake
        ctx = getattr(err, "ctx", None)
        where = ctx.command_path if ctx is not None else "memsieve"
        click.echo(f"error: {printable(err.format_message())} (try '{where} --help')", err=True)
        return 2
    except _CLICK as err:
        err.show()
        return err.exit_code
    except (KeyboardInterrupt, *_ABORT):
        return _interrupted()
    except BrokenPipeError:  # `memsieve search ... | head`
        return 0
    # newer typer turns Ctrl-C into an exit code it returns (130) instead of raising
    if isinstance(rv, int) and not isinstance(rv, bool) and rv:
        return _interrupted() if rv == 130 else rv
    return 0


def _interrupted() -> int:
    """Say so and exit 130; a second Ctrl-C (or one still pending from C code) during
    shutdown is ignored, so the process never dies of the signal instead."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    click.echo("interrupted", err=True)
    return 130


def entry() -> None:
    sys.exit(main())
