"""The paper's answer step: one prompt per question category, the same for every method.

The prompts follow the structure and constraints of A-mem's / CLAG's evaluation script (worded
here in our own words): a short-phrase answer in the context's words (categories 1, 3, 4, all of
HotpotQA, BioASQ factoid); the approximate-date instruction for LoCoMo's temporal category 2; the
two-option choice for LoCoMo's adversarial category 5 ("not mentioned" vs the adversarial answer,
in an order that is random in the reference and seeded per question here); and CLAG's list
instructions for BioASQ list questions (category 6). JSON schema ``{"answer": string}``;
temperature 0.7, or 0.5 for category 5. The prediction is the parsed ``answer``, or the raw
text when the output does not parse (as the reference does; counted in the ledger).
"""

from __future__ import annotations

import random
from typing import Any

from clag.llm.client import LLMClient
from clag.llm.types import Request
from clag.prompt_sets import OwnPrompts, PromptSet
from clag.types import Question, Retrieval
from eval.method_run import Answer

NOT_MENTIONED_OPTION = "Not mentioned in the conversation"


def answer_schema(bounded: bool = True) -> dict[str, Any]:
    """``{"answer": string}``; bounded (maxLength) unless reproducing the reference's open schema."""
    answer: dict[str, Any] = {"type": "string"}
    if bounded:
        answer["maxLength"] = 300
    return {"type": "object", "properties": {"answer": answer}, "required": ["answer"],
            "additionalProperties": False}


def category5_options(question: Question, seed: int) -> tuple[str, str]:
    """The two options in a per-question seeded order (the reference draws it unseeded)."""
    if random.Random(f"{seed}:{question.id}").random() < 0.5:
        return NOT_MENTIONED_OPTION, question.answer
    return question.answer, NOT_MENTIONED_OPTION


def answer_prompt(question: Question, context: str, seed: int = 42, prompts: PromptSet | None = None) -> str:
    """The question's prompt in the given prompt set (this project's wording by default)."""
    options = category5_options(question, seed) if question.category == 5 else None
    return (prompts or OwnPrompts()).answer(question.category, context, question.text, options)


class PaperAnswerer:
    """Answers a question from a retrieval with the paper's prompts, through the LLM client."""

    def __init__(self, client: LLMClient, seed: int = 42, temperature: float = 0.7,
                 temperature_c5: float = 0.5, max_tokens: int = 1000, bounded_schema: bool = True,
                 prompts: PromptSet | None = None) -> None:
        self.client = client
        self.prompts = prompts or OwnPrompts()
        self.seed = seed
        self.temperature = temperature
        self.temperature_c5 = temperature_c5
        self.max_tokens = max_tokens
        self.schema = answer_schema(bounded_schema)

    def request(self, question: Question, retrieval: Retrieval) -> Request:
        temperature = self.temperature_c5 if question.category == 5 else self.temperature
        return Request(prompt=answer_prompt(question, retrieval.context, self.seed, self.prompts),
                       json_schema=self.schema, temperature=temperature,
                       max_tokens=self.max_tokens, tag="answer")

    def __call__(self, question: Question, retrieval: Retrieval) -> Answer:
        request = self.request(question, retrieval)
        completion = self.client.generate([request])[0]
        parsed = completion.parsed or {}
        value = parsed.get("answer")
        text = value if isinstance(value, str) else completion.text
        return Answer(text, {"prompt": request.prompt, "parsed": isinstance(value, str),
                             "finish_reason": completion.finish_reason})


class MemoryOSAnswerer:
    """MemoryOS's own answer step: its role-play system prompt (speaker B answering about A and B,
    with the assistant's knowledge) and its user prompt (the memory block built by
    :class:`baselines.memoryos.MemoryOSMemory`, the question, the brevity and date rules).

    The reference answers in plain text (temperature 0.7, up to 2,000 tokens);
    ``structured_output: schema`` asks for the same content as ``{"answer": string}`` like every
    other method here, ``text`` keeps the plain answer. ``list_instructions`` adds the list format
    to BioASQ list questions (category 6), which the reference never saw.
    """

    def __init__(self, client: LLMClient, seed: int = 42, temperature: float = 0.7, max_tokens: int = 2000,
                 structured_output: str = "schema", list_instructions: bool = True) -> None:
        if structured_output not in ("schema", "text"):
            raise ValueError(f"structured_output must be schema or text, not {structured_output!r}")
        self.client = client
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.structured_output = structured_output
        self.list_instructions = list_instructions

    def request(self, question: Question, retrieval: Retrieval) -> Request:
        from baselines import memoryos_prompts as prompts

        speaker_a, speaker_b = retrieval.debug.get("speakers") or ("User", "Assistant")
        knowledge = retrieval.debug.get("assistant_knowledge", ())
        system = prompts.answer_system_prompt(speaker_a, speaker_b, knowledge)
        user = prompts.answer_user_prompt(speaker_a, speaker_b, retrieval.context, question.text,
                                          list_question=self.list_instructions and question.category == 6)
        if self.structured_output == "schema":
            user += 'Reply with a JSON object {"answer": "<your answer>"}.'
        return Request(messages=(("system", system), ("user", user)), temperature=self.temperature,
                       max_tokens=self.max_tokens, tag="answer",
                       json_schema=answer_schema() if self.structured_output == "schema" else None)

    def __call__(self, question: Question, retrieval: Retrieval) -> Answer:
        request = self.request(question, retrieval)
        completion = self.client.generate([request])[0]
        value = (completion.parsed or {}).get("answer")
        text = value if isinstance(value, str) else completion.text.strip()
        return Answer(text, {"prompt": request.messages, "parsed": isinstance(value, str),
                             "finish_reason": completion.finish_reason})
