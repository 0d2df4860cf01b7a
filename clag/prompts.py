"""Prompts and JSON schemas of the note machinery (A-mem) and of CLAG's cluster calls.

Each prompt keeps the structure, fields and constraints of the reference (A-mem's
``memory_layer.py``, CLAG's ``CLAG_memory.py``), in our own wording. Schemas come in two forms:
``bounded`` (maxItems/maxLength: small models otherwise loop inside JSON until the token cap)
and the reference's open form (``bounded=False``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: the example id the reference's routing prompt shows; small models copy it (clag.md §15)
REFERENCE_ROUTE_EXAMPLE = "cluster_1"


def array_of(items: dict[str, Any], bounded: bool, max_items: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items}
    if bounded:
        schema["maxItems"] = max_items
    return schema


def text_field(bounded: bool, max_length: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length} if bounded else {"type": "string"}


def object_of(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


# ---------------------------------------------------------------------------- note analysis


def analysis_schema(bounded: bool = True) -> dict[str, Any]:
    word = text_field(bounded, 40)
    return object_of({"keywords": array_of(word, bounded, 8), "context": text_field(bounded, 300),
                    "tags": array_of(word, bounded, 8)})


def analysis_prompt(content: str) -> str:
    return (
        "Produce a structured analysis of the content below:\n"
        "1. Pick out its most important keywords (nouns, verbs and key concepts).\n"
        "2. Extract its central themes and context.\n"
        "3. Assign categorical tags.\n\n"
        "Answer with a JSON object:\n"
        "{\n"
        '    "keywords": [\n'
        "        // several specific, distinct keywords naming its key concepts and terms,\n"
        "        // most important first; no speaker names, no times;\n"
        "        // at least three, without redundancy\n"
        "    ],\n"
        '    "context":\n'
        "        // one sentence covering the main topic or domain, the key points,\n"
        "        // and the intended audience or purpose\n"
        "    ,\n"
        '    "tags": [\n'
        "        // several broad categories or themes for classifying it:\n"
        "        // domain, format and type; at least three, without redundancy\n"
        "    ]\n"
        "}\n\n"
        f"Content for analysis:\n{content}"
    )


# ---------------------------------------------------------------------------- evolution


#: the order the reference's schema lists the evolution fields in (``new_context_neighborhood``
#: before ``tags_to_update``); under constrained decoding that is the order the model writes them
REFERENCE_EVOLUTION_ORDER = ("should_evolve", "actions", "suggested_connections", "new_context_neighborhood",
                             "tags_to_update", "new_tags_neighborhood")


#: the reference schema's ``required`` list, in its own order (``tags_to_update`` before
#: ``new_context_neighborhood``, unlike its properties): decoding ignores it, byte-equal requests do not
REFERENCE_EVOLUTION_REQUIRED = ("should_evolve", "actions", "suggested_connections", "tags_to_update",
                                "new_context_neighborhood", "new_tags_neighborhood")


def evolution_schema(bounded: bool = True, key_order: str = "project") -> dict[str, Any]:
    """``key_order="reference"`` lists the fields in the reference schema's order."""
    word = text_field(bounded, 40)
    sentence = text_field(bounded, 300)
    fields = {
        "should_evolve": {"type": "boolean"},
        "actions": array_of(text_field(bounded, 20), bounded, 2),
        "suggested_connections": array_of({"type": "integer"}, bounded, 5),
        "tags_to_update": array_of(word, bounded, 8),
        "new_context_neighborhood": array_of(sentence, bounded, 5),
        "new_tags_neighborhood": array_of(array_of(word, bounded, 8), bounded, 5),
    }
    if key_order == "reference":
        schema = object_of({name: fields[name] for name in REFERENCE_EVOLUTION_ORDER})
        schema["required"] = list(REFERENCE_EVOLUTION_REQUIRED)
        return schema
    if key_order != "project":
        raise ValueError(f"key_order must be project or reference, not {key_order!r}")
    return object_of(fields)


def neighbour_line(index: int, timestamp: str, content: str, context: str,
                   keywords: Sequence[str], tags: Sequence[str]) -> str:
    """One neighbour as the evolution prompt lists it (global position first)."""
    return (f"memory index:{index}\t talk start time:{timestamp}\t memory content: {content}\t "
            f"memory context: {context}\t memory keywords: {list(keywords)}\t memory tags: {list(tags)}\n")


