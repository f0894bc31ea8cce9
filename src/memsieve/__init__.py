"""memsieve: long-term memory for conversational agents."""

__version__ = "0.1.0"
