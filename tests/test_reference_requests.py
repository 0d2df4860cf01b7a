"""Every request of a whole stream, compared with what the reference's own code sends for the
same inputs: dmis-lab/CLAG's ``CLAG_memory.py`` and ``test_CLAG.py`` at the pinned commit, run in
process (``tests/reference_code.py``), and this harness under ``profile=reference``, both answered
by one scripted SLM whose reply is a function of the prompt — so the two make the same decisions
exactly as long as they send the same prompts.

Compared per call, in order: the prompt text, the JSON schema (as sent, key order included) and
the temperature. One normalisation, documented in ``canonical``: the reference lists a K-Means
cluster's tags in Python ``set`` order, which follows the process's hash seed, so tag lists in
routing and selection prompts are compared sorted.
"""

from __future__ import annotations

import json

import pytest

from tests.reference_code import call_kind, canonical, reference_stream, scripted_reply
from tests.scripted_llm import ScriptedBackend

#: the calls the harness side sent, in order: reset by each comparison. Module-level because the
#: harness keeps one backend per process for identical configs (``clag.llm.models.build_backend``):
#: a reply function closing over one comparison's own list would still fill the first one's.
CALLS: list[dict] = []


def _capture(request):
    kind = call_kind(request.json_schema, request.prompt)
    CALLS.append({"kind": kind, "prompt": canonical(request.prompt), "schema": request.json_schema,
                  "temperature": request.temperature})
    return scripted_reply(kind, request.prompt)


def BACKEND(cfg):  # noqa: N802 — the harness side's config names it: llm.backend=<this module>:BACKEND
    return ScriptedBackend(_capture, model_id="reference-check")


@pytest.fixture(scope="module")
def reference_dir(reference_dir):
    """The shared fixture, and scikit-learn, which the reference's code imports."""
    pytest.importorskip("sklearn")
    return reference_dir


def _harness_calls(data_root, sample, turns, questions, overrides: list[str]) -> list[dict]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from eval.methods import build_method
    from eval.resources import CONFIG_DIR

    CALLS.clear()
    with initialize_config_dir(str(CONFIG_DIR), version_base=None):
        cfg = OmegaConf.to_container(compose("config", overrides=[
            "method=clag", "data=bioasq", "profile=reference", f"data.root={data_root}",
            "llm.backend=tests.test_reference_requests:BACKEND", "llm.cache_path=null", *overrides]), resolve=True)
    run = build_method(cfg)
    memory = run.make_memory(sample)
    for turn in turns:
        memory.ingest(turn)
    memory.finalize()
    for question in questions:
        run.answer(question, memory.retrieve(question))
    return list(CALLS)


def _compare(data_root, reference_dir, n_turns: int | None, n_questions: int | None,
             thresholds: dict[str, int] | None = None) -> dict[str, int]:
    from eval.data.bioasq import load_bioasq

    sample = load_bioasq(data_root).samples[3]
    turns, questions = sample.turns[:n_turns], sample.questions[:n_questions]
    reference = reference_stream(
        reference_dir / "CLAG_memory.py", reference_dir / "test_CLAG.py",
        [(t.memory_content("reference"), t.timestamp) for t in turns],
        [(q.text, q.category, q.answer) for q in questions], thresholds=thresholds).calls
    overrides = [f"method.memory.{key}={value}" for key, value in (thresholds or {}).items()]
    ours = _harness_calls(data_root, sample, turns, questions, overrides)
    for i, (theirs, mine) in enumerate(zip(reference, ours)):
        where = f"call {i} ({theirs['kind']}; {len(reference)} reference calls, {len(ours)} here)"
        assert mine["kind"] == theirs["kind"], f"{where}: this harness made a {mine['kind']} call"
        assert mine["prompt"] == canonical(theirs["prompt"]), where
        assert json.dumps(mine["schema"]) == json.dumps(theirs["schema"]), where
        assert mine["temperature"] == theirs["temperature"], where
    assert len(ours) == len(reference), f"{len(reference)} reference calls, {len(ours)} here"
    counts: dict[str, int] = {}
    for call in reference:
        counts[call["kind"]] = counts.get(call["kind"], 0) + 1
    return counts


def test_every_request_equals_the_references_with_small_cluster_thresholds(data_root, reference_dir):
    """36 turns with clusters from 12 notes and splits above 10 members: K-Means, routing, new
    clusters, a split, profiles, selection and answers all happen in one short stream."""
    counts = _compare(data_root, reference_dir, 36, 4,
                      {"init_cluster_min_memories": 12, "cluster_split_threshold": 10})
    assert counts["route"] == 36 - 12 and counts["select"] == 4 and counts["answer"] == 4
    assert counts["other:summary,tags"] > 3        # profiles at the start and after consolidation


@pytest.mark.slow
def test_every_request_of_bioasq_stream_3_equals_the_references(data_root, reference_dir):
    """The anchor's stream as the paper runs it: 134 turns, 20 questions, clusters at 100 notes."""
    counts = _compare(data_root, reference_dir, None, None)
    assert counts == {"note": 134, "evolve": 134, "route": 34, "other:summary,tags": 12, "keywords": 20,
                      "select": 20, "answer": 20}
