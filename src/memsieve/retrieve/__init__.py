"""First-stage retrieval: BM25, dense exact search, score fusion, session-level late interaction."""

from memsieve.retrieve.fusion import fuse, minmax, rrf
from memsieve.retrieve.late import session_scores
from memsieve.retrieve.retriever import DEFAULT_ALPHA, Method, Retriever

__all__ = ["DEFAULT_ALPHA", "Method", "Retriever", "fuse", "minmax", "rrf", "session_scores"]
