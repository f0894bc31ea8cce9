"""BM25: the analyzer, scoring from a namespace's postings, and a static index (``bm25s``).

The live index keeps its postings in the store (``Store.postings``), updated in the write
transaction, with per-namespace statistics; ``score_postings`` turns them into scores with the
same formula as ``bm25s``'s default ("lucene" IDF and term saturation), which cannot take
incremental updates. ``BM25Index`` (``bm25s``) indexes a fixed list of texts: the eval harness's
session documents, and the reference the live scores are tested against.

Stop words are bm25s's ``STOPWORDS_EN_PLUS`` (179 words, wh-words and pronouns included):
queries here are questions, and "what"/"my" would otherwise match chit-chat.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memsieve.store.base import TermStats

K1, B = 1.2, 0.75
_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern


class Analyzer:
    """Lower-cased words of two or more characters, stop words out, Snowball-stemmed.

    Gives the same tokens as ``bm25s.tokenize`` with the same stop words and stemmer (tested),
    but stems a whole batch in one call.
    """

    def __init__(self) -> None:
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self.stopwords = frozenset(STOPWORDS_EN_PLUS)
        self._stemmer = Stemmer.Stemmer("english")

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        words = [[w for w in _WORD.findall(t.lower()) if w not in self.stopwords] for t in texts]
        flat = self._stemmer.stemWords([w for ws in words for w in ws])
        out, i = [], 0
        for ws in words:
            out.append(flat[i : i + len(ws)])
            i += len(ws)
        return out


def score_postings(
    stats: TermStats, query_terms: Sequence[str], seqs: np.ndarray, *, k1: float = K1,
    b: float = B,
) -> np.ndarray:
    """BM25 score of each memory in ``seqs`` (ascending) for ``query_terms`` (repeats count,
    as in bm25s). Every posting's seq must be in ``seqs``."""
    out = np.zeros(len(seqs), dtype=np.float64)
    if stats.n_docs == 0 or len(seqs) == 0:
        return out
    avgdl = stats.n_terms / stats.n_docs
    for term in query_terms:
        p = stats.postings.get(term)
        if p is None or len(p.seqs) == 0:
            continue
        df = len(p.seqs)
        idf = np.log1p((stats.n_docs - df + 0.5) / (df + 0.5))
        tfc = p.tf / (p.tf + k1 * (1.0 - b + b * p.dl / max(avgdl, 1e-12)))
        pos = np.minimum(np.searchsorted(seqs, p.seqs), len(seqs) - 1)
        ok = seqs[pos] == p.seqs  # always, when both come from one snapshot
        out[pos[ok]] += (idf * tfc)[ok]
    return out


class BM25Index:
    """A BM25 index over a fixed list of texts; ``scores`` gives every text's score for a query."""

    def __init__(self, texts: Sequence[str], *, k1: float = K1, b: float = B) -> None:
        import bm25s

        self.analyzer = Analyzer()
        self.size = len(texts)
        self._retriever = bm25s.BM25(k1=k1, b=b)
        if texts:
            tokens = bm25s.tokenize(
                list(texts), stopwords=list(self.analyzer.stopwords),
                stemmer=self.analyzer._stemmer, show_progress=False,
            )
            self._retriever.index(tokens, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed text for ``query`` (zeros when no query term is known)."""
        if self.size == 0:
            return np.zeros(0, dtype=np.float64)
        vocab = self._retriever.vocab_dict
        tokens = [t for t in self.analyzer([query])[0] if t in vocab]
        if not tokens:
            return np.zeros(self.size, dtype=np.float64)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float64)
