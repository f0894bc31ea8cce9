"""Rerankers (pipeline step 3): the small learned v1 over the first-stage pool."""

from memsieve.rerank.features import FEATURES, NamespaceFeatures, pool_features
from memsieve.rerank.learned import (
    PROTECTED,
    LearnedReranker,
    V1Model,
    default_checkpoint,
    load_checkpoint,
    save_checkpoint,
)

__all__ = [
    "FEATURES",
    "PROTECTED",
    "LearnedReranker",
    "NamespaceFeatures",
    "V1Model",
    "default_checkpoint",
    "load_checkpoint",
    "pool_features",
    "save_checkpoint",
]
