"""The reference prompt set: every template of the paper's files, extracted and rendered
byte-exactly; the profile that uses it; clear lines when a file is not the pinned one."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from clag.prompt_sets import ClusterCandidate, OwnPrompts, ReferencePrompts, ReferenceTemplateError
from clag.prompts import REFERENCE_EVOLUTION_ORDER, evolution_schema
from tests.conftest import REPO


@pytest.fixture(scope="module")
def reference(reference_dir):
    return ReferencePrompts(reference_dir / "CLAG_memory.py", reference_dir / "test_CLAG.py")


@pytest.fixture(scope="module")
def real(locomo):
    """A real memory text, question and two clusters' snippets from LoCoMo."""
    sample = locomo.samples[0]
    turns = [t.memory_content() for t in sample.turns[:8]]
    question = next(q for q in sample.questions if q.category == 2)
    clusters = [ClusterCandidate("c0", 4, "Caroline's support group.", ("support", "lgbtq", "group"),
                                 tuple(t[:160] for t in turns[:3])),
                ClusterCandidate("c1", 4, "Melanie's painting.", ("art", "painting", "family"),
                                 tuple(t[:160] for t in turns[3:6]))]
    return turns, question, clusters


def _source_render(path, function: str, target: str, values: dict[str, str]) -> str:
    """An independent render: the f-string's source text with each ``{field}`` replaced by its
    value by text substitution (no evaluation), ``{{``/``}}`` unescaped."""
    source = path.read_text()
    tree = ast.parse(source)
    func = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function)
    node = next(n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == target for t in n.targets))
    segment = ast.get_source_segment(source, node)
    body = re.match(r'^\(?\s*f("""|")(.*)\1\s*\)?$', segment, re.S).group(2)
    out = re.sub(r"(?<!\{)\{([^{}]+)\}(?!\})", lambda m: values[m.group(1)], body)
    return out.replace("{{", "{").replace("}}", "}")


def test_every_template_renders_with_real_notes_questions_and_clusters(reference, real):
    turns, question, clusters = real
    renders = {
        "analysis": reference.analysis(turns[0]),
        "evolution": reference.evolution("A talk about support.", turns[0], ["support", "group"],
                                         "memory index:3\t talk start time:t\t memory content: x\n", 1),
        "keywords": reference.query_keywords(question.text, "commas"),
        "route": reference.route(turns[6], "A talk.", ["support"], clusters, "cluster_1"),
        "profile": reference.profile([(t, "ctx", ["tag"]) for t in turns[:3]]),
        "selection": reference.selection(question.text, ["date"], clusters, 10),
        **{f"answer{c}": reference.answer(c, "\n".join(turns), question.text, ("x", "y") if c == 5 else None)
           for c in (1, 2, 3, 4, 5, 6)},
    }
    assert renders["analysis"].endswith("Content for analysis:\n            " + turns[0])
    assert "content: " + turns[0] in renders["evolution"] and "The number of neighbors is 1." in renders["evolution"]
    assert f"Question: {question.text}" in renders["keywords"] and "'commas'" in renders["keywords"]
    for text in (renders["route"], renders["selection"]):
        assert "- cluster_id: c0" in text and "- cluster_id: c1" in text and clusters[1].examples[0] in text
    assert "  size: 4" in renders["route"] and "  cluster_tags: ['art', 'painting', 'family']" in renders["selection"]
    assert all(f"- content: {t}" in renders["profile"] for t in turns[:3])
    assert "Use DATE of CONVERSATION" in renders["answer2"] and "LIST question" in renders["answer6"]
    assert "Select the correct answer: x or y" in renders["answer5"]
    assert renders["answer1"] == renders["answer4"] != renders["answer3"]
    for name, text in renders.items():                  # every field filled, nothing left unformatted
        assert not re.search(r"\{(note|cd|m|question|context|answer_tmp|top_n|query)\b", text), name
    own = OwnPrompts()
    assert own.analysis(turns[0]) != renders["analysis"] and own.identity != reference.identity


def test_golden_renders_equal_a_text_substitution_of_the_reference_source(reference, reference_dir, real):
    turns, question, clusters = real
    memory_file, eval_file = reference_dir / "CLAG_memory.py", reference_dir / "test_CLAG.py"
    assert reference.query_keywords(question.text, "commas") == _source_render(
        eval_file, "generate_query_llm", "prompt", {"question": question.text})
    blocks = "\n".join(
        f"- cluster_id: {c.cluster_id}\n  size: {c.size}\n  summary: {c.summary}\n  tags: {list(c.tags)}\n"
        f"  representative_memories:\n" + "\n".join(f"- {e}" for e in c.examples) + "\n" for c in clusters)
    assert reference.route(turns[6], "A talk.", ["support"], clusters, "cluster_1") == _source_render(
        memory_file, "route_new_memory_with_llm", "prompt",
        {"note.content": turns[6], "note.context": "A talk.", "note.tags": "['support']", "candidates_text": blocks})
    samples = "\n".join(f"- content: {t}\n  context: ctx\n  tags: ['tag']\n" for t in turns[:3])
    assert reference.profile([(t, "ctx", ["tag"]) for t in turns[:3]]) == _source_render(
        memory_file, "_build_cluster_profiles_with_llm", "prompt", {"samples_text": samples})


