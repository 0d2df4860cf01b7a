"""The reference's own CLAG code, run in process with a scripted SLM (tests only).

``load_reference`` imports dmis-lab/CLAG's pinned ``CLAG_memory.py`` from the data root as it is,
with three stand-ins around it and none inside it: ``litellm`` (imported, never called on this
path) is an empty module, ``matplotlib`` one when absent, and ``SentenceTransformer`` loads the
same all-MiniLM-L6-v2 the harness uses, on the CPU (the reference asks for ``cuda``).

``ScriptedController`` answers the reference's ``get_completion`` from a function of the call's
kind (which schema it sends) and prompt, and records every request; ``scripted_reply`` is that
function, so the harness, answered by the same function, makes the same decisions whenever it
sends the same prompts.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: a call's kind, by the property names of the JSON schema it sends
KINDS = {
    ("context", "keywords", "tags"): "note",
    ("actions", "new_context_neighborhood", "new_tags_neighborhood", "should_evolve", "suggested_connections",
     "tags_to_update"): "evolve",
}


def call_kind(schema: dict[str, Any] | None, prompt: str) -> str:
    keys = tuple(sorted((schema or {}).get("properties", {})))
    if keys in KINDS:
        return KINDS[keys]
    if keys == ("choice",):
        return "route"
    if keys == ("keywords",):
        return "keywords"
    if keys == ("selected_clusters",):
        return "select"
    if keys == ("answer",):
        return "answer"
    return "other:" + ",".join(keys)


#: a cluster's tags as routing and selection prompts list them
_TAG_LINE = re.compile(r"^(\s*(?:cluster_)?tags: )(\[.*\])$", re.MULTILINE)


def canonical(prompt: str) -> str:
    """The prompt with each cluster's tag list sorted. The reference keeps K-Means clusters' tags
    in a Python ``set`` and lists them in its iteration order, which follows the process's string
    hash seed (``PYTHONHASHSEED``): the reference itself orders them differently from run to run.
    The harness lists them most common first; everything else must be equal byte for byte."""
    import ast

    def sort_line(match: re.Match) -> str:
        try:
            tags = ast.literal_eval(match.group(2))
        except (ValueError, SyntaxError):
            return match.group(0)
        return match.group(1) + repr(sorted(tags)) if isinstance(tags, list) else match.group(0)

    return _TAG_LINE.sub(sort_line, prompt)


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")


def scripted_reply(kind: str, prompt: str) -> str:
    """A deterministic reply for a prompt: real words for notes, a mix of evolution decisions
    (none, strengthen, update_neighbor with fewer contexts than tags), routing to a listed
    candidate or to an id that is not one, profiles made of the prompt's words."""
    prompt = canonical(prompt)
    h = _digest(prompt)
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z-]{4,}", prompt.rsplit("\n\n", 1)[-1])][:40]
    if kind == "note":
        content = prompt.rsplit("Content for analysis:", 1)[-1]
        picked = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]{5,}", content)][:6] or ["none"]
        return json.dumps({"keywords": picked[:3], "context": f"About {' '.join(picked[:2])}.",
                           "tags": sorted(set(picked[2:5])) or ["misc"]})
    if kind == "evolve":
        indices = [int(i) for i in re.findall(r"memory index:(\d+)", prompt)]
        mode = h % 4
        if not indices or mode == 0:
            return json.dumps({"should_evolve": False, "actions": [], "suggested_connections": [],
                               "new_context_neighborhood": [], "tags_to_update": [],
                               "new_tags_neighborhood": []})
        actions = [["strengthen"], ["update_neighbor"], ["strengthen", "update_neighbor"]][mode - 1]
        n = len(indices)
        return json.dumps({"should_evolve": True, "actions": actions, "suggested_connections": indices[:1],
                           "new_context_neighborhood": [f"Updated context {h % 97} of {i}." for i in indices[:max(1, n - 1)]],
                           "tags_to_update": [f"tag{h % 13}", "linked"],
                           "new_tags_neighborhood": [[f"n{h % 7}", f"m{i}"] for i in indices]})
    if kind == "route":
        candidates = re.findall(r"cluster_id:\s*\"?([A-Za-z0-9_\-]+)", prompt)
        if candidates and h % 5:
            return json.dumps({"choice": candidates[h % len(candidates)]})
        return json.dumps({"choice": "cluster_404"})
    if kind == "keywords":
        question = prompt.split("Question:", 1)[-1]
        picked = [w for w in re.findall(r"[A-Za-z][A-Za-z-]{4,}", question)][:3]
        example = re.search(r'\{"keywords": "([^"]*)"\}', prompt)
        if example and h % 6 == 0:      # the prompt's own example, as a 0.5B model answers
            return json.dumps({"keywords": example.group(1)})
        return json.dumps({"keywords": ", ".join(picked) or "none"})
    if kind == "select":
        candidates = list(dict.fromkeys(re.findall(r"cluster_id:\s*\"?([A-Za-z0-9_\-]+)", prompt)))
        if h % 4 == 0:
            return json.dumps({"selected_clusters": ["cluster_1"]})
        return json.dumps({"selected_clusters": candidates[h % 3: h % 3 + 2]})
    if kind == "answer":
        return json.dumps({"answer": " ".join(words[-3:]) or "unknown"})
    # profiles and anything else: the fields of its schema filled with the prompt's words
    return json.dumps({"summary": " ".join(words[:8]) or "A cluster.", "tags": sorted(set(words[8:12]))})