def evolution_prompt(context: str, content: str, keywords: Sequence[str], neighbours: str,
                     neighbour_count: int) -> str:
    return (
        "You are an AI agent that maintains and evolves a knowledge base of memories.\n"
        "Study the new memory note (its keywords and context) together with its nearest neighbour "
        "memories, and decide how it should evolve.\n\n"
        f"Context of the new memory:\n{context}\n"
        f"content: {content}\n"
        f"keywords: {list(keywords)}\n\n"
        f"Nearest neighbour memories:\n{neighbours}\n"
        "From this, decide:\n"
        "1. Should the memory evolve? Weigh how it relates to the other memories.\n"
        "2. Which actions to take (strengthen, update_neighbor)?\n"
        "   2.1 strengthen: which memories should it be linked to (their memory index), and what "
        "are its updated tags?\n"
        "   2.2 update_neighbor: rewrite the context and tags of the neighbours from your "
        "understanding of them; a neighbour that needs no change keeps its original context and "
        "tags. Give the new contexts and tags in the same order as the neighbours above.\n"
        "Tags should capture what characterises each memory, so it can be found and categorised "
        "later.\n"
        "new_tags_neighborhood and new_context_neighborhood must each have exactly one entry per "
        f"neighbour. There are {neighbour_count} neighbours.\n"
        "Reply in JSON with this structure:\n"
        "{\n"
        '    "should_evolve": true or false,\n'
        '    "actions": ["strengthen", "update_neighbor"],\n'
        '    "suggested_connections": [neighbour memory indices],\n'
        '    "tags_to_update": ["tag_1", ..., "tag_n"],\n'
        '    "new_context_neighborhood": ["new context", ..., "new context"],\n'
        '    "new_tags_neighborhood": [["tag_1", ..., "tag_n"], ..., ["tag_1", ..., "tag_n"]]\n'
        "}"
    )


# ---------------------------------------------------------------------------- query keywords


def keywords_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"keywords": text_field(bounded, 200)})


def keywords_prompt(question: str, separator_word: str = "commas") -> str:
    """``separator_word="cosmos"`` reproduces A-mem's typo; CLAG fixed it to "commas"."""
    return (
        f"For the question below, write several keywords separated by '{separator_word}'.\n\n"
        f"Question: {question}\n\n"
        'Reply with a JSON object whose "keywords" field holds them.\n\n'
        "Example reply:\n"
        '{"keywords": "keyword1, keyword2, keyword3"}'
    )


# ---------------------------------------------------------------------------- CLAG clusters


def cluster_block(cid: str, summary: str, tags: Sequence[str], examples: Sequence[str],
                  size: int | None = None) -> str:
    """One candidate cluster as routing (with size) and selection prompts list it."""
    lines = [f"- cluster_id: {cid}"]
    if size is not None:
        lines.append(f"  size: {size}")
    lines += [f"  summary: {summary}", f"  tags: {list(tags)}", "  representative_memories:"]
    lines += [f"- {e}" for e in examples]
    return "\n".join(lines) + "\n"


def kmeans_summary(top_tags: Sequence[str], contexts: Sequence[str]) -> str:
    """A K-Means cluster's summary before its first profile: its commonest tags, else its first
    member's context (cut at 120 characters, as the reference), else a generic line."""
    if top_tags:
        return f"Memories about: {', '.join(top_tags)}"
    if contexts:
        return contexts[0][:120]
    return "Memories with similar meaning."


SINGLE_CLUSTER_SUMMARY = "One cluster holding every memory."


def new_cluster_summary(tags: Sequence[str], context: str) -> str:
    """The summary of a cluster one note opens: its tags, else the start of its context."""
    return f"A cluster begun by: {', '.join(tags) or context[:50]}"


def _id_schema(bounded: bool, candidates: Sequence[str] | None) -> dict[str, Any]:
    if candidates:
        return {"type": "string", "enum": list(candidates)}
    return text_field(bounded, 64)


def route_schema(bounded: bool = True, candidates: Sequence[str] | None = None) -> dict[str, Any]:
    """``candidates`` turns the choice into an enum of the candidate ids (a repair, off by default)."""
    return object_of({"choice": _id_schema(bounded, candidates)})


def route_prompt(content: str, context: str, tags: Sequence[str], candidates_text: str,
                 example_id: str = REFERENCE_ROUTE_EXAMPLE) -> str:
    return (
        "You are an assistant that routes memories into clusters.\n\n"
        "A new memory has arrived:\n"
        f"- Content: {content}\n"
        f"- Context: {context}\n"
        f"- Tags: {list(tags)}\n\n"
        "Candidate clusters that may relate to it (pre-selected by vector similarity):\n"
        f"{candidates_text}\n"
        "Your task:\n"
        "1. Study the topics and contexts of the candidate clusters above.\n"
        "2. Pick the one `cluster_id` whose meaning and theme fit the new memory best.\n"
        "3. You MUST pick exactly one cluster_id from the candidate list.\n\n"
        "Reply with a JSON object only:\n"
        "{\n"
        f'"choice": "{example_id}"\n'
        "}"
    )


