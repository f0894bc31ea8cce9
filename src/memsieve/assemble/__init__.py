"""Context assembly: atomic units at write time, LOOKUP / COMPOSE / REPLAY under a budget."""

from memsieve.assemble.context import AccessMode, Assembler, AutoRule, Context, ContextItem
from memsieve.assemble.units import count_tokens, split_units

__all__ = ["AccessMode", "Assembler", "AutoRule", "Context", "ContextItem", "count_tokens",
           "split_units"]
