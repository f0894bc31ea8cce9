"""Train the validity verifier on generator data; choose its thresholds on a validation split.

Recipe (validity-context-layer §6.1-§6.2, §6.4):

- data: ``generate(n_examples, seed, weights=training_weights())`` (hard negatives ×4, rare
  positives ×3); validation ``generate(n_val, seed + VAL_OFFSET)`` and test
  ``generate(n_test, seed + TEST_OFFSET)`` in the natural mix, so neither shares a seed with
  any training run of a nearby seed. Nothing else is read: no evaluation-set labels.
- model: the packaged MiniLM, the top ``n_trainable_layers`` layers + the segment head trained,
  the rest frozen. The frozen layers' output is computed once per training example and cached
  (fp16), so each epoch runs only the trained layers: several cheap epochs instead of one
  expensive one (the budget is a few minutes of two shared CPU cores).
- loss: cross-entropy weighted by inverse class frequency (``w_c = N / (2 N_c)``), plus
  ``aux_weight`` × cross-entropy of an auxiliary stratum classifier on the same pooled
  features (training only, not saved). Naming the hard case (other person, other attribute,
  repeat, ...) gives the strata distinct gradients (§6.2); it lifted validation accuracy from
  0.77 to 0.87 at equal compute in a pilot.
- optimiser: AdamW, linear warm-up over the first 6% of steps then linear decay; the head at
  ``head_lr``, the encoder layers at ``lr``.
- determinism: ``torch.manual_seed(seed)``, a seeded data order, and
  ``torch.use_deterministic_algorithms(True)`` for the run (restored afterwards).
- thresholds, on validation scores of the fp16-rounded weights that are saved (fp32
  inference; an int8-quantised copy cost 4.4 points of validation accuracy, so none is used):
  ``context_threshold`` is the smallest ``t`` whose precision is ≥ 0.90 and
  ``demote_threshold`` the smallest with precision ≥ 0.95 (the highest recall at those
  precisions; see ``choose_thresholds`` for why not max F1), never below the context
  threshold; 1.0 if no threshold reaches the demote precision. ``min_similarity`` (the
  stage's source gate) is the largest cosine between the source's and the target's MiniLM
  embeddings that keeps 98% of the validation positives (``similarity_floor``).
- report: accuracy / precision / recall / F1 overall and accuracy per stratum and per group
  (positive recall, hard- and easy-negative specificity) on validation and test, at both
  thresholds; wall time.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memsieve.errors import ConfigError
from memsieve.pairmodel import N_BASE_LAYERS, length_batches, trained_prefixes
from memsieve.validity.generator import (
    BASE_WEIGHTS,
    Example,
    generate,
    group_of,
    training_weights,
)
from memsieve.validity.verifier import Verifier, format_pair

logger = logging.getLogger(__name__)

VAL_OFFSET = 1_000_003
TEST_OFFSET = 2_000_003
CONTEXT_PRECISION = 0.90
DEMOTE_PRECISION = 0.95
SIMILARITY_KEEP = 0.98  # the source-target similarity floor keeps this share of positives
EDGE_KEEP = 0.95  # the write-time (query-blind) edge threshold keeps this share of positives
MEMORA_VAL_PERSONA = "financial_analyst"  # its Memora examples choose thresholds, never train


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything a training run depends on besides the code (saved in the checkpoint)."""

    seed: int = 7
    n_examples: int = 8000
    epochs: int = 4
    n_val: int = 1000
    n_test: int = 1000
    batch_size: int = 32
    lr: float = 5e-4
    head_lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.06
    aux_weight: float = 1.0
    n_trainable_layers: int = 1
    max_length: int = 128
    threads: int | None = None
    memora: int = 0  # natural Memora examples mixed in (half positives; 0: generator only)
    memora_dir: str | None = None  # the Memora data folder (needed when ``memora`` > 0)
    memora_edges: int = 0  # hard negatives mined from write-time edges (needs ``memora`` > 0)


# ============================================================================== METRICS


def binary_metrics(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """Accuracy, precision, recall, F1 and specificity of ``score >= threshold``."""
    pred = scores >= threshold
    y = labels.astype(bool)
    tp, fp = int(np.sum(pred & y)), int(np.sum(pred & ~y))
    fn, tn = int(np.sum(~pred & y)), int(np.sum(~pred & ~y))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"n": int(len(y)), "accuracy": (tp + tn) / max(len(y), 1), "precision": precision,
            "recall": recall, "f1": f1, "specificity": tn / (tn + fp) if tn + fp else 1.0}


