"""OpenTelemetry: one search_memory span per search and per context, in the GenAI memory shape,
with record ids and scores and never memory text (the SDK's in-memory exporter)."""

from __future__ import annotations

import json

import pytest

from memsieve.assemble import Assembler, AutoRule
from memsieve.ingest import add_memories
from memsieve.pipeline import Pipeline
from memsieve.types import Memory, Query

pytest.importorskip("opentelemetry.sdk")


@pytest.fixture(scope="module")
def exporter():
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def test_search_and_context_emit_memory_spans(exporter, fresh_store, hash_encoder):
    secret = "the cello is under the bed"
    add_memories(fresh_store, [Memory(id="a", namespace="u", text=secret),
                               Memory(id="b", namespace="u", text="tea in the garden")],
                 hash_encoder)
    pipeline = Pipeline.default(fresh_store, encoder=hash_encoder, rerank="off",
                                validity="off")
    exporter.clear()
    response = pipeline.run(Query(text="where is the cello", namespace="u"))
    Assembler(pipeline, rule=AutoRule({}))(Query(text="cello", namespace="u"), mode="lookup")
    search, context = exporter.get_finished_spans()
    for span in (search, context):
        assert span.name == "search_memory"
        assert span.attributes["gen_ai.operation.name"] == "search_memory"
        assert span.attributes["gen_ai.provider.name"] == "memsieve"
        assert span.attributes["gen_ai.memory.store.id"] == "u"
        assert secret not in json.dumps(dict(span.attributes))
    records = json.loads(search.attributes["gen_ai.memory.records"])
    assert [r["id"] for r in records] == [r.memory_id for r in response.results]
    assert [r["score"] for r in records] == [r.score for r in response.results]
    assert search.attributes["gen_ai.memory.record.count"] == len(response.results)
    assert context.attributes["memsieve.operation"] == "context"
    assert context.attributes["memsieve.context.mode"] == "lookup"
    assert list(context.attributes["memsieve.record.ids"])[0] == "a"