class ScriptedController:
    """Stands where the reference's controller is: records each call, answers from ``reply``.
    A call that leaves the temperature out gets ``default_temperature``, which
    :func:`_controller_default_temperature` reads from the reference's own controller."""

    def __init__(self, reply: Callable[[str, str], str] = scripted_reply,
                 default_temperature: float | None = None) -> None:
        self.reply = reply
        self.default_temperature = default_temperature
        self.calls: list[dict[str, Any]] = []

    def get_completion(self, prompt: str, response_format: dict | None = None, **options: Any) -> str:
        temperature = options.get("temperature", self.default_temperature)
        schema = (response_format or {}).get("json_schema", {}).get("schema")
        kind = call_kind(schema, prompt)
        self.calls.append({"kind": kind, "prompt": prompt, "schema": schema, "temperature": temperature})
        return self.reply(kind, prompt)


def load_reference(memory_file: Path) -> types.ModuleType:
    """The pinned ``CLAG_memory.py`` as a module (named ``CLAG_memory``, as ``test_CLAG.py``
    imports it), with its outside world stood in for (above)."""
    from sentence_transformers import SentenceTransformer

    from clag.embed import model_path

    sys.modules.setdefault("litellm", types.ModuleType("litellm"))
    sys.modules["litellm"].completion = None   # type: ignore[attr-defined]
    try:
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        plt = types.ModuleType("matplotlib.pyplot")
        sys.modules["matplotlib"] = types.ModuleType("matplotlib")
        sys.modules["matplotlib.pyplot"] = plt
    reference_dir = str(Path(memory_file).parent)
    sys.path.insert(0, reference_dir)
    try:
        spec = importlib.util.spec_from_file_location("CLAG_memory", memory_file)
        module = importlib.util.module_from_spec(spec)
        sys.modules["CLAG_memory"] = module
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    finally:
        sys.path.remove(reference_dir)

    def cpu_model(name: str, device: str | None = None, **kwargs: Any) -> Any:
        return SentenceTransformer(model_path(name), device="cpu", **kwargs)

    module.SentenceTransformer = cpu_model
    return module


def _controller_default_temperature(module: types.ModuleType) -> float:
    """The temperature the reference's SGLang controller uses when a call names none."""
    import inspect

    return inspect.signature(module.SGLangController.get_completion).parameters["temperature"].default


def _cluster_and_consolidate(system: Any) -> None:
    """What the reference's evaluation script does after a stream's last turn."""
    system.initialize_clusters_if_needed()
    system.consolidate_memories()


def load_reference_eval(memory_file: Path, eval_file: Path) -> types.ModuleType:
    """The pinned ``test_CLAG.py`` (its agent: query keywords, retrieval, answers) on top of
    :func:`load_reference`; its metric libraries (``rouge_score``, ``bert_score``), used only to
    score, are empty modules when absent."""
    load_reference(memory_file)
    for name, attr in (("rouge_score", "rouge_scorer"), ("bert_score", "score")):
        try:
            importlib.import_module(name)
        except ImportError:
            stub = types.ModuleType(name)
            setattr(stub, attr, None)
            sys.modules[name] = stub
    import nltk

    folder = str(Path(eval_file).parent)
    sys.path.insert(0, folder)
    download, nltk.download = nltk.download, lambda *args, **kwargs: False   # it fetches at import
    try:
        spec = importlib.util.spec_from_file_location("clag_reference_eval", eval_file)
        module = importlib.util.module_from_spec(spec)
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
        nltk.download = download
    return module


def reference_stream(memory_file: Path, eval_file: Path, contents: list[tuple[str, str]],
                     questions: list[tuple[str, int, str]], retrieve_k: int = 10,
                     reply: Callable[[str, str], str] = scripted_reply,
                     thresholds: dict[str, int] | None = None) -> ScriptedController:
    """One stream through the reference's evaluation script's agent: ``add_memory`` per turn,
    clusters if needed and a consolidation, then ``answer_question`` for each ``(question,
    category, answer)``. Every call of both its controllers goes to one :class:`ScriptedController`.
    ``thresholds`` sets the memory system's attributes of those names (``init_cluster_min_memories``,
    ``cluster_split_threshold``), which its constructor fixes, so short streams reach every step."""
    evaluation = load_reference_eval(memory_file, eval_file)
    controller = ScriptedController(reply, _controller_default_temperature(sys.modules["CLAG_memory"]))
    with contextlib.redirect_stdout(io.StringIO()):
        agent = evaluation.advancedMemAgent("x", "sglang", retrieve_k, 0.5)
        agent.memory_system.llm_controller.llm = controller
        agent.retriever_llm.llm = controller
        for name, value in (thresholds or {}).items():
            if not hasattr(agent.memory_system, name):
                raise AttributeError(f"the reference's memory system has no {name}")
            setattr(agent.memory_system, name, value)
        for content, time in contents:
            agent.add_memory(content, time=time)
        _cluster_and_consolidate(agent.memory_system)
        for question, category, answer in questions:
            agent.answer_question(question, category, answer)
    return controller
