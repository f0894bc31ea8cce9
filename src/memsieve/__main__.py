from memsieve.cli import entry

entry()