def choose_thresholds(
    scores: np.ndarray, labels: np.ndarray, *,
    context_precision: float | None = CONTEXT_PRECISION,
    demote_precision: float = DEMOTE_PRECISION,
) -> dict[str, float]:
    """``context_threshold``: the smallest t whose precision is ≥ ``context_precision`` (the
    highest recall at that precision; max F1 when ``None`` or unreachable);
    ``demote_threshold``: the same at ``demote_precision``, never below the context
    threshold, 1.0 (never demote) when unreachable.

    Why precision and not F1 for the flag: the validation mix is ~40% positives, real
    conversations a few percent (validity-context-layer §12: ~3% on LoCoMo), so a max-F1
    threshold puts a wrong "possibly outdated" note on many current memories.
    Candidates are the observed scores; the rule is ``score >= t``.

    Example:
        >>> s, y = np.array([0.1, 0.4, 0.6, 0.9]), np.array([0, 1, 0, 1])
        >>> choose_thresholds(s, y, context_precision=None)
        {'context_threshold': 0.4, 'demote_threshold': 0.9}
        >>> choose_thresholds(s, y, context_precision=0.6)
        {'context_threshold': 0.4, 'demote_threshold': 0.9}
    """
    scores, labels = np.asarray(scores, float), np.asarray(labels, int)
    if scores.shape != labels.shape or not len(scores) or labels.sum() == 0:
        raise ConfigError("threshold selection needs matching scores and labels with positives")
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    tp = np.cumsum(y)
    fp = np.cumsum(1 - y)
    # the prediction set of threshold s[i] is every index j with s[j] >= s[i]: the last
    # occurrence of each tied value closes its group
    last = np.r_[s[1:] != s[:-1], True]
    tp, fp, cand = tp[last], fp[last], s[last]
    prec = tp / (tp + fp)
    rec = tp / labels.sum()
    f1 = np.where(prec + rec > 0, 2 * prec * rec / np.maximum(prec + rec, 1e-12), 0.0)

    def at_precision(p: float) -> float | None:  # cand is descending: max index = min t
        ok = np.nonzero(prec >= p)[0]
        return float(cand[ok.max()]) if len(ok) else None

    context = at_precision(context_precision) if context_precision is not None else None
    if context is None:
        context = float(cand[int(np.argmax(f1))])
    demote = at_precision(demote_precision)
    return {"context_threshold": context,
            "demote_threshold": max(demote if demote is not None else 1.0, context)}


def similarity_floor(examples: Sequence[Example], encoder: Any, *,
                     keep: float = SIMILARITY_KEEP) -> dict[str, float]:
    """The stage's ``min_similarity``: the largest cosine floor between the source's and the
    target's embeddings that keeps ``keep`` of the positive ``examples`` (validation data),
    and the share of negatives it gates out (they need no verifier pass).

    Example:
        >>> from memsieve.embed import HashingEncoder
        >>> ex = generate(200, seed=1)
        >>> 0.0 <= similarity_floor(ex, HashingEncoder())["negatives_gated"] <= 1.0
        True
    """
    def sims(items: Sequence[Example]) -> np.ndarray:
        a = encoder.encode([e.source for e in items])  # rows are L2-normalised
        b = encoder.encode([e.target for e in items])
        return (a * b).sum(axis=1)

    pos = [e for e in examples if e.label]
    neg = [e for e in examples if not e.label]
    if not pos:
        raise ConfigError("the similarity floor needs positive examples")
    floor = float(np.quantile(sims(pos), 1.0 - keep, method="inverted_cdf"))
    gated = float(np.mean(sims(neg) < floor)) if neg else 0.0
    return {"min_similarity": floor, "negatives_gated": gated}


def edge_threshold(verifier: Verifier, examples: Sequence[Example], *,
                   keep: float = EDGE_KEEP) -> float:
    """The stage's ``edge_threshold``: the largest query-blind score (``edges.blind_pairs``:
    the target stands in for the query) that keeps ``keep`` of the positive ``examples``
    (validation data). Write-time edges below it are not judged at query time."""
    from memsieve.validity.edges import blind_pairs

    pos = [e for e in examples if e.label]
    if not pos:
        raise ConfigError("the edge threshold needs positive examples")
    scores = verifier.score(blind_pairs([(e.source, e.target) for e in pos]))
    return float(np.quantile(scores, 1.0 - keep, method="inverted_cdf"))


