"""GAM's prompts and output schemas: the memorizer and the researcher's four steps.

Each prompt keeps the purpose, inputs, fields and limits of GAM's reference prompts
(``research/gam_research/prompts``: MemoryAgent, Planning, Integrate, InfoCheck,
GenerateRequests), in our own wording. The reference asks for JSON in plain text after a
``<think>`` block; with ``structured_output: schema`` the same fields come through
JSON-schema-constrained decoding instead (bounded so a small model cannot loop inside them).
"""

from __future__ import annotations

from typing import Any

from clag.prompts import array_of, object_of, text_field

#: the three search tools a plan may choose
TOOLS = ("keyword", "vector", "page_index")
#: the reference's cap on page indices, follow-up requests and (here) every plan list
MAX_PLAN_ITEMS = 5


def memorize_prompt(page_text: str, memory_context: str, as_json: bool = True) -> str:
    reply = ('Reply with a JSON object {"abstract": "<the paragraph>"}.' if as_json
             else "Reply with the paragraph only.")
    return (
        "You keep a running memory of a long input as one abstract per page.\n"
        "Write ONE concise, self-contained paragraph that abstracts the INPUT_MESSAGE below.\n"
        "- Keep every important detail: plans, decisions, actions, problems, names, dates, numbers, "
        "places.\n"
        "- MEMORY_CONTEXT lists the abstracts of earlier pages. Use it only to resolve references "
        "and to keep names and terms consistent; never add a fact that appears only there.\n"
        "- No meta phrases (\"this page describes\"), no advice, no opinions.\n\n"
        f"MEMORY_CONTEXT:\n{memory_context or 'No memory yet.'}\n\n"
        f"INPUT_MESSAGE:\n{page_text}\n\n"
        f"{reply}"
    )


def memorize_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"abstract": text_field(bounded, 1200)})


def plan_prompt(request: str, memory: str) -> str:
    return (
        "You plan a search over a paged memory to answer a request.\n"
        "1. Break the request into the specific pieces of information it needs (info_needs).\n"
        "2. Choose the tools that will find them:\n"
        '   - "keyword": exact-term search; give short keyword queries in keyword_collection.\n'
        '   - "vector": semantic search; give natural-language queries in vector_queries.\n'
        '   - "page_index": read pages directly; give at most 5 page numbers from MEMORY in '
        "page_index. Never invent a page number that MEMORY does not list.\n"
        "Leave the field of a tool you do not choose empty.\n\n"
        f"REQUEST:\n{request}\n\n"
        f"MEMORY (one abstract per page):\n{memory or 'No memory currently.'}\n\n"
        "Reply with a JSON object with the keys info_needs, tools, keyword_collection, "
        "vector_queries and page_index."
    )


def plan_schema(bounded: bool = True) -> dict[str, Any]:
    query = text_field(bounded, 200)
    return object_of({
        "info_needs": array_of(query, bounded, MAX_PLAN_ITEMS),
        "tools": array_of({"type": "string", "enum": list(TOOLS)}, bounded, len(TOOLS)),
        "keyword_collection": array_of(query, bounded, MAX_PLAN_ITEMS),
        "vector_queries": array_of(query, bounded, MAX_PLAN_ITEMS),
        "page_index": array_of({"type": "integer"}, bounded, MAX_PLAN_ITEMS),
    })


def integrate_prompt(question: str, evidence: str, result: str) -> str:
    return (
        "You maintain a factual working summary for a question. It is NOT the answer itself.\n"
        "Merge the facts from RESULT that are still relevant with the new relevant facts in "
        "EVIDENCE. Keep names, dates and numbers exactly as written; drop what does not help with "
        "the question; do not guess.\n\n"
        f"QUESTION:\n{question}\n\n"
        f"EVIDENCE:\n{evidence or 'No search results.'}\n\n"
        f"RESULT (the summary so far):\n{result or 'Empty.'}\n\n"
        'Reply with a JSON object {"content": "<updated summary>", "sources": [page ids used]}.'
    )


def integrate_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"content": text_field(bounded, 1500),
                      "sources": array_of(text_field(bounded, 20), bounded, 10)})


def info_check_prompt(request: str, result: str) -> str:
    return (
        "Decide whether RESULT already holds enough information to answer REQUEST completely.\n\n"
        f"REQUEST:\n{request}\n\n"
        f"RESULT:\n{result or 'Empty.'}\n\n"
        'Reply with a JSON object {"enough": true} or {"enough": false}.'
    )


def info_check_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"enough": {"type": "boolean"}})


def follow_up_prompt(request: str, result: str) -> str:
    return (
        "RESULT does not yet answer REQUEST. Write at most 5 targeted search questions that would "
        "find the missing information. Each asks for one specific thing not already in RESULT.\n\n"
        f"REQUEST:\n{request}\n\n"
        f"RESULT:\n{result or 'Empty.'}\n\n"
        'Reply with a JSON object {"new_requests": ["question", ...]}.'
    )


def follow_up_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"new_requests": array_of(text_field(bounded, 200), bounded, MAX_PLAN_ITEMS)})


def template_renders(s: str) -> dict[str, list[str]]:
    """Each GAM call tag's templates rendered with ``s`` as every input, for the health report's
    placeholder list (:mod:`clag.placeholders`)."""
    return {"gam_memorize": [memorize_prompt(s, s, as_json=True), memorize_prompt(s, s, as_json=False)],
            "gam_plan": [plan_prompt(s, s)], "gam_integrate": [integrate_prompt(s, s, s)],
            "gam_check": [info_check_prompt(s, s)], "gam_follow_up": [follow_up_prompt(s, s)]}