def test_a_file_that_is_not_the_pinned_one_is_one_clear_line(reference_dir, tmp_path):
    from eval.errors import DataError
    from eval.prompt_source import build_prompt_set

    broken = tmp_path / "ref"
    broken.mkdir()
    shutil.copy(reference_dir / "test_CLAG.py", broken / "test_CLAG.py")
    (broken / "CLAG_memory.py").write_text((reference_dir / "CLAG_memory.py").read_text().replace(
        "def route_new_memory_with_llm", "def route_memory"))
    with pytest.raises(ReferenceTemplateError, match=r"has no function route_new_memory_with_llm\(\)"):
        ReferencePrompts(broken / "CLAG_memory.py", broken / "test_CLAG.py")
    with pytest.raises(DataError, match="does not match its published checksum"):
        build_prompt_set({"prompts": "reference", "reference_dir": str(broken)})
    with pytest.raises(DataError, match="not found"):
        build_prompt_set({"prompts": "reference", "reference_dir": str(tmp_path / "nowhere")})
    assert build_prompt_set({"prompts": "reference", "reference_dir": str(reference_dir)}).name == "reference"


def test_a_mem_keeps_its_separator_and_a_repaired_route_its_example(reference, real):
    turns, question, clusters = real
    assert "using 'cosmos' as the separator" in reference.query_keywords(question.text, "cosmos")
    text = reference.route(turns[6], "A talk.", ["t"], clusters, "<cluster_id>")
    assert '"choice": "<cluster_id>"' in text and '"cluster_1"' not in text


def test_the_evolution_schema_can_keep_the_reference_key_order():
    assert tuple(evolution_schema(False, "reference")["properties"]) == REFERENCE_EVOLUTION_ORDER
    assert list(evolution_schema(False)["properties"]).index("tags_to_update") < \
        list(evolution_schema(False)["properties"]).index("new_context_neighborhood")


def test_the_reference_profile_composes_everything_the_paper_ran(data_root):
    from eval.cli import compose

    cfg = compose(["method=clag", "data=bioasq", "profile=reference", f"data.root={data_root}"])
    assert cfg["profile"]["prompts"] == "reference" and cfg["method"]["memory"]["bounded_schemas"] is False
    assert cfg["method"]["memory"]["evolution_key_order"] == "reference"
    assert cfg["answer"]["bounded_schema"] is False and cfg["llm"]["max_whitespace"] is None
    assert cfg["llm"]["max_error_rate"] == 1.0
    robust = compose(["method=amem", "data=bioasq"])
    assert robust["profile"]["name"] == "robust" and robust["method"]["memory"]["bounded_schemas"] is True
    assert compose(["+experiment=paper_main", "method=clag"])["profile"]["name"] == "reference"


@pytest.mark.slow
def test_a_reference_profile_run_reads_the_pinned_files_and_its_ledger_names_them(data_root, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "eval", "run", "method=clag", "data=bioasq", "+experiment=smoke", "data.subset.turns=60", "profile=reference",
         "llm.backend=tests.fake_backend:build", f"results_root={tmp_path / 'runs'}",
         f"snapshot_dir={tmp_path / 's'}", f"llm.cache_path={tmp_path / 'c.sqlite'}", "progress=false"],
        cwd=REPO, env=dict(os.environ, CLAG_BENCH_DATA=str(data_root), HF_HUB_OFFLINE="1"),
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run_dir = next((tmp_path / "runs").glob("bioasq/clag@reference/*/*"))
    ledger = json.loads((run_dir / "ledger.json").read_text())
    assert ledger["profile"] == "reference" and ledger["prompt_set"].startswith("reference:")
    assert [p.rsplit("/", 1)[-1] for p in ledger["prompt_files"]] == ["CLAG_memory.py", "test_CLAG.py"]
    # named under the data root, so committed records name no folder of the machine that ran them
    assert all(p.startswith("<data root>/clag_reference/") for p in ledger["prompt_files"])
    assert str(data_root) not in (run_dir / "ledger.json").read_text()
    first = json.loads((run_dir / "predictions.jsonl").read_text().splitlines()[0])
    assert "write an answer in the form of a short phrase" in first["answer_debug"]["prompt"] or \
        "LIST question" in first["answer_debug"]["prompt"]


def test_cluster_summaries_come_from_the_reference_file(reference, reference_dir):
    """The texts a cluster shows before its first profile are the reference's own, read from its
    file (never copied): checked against a substitution of the source lines."""
    source = (reference_dir / "CLAG_memory.py").read_text()
    assert f"{reference.kmeans_summary(['a', 'b'], [])!r}"[1:-1].replace("a, b", "{', '.join(top_tags)}") in source
    assert reference.kmeans_summary([], ["x" * 200]) == "x" * 120
    assert f'"{reference.kmeans_summary([], [])}"' in source and f'"{reference.single_cluster_summary()}"' in source
    text = reference.new_cluster_summary([], "c" * 80)
    assert text.endswith("c" * 50) and text[:-50] + "{', '.join(note.tags) or note.context[:50]}" in source
    own = OwnPrompts()
    assert own.new_cluster_summary(["t"], "ctx") != reference.new_cluster_summary(["t"], "ctx")