def calibrate_edges(path: str | Any) -> float:
    """Add ``edge_threshold`` (on the checkpoint's own validation data) to a trained
    verifier's thresholds, in place: the same tensors, one more number in its config."""
    verifier = Verifier.load(path)
    seed = int(verifier.config.get("train", {}).get("seed", TrainConfig.seed))
    n_val = int(verifier.config.get("train", {}).get("n_val", TrainConfig.n_val))
    t = edge_threshold(verifier, generate(n_val, seed + VAL_OFFSET))
    thresholds = {**verifier.thresholds, "edge_threshold": t}
    verifier.save(path, config={"thresholds": thresholds})
    return t


def split_report(
    examples: Sequence[Example], scores: np.ndarray, thresholds: dict[str, float]
) -> dict[str, Any]:
    """Overall and per-stratum / per-group / per-attribute figures at both thresholds."""
    labels = np.array([e.label for e in examples])
    out: dict[str, Any] = {}
    for name, t in (("context", thresholds["context_threshold"]),
                    ("demote", thresholds["demote_threshold"])):
        correct = (scores >= t) == labels.astype(bool)

        def acc(mask: np.ndarray, correct: np.ndarray = correct) -> dict[str, float]:
            return {"n": int(mask.sum()), "accuracy": float(correct[mask].mean())
                    if mask.any() else float("nan")}

        strata = sorted({e.stratum for e in examples})
        groups = ("positive", "hard", "easy")
        attrs = sorted({e.attribute for e in examples})
        out[name] = {
            "threshold": t,
            "overall": binary_metrics(scores, labels, t),
            "per_group": {g: acc(np.array([group_of(e.stratum) == g for e in examples]))
                          for g in groups},
            "per_stratum": {s: acc(np.array([e.stratum == s for e in examples]))
                            for s in strata},
            "per_attribute": {a: acc(np.array([e.attribute == a for e in examples]))
                              for a in attrs},
        }
    return out


# ============================================================================== TRAINING


def train_verifier(
    seed: int,
    *,
    n_examples: int,
    epochs: int,
    out: str | Path | None,
    progress: bool = True,
    **overrides: Any,
) -> dict[str, Any]:
    """Train a verifier from ``seed`` and write it to ``out``; return the report.

    Args:
        seed: the only source of randomness (data, head initialisation, order, dropout).
        n_examples: training examples drawn from the generator (training mix).
        epochs: passes over them.
        out: checkpoint path (``None``: do not save; the report is still returned).
        progress: show a tqdm bar.
        **overrides: other ``TrainConfig`` fields (``n_val``, ``lr``, ``max_length``, ...).

    Returns:
        A JSON-ready dict: ``config``, ``thresholds``, ``validation`` and ``test`` reports
        (see ``split_report``), ``train_loss`` (mean per epoch), ``wall_s``, ``checkpoint``.
    """
    import torch

    try:
        cfg = TrainConfig(seed=seed, n_examples=n_examples, epochs=epochs, **overrides)
    except TypeError as err:
        raise ConfigError(f"unknown training option: {err}") from None
    if cfg.n_examples < cfg.batch_size or cfg.epochs < 1:
        raise ConfigError("n_examples must be >= batch_size and epochs >= 1")
    t0 = time.perf_counter()
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_threads = torch.get_num_threads()
    try:
        torch.use_deterministic_algorithms(True)
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        verifier, losses, timing = _fit(cfg, progress=progress)
        t_eval = time.perf_counter()
        report = _evaluate(verifier, cfg, progress=progress)
        timing["eval_s"] = round(time.perf_counter() - t_eval, 1)
    finally:
        torch.use_deterministic_algorithms(prev_det)
        torch.set_num_threads(prev_threads)
    report["train_loss"] = losses
    report["timing"] = timing
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    if out is not None:
        summary = {k: report[k] for k in ("thresholds", "wall_s")}
        summary["validation_overall"] = report["validation"]["context"]["overall"]
        summary["test_overall"] = report["test"]["context"]["overall"]
        path = verifier.save(out, config={"thresholds": report["thresholds"],
                                          "similarity_model": report["similarity_gate"]["model"],
                                          "train": dataclasses.asdict(cfg), "summary": summary})
        report["checkpoint"] = {"path": str(path), "bytes": path.stat().st_size}
    return report


