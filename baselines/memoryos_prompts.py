"""MemoryOS's prompts and output schemas (its LoCoMo evaluation code, baselines.md §4).

Each prompt keeps the purpose, inputs, fields and limits of the reference (``eval/utils.py``,
``dynamic_update.py``, ``main_loco_parse.py``), in our own wording. Dialogue lines carry the
speakers' names where the reference writes "User"/"Assistant", because a page here may open
with either speaker (see the pairing rule in :mod:`baselines.memoryos`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clag.prompts import array_of, object_of, text_field

#: the reference's cap on themes per multi-topic summary
MAX_THEMES = 2


def continuity_prompt(previous: str, current: str, as_json: bool = True) -> str:
    reply = ('Reply with a JSON object {"continuous": true} or {"continuous": false}.' if as_json
             else 'Answer only "true" or "false".')
    return (
        "Do these two pieces of conversation continue each other directly, with no change of "
        f"topic? {reply}\n\n"
        f"Previous page:\n{previous}\n\nCurrent page:\n{current}\n\nContinuous?"
    )


def continuity_schema() -> dict[str, Any]:
    return object_of({"continuous": {"type": "boolean"}})


def meta_info_prompt(previous_meta: str | None, dialogue: str) -> str:
    return (
        "Keep a running meta-summary of a conversation up to date.\n"
        "1. Start from the previous meta-summary, if there is one.\n"
        "2. Add or change what the new dialogue tells.\n"
        "3. At most one or two sentences.\n"
        "4. Stay coherent with the earlier context.\n"
        "Output only the updated meta-summary.\n\n"
        f"Previous meta-summary: {previous_meta or 'None'}\n"
        f"New dialogue:\n{dialogue}\n\n"
        "Updated meta-summary:"
    )


def multi_summary_prompt(text: str) -> str:
    return (
        f"Split the conversation below into at most {MAX_THEMES} topics. For each topic give a short "
        "theme name, a few keywords and a one- or two-sentence summary of what was said about it.\n\n"
        f"Conversation:\n{text}\n\n"
        'Reply with a JSON object {"summaries": [{"theme": "...", "keywords": ["..."], '
        '"content": "..."}]}.'
    )


def multi_summary_schema(bounded: bool = True) -> dict[str, Any]:
    theme = object_of({"theme": text_field(bounded, 80),
                       "keywords": array_of(text_field(bounded, 40), bounded, 8),
                       "content": text_field(bounded, 400)})
    return object_of({"summaries": array_of(theme, bounded, MAX_THEMES)})


def keywords_prompt(text: str) -> str:
    return (
        "List the keywords of the text below: the names, objects, activities and concepts that "
        "someone would search for.\n\n"
        f"Text:\n{text}\n\n"
        'Reply with a JSON object {"keywords": ["...", "..."]}.'
    )


def keywords_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"keywords": array_of(text_field(bounded, 40), bounded, 10)})


def profile_prompt(dialogue: str) -> str:
    return (
        "Analyse the conversation below to describe the user (the first speaker of each exchange).\n"
        "profile: the user's personality, preferences, interests and way of talking, in four short "
        "sections.\n"
        "user_facts: concrete facts about the user's life (events, people, places, plans, "
        "possessions, dates), one fact per item, each understandable on its own.\n\n"
        f"Conversation:\n{dialogue}\n\n"
        'Reply with a JSON object {"profile": "...", "user_facts": ["...", "..."]}.'
    )


def profile_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"profile": text_field(bounded, 800),
                      "user_facts": array_of(text_field(bounded, 200), bounded, 10)})


def assistant_knowledge_prompt(dialogue: str) -> str:
    return (
        "From the conversation below, list what the assistant (the replying speaker) said about "
        "itself: its own experiences, activities, opinions and plans, one fact per item.\n\n"
        f"Conversation:\n{dialogue}\n\n"
        'Reply with a JSON object {"assistant_facts": ["...", "..."]}.'
    )


def assistant_knowledge_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"assistant_facts": array_of(text_field(bounded, 200), bounded, 5)})


def profile_merge_prompt(old: str, new: str) -> str:
    return (
        "Merge two descriptions of the same user into one. Keep everything still true, add what is "
        "new, resolve contradictions in favour of the newer description, and keep the four "
        "sections.\n\n"
        f"Current profile:\n{old}\n\nNew analysis:\n{new}\n\n"
        'Reply with a JSON object {"profile": "..."}.'
    )


def profile_merge_schema(bounded: bool = True) -> dict[str, Any]:
    return object_of({"profile": text_field(bounded, 800)})


# ---------------------------------------------------------------------------- answer


def answer_system_prompt(speaker_a: str, speaker_b: str, assistant_knowledge: Sequence[str]) -> str:
    knowledge = "".join(f"- {k}\n" for k in assistant_knowledge)
    return (
        f"You play {speaker_b}, talking with {speaker_a}, who plays the user. What you know about "
        f"yourself:\n【Assistant Knowledge】\n{knowledge}\n"
        f"Wherever the prompt says 'User' it means {speaker_a}; 'AI' or 'assistant' means {speaker_b}. "
        f"Answer questions about {speaker_a} or {speaker_b} as briefly as possible.\n"
        'For example, to "What did the charity race raise awareness for?" answer "mental health", '
        'not "The charity race raised awareness for mental health."'
    )


def answer_user_prompt(speaker_a: str, speaker_b: str, memory: str, question: str,
                       list_question: bool = False) -> str:
    form = ("This question asks for a list: give every item the memory supports, separated by "
            "semicolons (item1 ; item2 ; item3), and nothing else.\n" if list_question else "")
    return (
        f"{memory}\n"
        f"The question is: {question}\n"
        f"Answer the question about {speaker_a} or {speaker_b} as briefly as possible, with the "
        "answer's content only (no 'answer:' prefix).\n"
        'Give dates strictly like "15 July 2023", and a specific date where you can: for '
        '"last year" give that year. Give only one year, date or time, nothing else.\n'
        "For a duration, answer in years, months or days.\n"
        "Prefer concrete entities, such as: Mentoring program, school speech.\n"
        f"{form}"
    )


def memory_block(speaker_a: str, speaker_b: str, history: str, retrieved: str, background: str) -> str:
    """The <CONTEXT>/<MEMORY>/<CHARACTER TRAITS> sections of the reference's user prompt."""
    return (
        f"<CONTEXT>\nRecent conversation between {speaker_a} and {speaker_b}:\n{history}\n\n"
        f"<MEMORY>\nRelevant past conversations:\n{retrieved}\n\n"
        f"<CHARACTER TRAITS>\nCharacteristics of {speaker_a}:\n{background}\n"
    )


def template_renders(s: str) -> dict[str, list[str]]:
    """Each MemoryOS call tag's templates rendered with ``s`` as every input, for the health
    report's placeholder list (:mod:`clag.placeholders`); its answer step's too."""
    keywords = [keywords_prompt(s)]
    return {"memoryos_continuity": [continuity_prompt(s, s, as_json=True),
                                    continuity_prompt(s, s, as_json=False)],
            "memoryos_meta": [meta_info_prompt(s, s), meta_info_prompt(None, s)],
            "memoryos_summary": [multi_summary_prompt(s)],
            "memoryos_keywords": keywords, "memoryos_page_keywords": keywords,
            "memoryos_query_keywords": keywords,
            "memoryos_profile": [profile_prompt(s)], "memoryos_assistant": [assistant_knowledge_prompt(s)],
            "memoryos_profile_merge": [profile_merge_prompt(s, s)],
            "answer": [answer_system_prompt(s, s, [s]), answer_user_prompt(s, s, s, s),
                       answer_user_prompt(s, s, s, s, list_question=True)
                       + 'Reply with a JSON object {"answer": "<your answer>"}.']}
