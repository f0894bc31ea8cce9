"""The ``memsieve`` command: parse, call the library, print. User mistakes exit 2 with one line."""

from __future__ import annotations

import sys

import click
import typer

from memsieve.errors import MemsieveError

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="memsieve: long-term memory for conversational agents.",
    no_args_is_help=True,
)

# Importing the command modules registers their commands on ``app``.
from memsieve.cli import demo, eval, ingest, search, train, train_validity  # noqa: E402,F401


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI and turn every user error into a message and exit code 2."""
    try:
        typer.main.get_command(app).main(args=argv, prog_name="memsieve", standalone_mode=False)
    except MemsieveError as err:
        click.echo(f"error: {err}", err=True)
        return 2
    except click.exceptions.Exit as err:
        return err.exit_code
    except click.ClickException as err:
        err.show()
        return 2 if isinstance(err, click.UsageError) else err.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    return 0


def entry() -> None:
    sys.exit(main())