def _fit(cfg: TrainConfig, *, progress: bool) -> tuple[Verifier, list[float], dict]:
    import torch

    verifier = Verifier.from_base(n_trainable_layers=cfg.n_trainable_layers,
                                  max_length=cfg.max_length)
    model, tok = verifier.model, verifier.tokenizer
    k = N_BASE_LAYERS - cfg.n_trainable_layers  # index of the first trained layer
    trained = trained_prefixes(cfg.n_trainable_layers)
    head, body = [], []
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith(trained)
        if p.requires_grad:
            (head if name.startswith("head.") else body).append(p)
    examples = generate(cfg.n_examples, cfg.seed, weights=training_weights())
    examples += natural_examples(cfg)
    strata = list(dict.fromkeys([*BASE_WEIGHTS, *sorted({e.stratum for e in examples})]))
    aux = torch.nn.Linear(model.head.proj.in_features, len(strata))
    pairs = [format_pair(e.query, e.source, e.target) for e in examples]
    enc = tok([a for a, _ in pairs], [b for _, b in pairs], truncation="longest_first",
              max_length=cfg.max_length)
    labels = torch.tensor([e.label for e in examples], dtype=torch.long)
    stratum_ids = torch.tensor([strata.index(e.stratum) for e in examples], dtype=torch.long)
    n_pos = int(labels.sum())
    if n_pos in (0, len(labels)):
        raise ConfigError("training data needs both classes")
    weight = torch.tensor([len(labels) / (2 * (len(labels) - n_pos)), len(labels) / (2 * n_pos)])
    rng = random.Random(cfg.seed)
    batches = length_batches([len(ids) for ids in enc["input_ids"]], cfg.batch_size, rng)
    bar = _bar(progress, len(batches), f"cache frozen layers 0-{k - 1}")
    t0 = time.perf_counter()
    cache = []
    model.eval()
    with torch.no_grad():  # not inference_mode: the cached tensors feed autograd later
        for b in batches:
            x = tok.pad({key: [enc[key][j] for j in b] for key in enc}, return_tensors="pt")
            h = model.bottom(x["input_ids"], x["attention_mask"], x["token_type_ids"], k)
            cache.append((h.half(), x["attention_mask"], x["token_type_ids"], b))
            _tick(bar)
    _close(bar)
    cache_s = time.perf_counter() - t0
    total = cfg.epochs * len(cache)
    warm = max(1, int(cfg.warmup * total))
    opt = torch.optim.AdamW(
        [{"params": body, "lr": cfg.lr}, {"params": head + list(aux.parameters()),
                                          "lr": cfg.head_lr}],
        weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warm, max(0.0, (total - step) / (total - warm + 1))))
    loss_fn = torch.nn.CrossEntropyLoss(weight=weight)
    aux_fn = torch.nn.CrossEntropyLoss()
    bar = _bar(progress, total, f"train verifier (seed {cfg.seed})")
    t0 = time.perf_counter()
    losses = []
    model.train()
    for _ in range(cfg.epochs):
        order = list(range(len(cache)))
        rng.shuffle(order)
        run = 0.0
        for i, c in enumerate(order, 1):
            h, mask, tt, b = cache[c]
            logits, feats = model.top(h.float(), mask, tt, k)
            loss = loss_fn(logits, labels[b])
            if cfg.aux_weight:
                loss = loss + cfg.aux_weight * aux_fn(aux(feats), stratum_ids[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            run += float(loss.detach())
            _tick(bar, loss=f"{run / i:.4f}")
        losses.append(round(run / max(len(order), 1), 5))
    _close(bar)
    model.eval()
    # Evaluate exactly what is saved: the trained part rounded to fp16.
    verifier.load_trained_state(verifier.trained_state())
    return verifier, losses, {"cache_s": round(cache_s, 1),
                              "train_s": round(time.perf_counter() - t0, 1)}


def natural_examples(cfg: TrainConfig, *, validation: bool = False) -> list[Example]:
    """Memora examples (``memora_examples``) for training (``cfg.memora`` of them: half natural
    positives, half negatives spread evenly over the (kind, list) groups, a seeded draw) or, with
    ``validation``, every example of the one persona kept out of training
    (``MEMORA_VAL_PERSONA``); for training, ``cfg.memora_edges`` more negatives mined from the
    write-time edges (``memora_edge_examples``). Empty when ``cfg.memora`` is 0."""
    if cfg.memora <= 0:
        if cfg.memora_edges > 0:
            raise ConfigError("mined edge negatives (memora_edges) come with memora > 0")
        return []
    if not cfg.memora_dir:
        raise ConfigError("memora examples need memora_dir (the Memora data folder)")
    from memsieve.validity.memora_examples import TRAIN_PERSONAS, memora_examples

    if validation:
        return memora_examples(cfg.memora_dir, personas=(MEMORA_VAL_PERSONA,), seed=cfg.seed)
    personas = [p for p in TRAIN_PERSONAS if p != MEMORA_VAL_PERSONA]
    pool = memora_examples(cfg.memora_dir, seed=cfg.seed, personas=personas)
    rng = random.Random(cfg.seed)
    pos = [e for e in pool if e.label]
    out = rng.sample(pos, min(len(pos), cfg.memora // 2))
    lists: dict[str, list[Example]] = {}
    for e in pool:
        if not e.label:
            lists.setdefault(f"{e.stratum}:{e.attribute}", []).append(e)
    left = cfg.memora - len(out)
    for i, name in enumerate(sorted(lists)):  # even shares; a short list leaves its rest
        drawn = rng.sample(lists[name], min(len(lists[name]), left // (len(lists) - i)))
        out += drawn
        left -= len(drawn)
    if cfg.memora_edges > 0:
        from memsieve.embed import MiniLMEncoder
        from memsieve.validity.memora_examples import memora_edge_examples

        mined = memora_edge_examples(cfg.memora_dir, MiniLMEncoder(), seed=cfg.seed,
                                     personas=personas)
        out += rng.sample(mined, min(len(mined), cfg.memora_edges))
    rng.shuffle(out)
    return out


def _bar(progress: bool, total: int, desc: str) -> Any:
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="batch")


def _tick(bar: Any, **postfix: str) -> None:
    if bar is not None:
        bar.update(1)
        if postfix:
            bar.set_postfix(**postfix)


def _close(bar: Any) -> None:
    if bar is not None:
        bar.close()


def _evaluate(verifier: Verifier, cfg: TrainConfig, *, progress: bool) -> dict[str, Any]:
    val = generate(cfg.n_val, cfg.seed + VAL_OFFSET)
    test = generate(cfg.n_test, cfg.seed + TEST_OFFSET)
    t = time.perf_counter()
    val_scores = verifier.score([(e.query, e.source, e.target) for e in val])
    score_ms = (time.perf_counter() - t) * 1000 / max(len(val), 1)
    thresholds = choose_thresholds(val_scores, np.array([e.label for e in val]))
    natural = natural_examples(cfg, validation=True)
    if natural:  # a flag must reach its precision on both kinds of validation data
        nat_scores = verifier.score([(e.query, e.source, e.target) for e in natural])
        nat = choose_thresholds(nat_scores, np.array([e.label for e in natural]))
        thresholds = {k: max(v, nat[k]) for k, v in thresholds.items()}
    test_scores = verifier.score([(e.query, e.source, e.target) for e in test])
    from memsieve.embed import MiniLMEncoder

    gate = similarity_floor(val, MiniLMEncoder())
    thresholds["min_similarity"] = gate["min_similarity"]
    # on generator data only: trained on mined edge negatives, a verifier's query-blind
    # score of the kept-out persona's true changes falls near 0, and so would the threshold
    thresholds["edge_threshold"] = edge_threshold(verifier, val)
    report = {
        "config": dataclasses.asdict(cfg),
        "thresholds": thresholds,
        "similarity_gate": {**gate, "model": MiniLMEncoder.name, "keep": SIMILARITY_KEEP},
        "validation": split_report(val, val_scores, thresholds),
        "test": split_report(test, test_scores, thresholds),
        "score_ms_per_pair_batch32": round(score_ms, 2),
    }
    if natural:
        labels = np.array([e.label for e in natural])
        report["memora_validation"] = {
            name: binary_metrics(nat_scores, labels, thresholds[f"{name}_threshold"])
            for name in ("context", "demote")}
    if progress:
        for split in ("validation", "test"):
            o = report[split]["context"]["overall"]
            g = report[split]["context"]["per_group"]
            logger.info("%s: acc %.3f P %.3f R %.3f F1 %.3f | hard spec %.3f easy spec %.3f",
                        split, o["accuracy"], o["precision"], o["recall"], o["f1"],
                        g["hard"]["accuracy"], g["easy"]["accuracy"])
    if not all(math.isfinite(v) for v in thresholds.values()):  # pragma: no cover
        raise ConfigError("threshold selection failed")
    return report