def profile_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"summary": text_field(bounded, 300),
                      "tags": array_of(text_field(bounded, 40), bounded, 3)})


def profile_prompt(samples: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """``samples``: (content, context, tags) of the members nearest the cluster centre."""
    text = "\n".join(f"- content: {c}\n  context: {ctx}\n  tags: {list(t)}\n" for c, ctx, t in samples)
    return (
        "You are an assistant that describes clusters of memories.\n\n"
        "The memory snippets below all belong to the SAME cluster:\n\n"
        f"{text}\n"
        "Your task:\n"
        "1. Write ONE short sentence that best states the cluster's main topic.\n"
        "2. Give EXACTLY 3 tags.\n"
        "- Each tag is a single word.\n"
        "- No tag may repeat.\n\n"
        "Reply with a JSON object only, with these KEYS (a schema, not the content):\n\n"
        "{\n"
        '    "summary": "...the one-sentence summary...",\n'
        '    "tags": ["tag_1", "tag_2", "tag_3"]\n'
        "}"
    )


def selection_schema(bounded: bool = True, max_selected: int = 10,
                     candidates: Sequence[str] | None = None) -> dict[str, Any]:
    return object_of({"selected_clusters": array_of(_id_schema(bounded, candidates), bounded, max_selected)})


def selection_prompt(query: str, query_tags: Sequence[str], candidates_text: str,
                     max_selected: int = 10) -> str:
    return (
        "You are an AI memory router: you choose the memory clusters most relevant to a query.\n"
        "You get several candidate clusters, each with:\n"
        "- cluster_id\n"
        "- a one-sentence summary\n"
        "- optional tags\n"
        "- one or more representative memories\n\n"
        "Your task:\n"
        "1. Study the user query and its query_tags.\n"
        "2. Judge how relevant each candidate cluster is.\n"
        f"3. Decide how many clusters are really needed: return between 0 and {max_selected}.\n"
        "   - If one cluster clearly suffices to answer the query, return only that one.\n"
        "   - Add further clusters only when they are needed to answer it.\n"
        "4. If no cluster is meaningfully related, return an empty list.\n\n"
        "Reply with JSON only, in this format:\n"
        "{\n"
        '  "selected_clusters": ["cluster_id_1", "cluster_id_2"]\n'
        "}\n"
        "When no cluster is relevant, reply:\n"
        "{\n"
        '  "selected_clusters": []\n'
        "}\n\n"
        f"User query: {query}\n"
        f"Query tags: {list(query_tags)}\n\n"
        "Candidate clusters:\n"
        f"{candidates_text}"
    )


# ---------------------------------------------------------------------------- answers


def answer_prompt(category: int, context: str, question: str, options: tuple[str, str] | None = None) -> str:
    """The paper's answer prompt for a question category: a short phrase in the context's words
    (1, 3, 4), the approximate date (2), the two-option choice (5: ``options`` in their order),
    the list format (6)."""
    q = question
    if category == 5:
        if options is None:
            raise ValueError("a category-5 answer prompt needs its two options")
        first, second = options
        return (f"Given the context: {context}, answer this question. {q}\n\n"
                f"Choose the right answer: {first} or {second} Short answer:")
    if category == 2:
        return (f"Given the context: {context}, answer the question below. Use the DATE of the "
                "CONVERSATION to give an approximate date.\nKeep the answer as short as possible, "
                "reuse the conversation's own words where you can, and leave out any subject.\n\n"
                f"Question: {q} Short answer:")
    if category == 6:
        return ("Answer the question from the context below.\n\n"
                "This is a LIST question:\n"
                "- Give EVERY distinct answer item that the context supports.\n"
                "- Separate the items with semicolons, using the context's EXACT words where possible.\n"
                "- Use exactly this format: item1 ; item2 ; item3\n"
                "- No numbering, commas, bullet points or any other text.\n"
                "- With a single item, output only that item.\n\n"
                f"Context:\n{context}\n\nQuestion: {q}\nAnswer:")
    return (f"Given the context: {context}, give a short-phrase answer to the question below, "
            "reusing the context's exact words wherever possible.\n\n"
            f"Question: {q} Short answer:")
