"""On real conversations whose memories are all current and untagged, admissibility is silent:
annotate and enforce leave every ranking exactly as the pipeline without the stage."""

from __future__ import annotations

from memsieve.admissibility import AdmissibilityStage
from memsieve.eval.datasets import load_locomo
from memsieve.pipeline import Pipeline
from memsieve.retrieve import Retriever
from memsieve.types import Query


def test_annotate_and_enforce_change_no_locomo_ranking(data_dir, fresh_store, hash_encoder):
    task = load_locomo(data_dir / "locomo" / "locomo10.json")
    conv = task.groups[0]
    memories = [m for m in task.memories if m.namespace == conv]
    fresh_store.add(memories, vectors=hash_encoder.encode([m.text for m in memories]),
                    model=hash_encoder.name)
    retriever = Retriever(fresh_store, hash_encoder)
    plain = Pipeline([retriever], store=fresh_store)
    gated = {mode: Pipeline([retriever, AdmissibilityStage(mode)], store=fresh_store)
             for mode in ("annotate", "enforce")}
    queries = [q for q in task.queries if q.namespace == conv][:60]
    for q in queries:
        query = Query(text=q.text, namespace=q.namespace, intent="current")
        want = [c.memory.id for c in plain.candidates(query)]
        for mode, pipeline in gated.items():
            got = pipeline.candidates(query)
            assert [c.memory.id for c in got] == want, mode
            assert {c.annotations["admissibility"].status for c in got} == {"admissible"}
