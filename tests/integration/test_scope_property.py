"""Property: no search result, context or exposure ever holds another namespace's memory.

Random multi-namespace stores whose ids collide across namespaces, with writes, updates,
forgets and purges interleaved with searches and assembled contexts on one live pipeline.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsieve.assemble import Assembler, AutoRule
from memsieve.embed import HashingEncoder
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.store import open_store
from memsieve.store.base import PURGED
from memsieve.types import Memory, Query, State

NAMESPACES = ["alice", "bob", "carol"]
WORDS = ["tea", "garden", "paris", "cello", "nurse", "dog", "rome", "bike"]
ENC = HashingEncoder()

op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMESPACES), st.integers(0, 5),
              st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)),
    st.tuples(st.just("forget"), st.sampled_from(NAMESPACES), st.integers(0, 5)),
    st.tuples(st.just("purge"), st.sampled_from(NAMESPACES), st.integers(0, 5)),
    st.tuples(st.just("search"), st.sampled_from(NAMESPACES), st.sampled_from(WORDS)),
    st.tuples(st.just("context"), st.sampled_from(NAMESPACES), st.sampled_from(WORDS),
              st.sampled_from(["lookup", "compose", "replay", "topk"])),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=25))
def test_nothing_crosses_namespaces(ops):
    with open_store(":memory:") as store:
        pipeline = Pipeline.default(store, encoder=ENC, rerank="off", validity="off")
        assembler = Assembler(pipeline, rule=AutoRule({}))
        truth: dict[tuple[str, str], Memory] = {}  # what each namespace holds, by the model
        for step, (kind, ns, *args) in enumerate(ops):
            if kind == "add":
                i, words = args
                m = Memory(id=f"m{i}", namespace=ns, session_id="s", turn_index=i,
                           text=f"{ns} {step} says " + " ".join(words) + ".")
                add_memories(store, [m], ENC)
                truth[(ns, m.id)] = m
            elif kind in ("forget", "purge"):
                key = (ns, f"m{args[0]}")
                if key in truth:
                    if kind == "forget":
                        store.forget(*key)
                        truth[key] = truth[key].model_copy(update={"state": State.forgotten})
                    else:
                        store.purge(ns, [key[1]])
                        del truth[key]
            elif kind == "search":
                response = pipeline.run(Query(text=args[0], namespace=ns))
                for r in response.results:
                    want = truth[(ns, r.memory_id)]  # KeyError: not this namespace's memory
                    assert r.namespace == ns and r.text == want.text
                    assert want.state is not State.forgotten
            else:
                ctx = assembler(Query(text=args[0], namespace=ns), mode=args[1], budget=200)
                for item in ctx.memories:
                    want = truth[(ns, item.memory_id)]
                    assert item.text in want.text and want.state is not State.forgotten
        for ns in NAMESPACES:
            for exposure in store.exposures(ns, limit=1000):
                assert exposure.namespace == ns
                for mid in exposure.memory_ids + [m for m, _ in exposure.excluded]:
                    assert mid == PURGED or (ns, mid) in truth
