"""BM25 over one namespace, with the ``bm25s`` library (English stop words, Snowball stemmer).

The stop-word list is bm25s's ``STOPWORDS_EN_PLUS`` (179 words, wh-words and pronouns
included): queries here are questions, and "what"/"my" would otherwise match chit-chat.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class BM25Index:
    """A BM25 index over a fixed list of texts; ``scores`` gives every text's score for a query."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        import bm25s
        import Stemmer
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        self._bm25s = bm25s
        self._stopwords = list(STOPWORDS_EN_PLUS)
        self._stemmer = Stemmer.Stemmer("english")
        self.size = len(texts)
        self._retriever = bm25s.BM25(k1=k1, b=b)
        if texts:
            tokens = bm25s.tokenize(
                list(texts), stopwords=self._stopwords, stemmer=self._stemmer, show_progress=False
            )
            self._retriever.index(tokens, show_progress=False)

    def tokenize(self, text: str) -> list[str]:
        """The index's tokens for ``text`` (lower-cased, stop words out, stemmed)."""
        out = self._bm25s.tokenize(
            [text],
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        return list(out[0])

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed text for ``query`` (zeros when no query term is known)."""
        if self.size == 0:
            return np.zeros(0, dtype=np.float64)
        vocab = self._retriever.vocab_dict
        tokens = [t for t in self.tokenize(query) if t in vocab]
        if not tokens:
            return np.zeros(self.size, dtype=np.float64)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float64)
