"""Deterministic stand-ins for the SLM in memory-system unit tests (never shipped as a default)."""

from __future__ import annotations

import json
import re

from clag.llm.client import LLMClient
from clag.llm.types import Request
from tests.scripted_llm import ScriptedBackend

TOPICS = {
    "sports": ["football match", "basketball game", "tennis tournament", "marathon race", "swimming gala"],
    "cooking": ["pasta recipe", "bread baking", "curry spices", "chocolate cake", "grilled salmon"],
    "astronomy": ["telescope night", "saturn rings", "meteor shower", "moon crater", "distant galaxy"],
}


def turn_texts(n: int) -> list[tuple[str, str]]:
    """(topic, sentence) for n turns cycling through three well-separated topics."""
    out = []
    for i in range(n):
        topic = list(TOPICS)[i % 3]
        thing = TOPICS[topic][(i // 3) % 5]
        out.append((topic, f"Today I talked about the {thing} again, number {i}, with my friends."))
    return out


def candidate_ids(prompt: str) -> list[str]:
    return re.findall(r"- cluster_id: (\S+)", prompt)


class MemoryScript:
    """Replies by call tag; ``overrides[tag]`` replaces a reply (a string, or a function of the request)."""

    def __init__(self, **overrides):
        self.overrides = overrides

    def __call__(self, request: Request) -> str:
        override = self.overrides.get(request.tag)
        if override is not None:
            return override(request) if callable(override) else override
        prompt = request.prompt or ""
        if request.tag == "note":
            content = prompt.rsplit("Content for analysis:\n", 1)[-1]
            topic = next((t for t, things in TOPICS.items() if any(x in content for x in things)), "misc")
            words = [w for w in re.findall(r"[a-z]+", content.lower()) if len(w) > 4][:3]
            return json.dumps({"keywords": words, "context": f"A remark about {topic}.", "tags": [topic, "chat"]})
        if request.tag == "evolve":
            indices = [int(i) for i in re.findall(r"memory index:(\d+)", prompt)]
            if not indices:
                return json.dumps({"should_evolve": False, "actions": [], "suggested_connections": [],
                                   "tags_to_update": [], "new_context_neighborhood": [],
                                   "new_tags_neighborhood": []})
            return json.dumps({"should_evolve": True, "actions": ["strengthen"],
                               "suggested_connections": indices[:1], "tags_to_update": ["linked"],
                               "new_context_neighborhood": [], "new_tags_neighborhood": []})
        if request.tag == "route":
            return json.dumps({"choice": candidate_ids(prompt)[0]})
        if request.tag == "profile":
            topic = next((t for t in TOPICS if t in prompt), "misc")
            return json.dumps({"summary": f"Talk about {topic}.", "tags": [topic, "talk words", topic, "x", "y"]})
        if request.tag == "keywords":
            question = prompt.split("Question: ", 1)[1].split("\n", 1)[0]
            return json.dumps({"keywords": ", ".join(question.rstrip("?").split()[-3:])})
        if request.tag == "select":
            return json.dumps({"selected_clusters": candidate_ids(prompt)[:1]})
        if request.tag.startswith(("gam_", "memoryos_")):
            return baseline_reply(request)
        return json.dumps({"answer": "ok"})


def scripted_client(**overrides) -> tuple[LLMClient, ScriptedBackend]:
    backend = ScriptedBackend(MemoryScript(**overrides))
    return LLMClient(backend), backend


def _long_words(text: str, n: int) -> list[str]:
    return [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4][:n]


def baseline_reply(request: Request) -> str:
    """Plausible fixed replies for GAM's and MemoryOS's calls (pipeline tests through the CLI)."""
    prompt = request.prompt or ""
    tag = request.tag
    if tag == "gam_memorize":
        return json.dumps({"abstract": prompt.split("INPUT_MESSAGE:\n", 1)[-1][:80]})
    if tag == "gam_plan":
        query = prompt.split("REQUEST:\n", 1)[-1].split("\n", 1)[0]
        return json.dumps({"info_needs": [query], "tools": ["keyword", "vector"],
                           "keyword_collection": _long_words(query, 3), "vector_queries": [query],
                           "page_index": []})
    if tag == "gam_integrate":
        evidence = prompt.split("EVIDENCE:\n", 1)[-1].split("\n")[1]
        return json.dumps({"content": f"Facts: {evidence[:100]}", "sources": []})
    if tag == "gam_check":
        return json.dumps({"enough": True})
    if tag == "gam_follow_up":
        return json.dumps({"new_requests": []})
    if tag == "memoryos_continuity":
        return json.dumps({"continuous": False})
    if tag == "memoryos_meta":
        return "A friendly chat."
    if tag == "memoryos_summary":
        text = prompt.split("Conversation:\n", 1)[-1]
        return json.dumps({"summaries": [{"theme": "chat", "keywords": _long_words(text, 2),
                                          "content": text.split("\n\nReply", 1)[0][:200]}]})
    if tag in ("memoryos_keywords", "memoryos_page_keywords", "memoryos_query_keywords"):
        return json.dumps({"keywords": _long_words(prompt.split("Text:\n", 1)[-1], 3)})
    if tag == "memoryos_profile":
        return json.dumps({"profile": "Friendly.", "user_facts": ["The user likes to talk."]})
    if tag == "memoryos_assistant":
        return json.dumps({"assistant_facts": ["I listen."]})
    return json.dumps({"profile": "Friendly and curious."})
