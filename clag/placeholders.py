"""The example values a prompt set shows its model, derived from its templates.

Small models copy the JSON examples and format hints of their prompts: `keyword1, keyword2`,
`tag_1`, `...your one-sentence summary here...`. To count such copies, the list of what a
prompt shows must follow the templates, not a hand-kept list: each template is rendered with a
sentinel in place of every input, and every double-quoted string left in the render that does not
contain the sentinel is something the template itself shows — a JSON key, an example value or a
hint. A changed template changes the list.

Values are compared *normalised*: lower case, outer spaces dropped, every run of digits read as
one digit placeholder, so `keyword4` (the model extrapolating the example) matches `keyword1`
and `tag_7` matches `tag_1`; a comma- or semicolon-separated value is also split into parts, so
`"keyword1, keyword2, keyword3"` yields `keyword#`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from clag.prompt_sets import PromptSet
from clag.types import MemorySystem

SENTINEL = "\u241f"                      # SYMBOL FOR UNIT SEPARATOR: in no template
QUOTED = re.compile(r'"((?:[^"\\\n]|\\.)*)"')

#: call tags whose replies name cluster ids: their example ids are checked against the real
#: candidates by the method (a routing answer equal to the example id, a selection naming a
#: cluster that does not exist), not as placeholders — a real cluster may be called `cluster_1`
ID_TAGS = ("route", "select")


def normalise(value: str) -> str:
    return re.sub(r"\d+", "#", value.strip().strip(".,;:!?'\"` ").lower()).strip()


def parts(value: str) -> list[str]:
    """The value and, when it is a list written as text, its items."""
    items = [value, *re.split(r"[,;]", value)] if re.search(r"[,;]", value) else [value]
    return [n for n in (normalise(item) for item in items) if n]


def template_renders(prompts: PromptSet) -> dict[str, list[str]]:
    """Each call tag's templates, rendered with the sentinel as every input (routing and
    selection show cluster ids: :data:`ID_TAGS`)."""
    s = SENTINEL
    return {
        "note": [prompts.analysis(s)],
        "evolve": [prompts.evolution(s, s, [s], s, 1)],
        "keywords": [prompts.query_keywords(s, s)],
        "profile": [prompts.profile([(s, s, [s])])],
        "answer": [prompts.answer(category, s, s, (s, s) if category == 5 else None)
                   for category in (1, 2, 3, 4, 5, 6)],
    }


def shown_values(renders: Iterable[str]) -> list[str]:
    """Every quoted example value a render shows that is not an input, normalised, without
    repeats. Not counted: JSON keys (a quoted string followed by ``:``), and single words the
    prose also names outside quotes — the choices a template offers, such as the evolution's
    ``strengthen`` / ``update_neighbor``, are answers, not placeholders; nor are quoted
    alternatives (``"true" or "false"``) and format examples with free-standing numbers
    (``"15 July 2023"``: a real date answer has the same shape). Numbered names such as
    ``keyword1`` or ``tag_1`` are placeholders."""
    found: dict[str, None] = {}
    for render in renders:
        prose = QUOTED.sub(" ", render).lower()
        for match in QUOTED.finditer(render):
            literal = match.group(1)
            if SENTINEL in literal or re.match(r"\s*:", render[match.end():]):
                continue
            word = literal.strip().lower()
            if " " not in word and re.search(rf"(?<![\w\-]){re.escape(word)}(?![\w\-])", prose):
                continue
            if " " not in word and (render[match.end():].startswith(' or "')
                                    or render[:match.start()].endswith('" or ')):
                continue        # offered choices ("true" or "false") are answers, not examples
            if re.search(r"(?<![\w])\d+(?![\w])", literal):
                continue        # a format example ("15 July 2023"): real answers share its shape
            for part in parts(literal):
                if part not in ("...", "#", "…") and re.search(r"\w", part):
                    found[part] = None
    return list(found)


def placeholders(prompts: PromptSet) -> dict[str, list[str]]:
    """``{call tag: normalised values its templates show}`` for a prompt set."""
    return {tag: shown_values(renders) for tag, renders in template_renders(prompts).items()}


def method_placeholders(memory_class: type[MemorySystem]) -> dict[str, list[str]]:
    """``{call tag: values}`` for a memory system's own calls, from its ``prompt_templates``
    (a function of the sentinel giving each tag's renders); empty for one without."""
    return {tag: shown_values(texts) for tag, texts in memory_class.prompt_templates(SENTINEL).items()}


def reply_values(reply: Any) -> list[str]:
    """Every string value of a parsed reply (keys are the schema's, not the model's)."""
    if isinstance(reply, str):
        return [reply]
    if isinstance(reply, dict):
        return [v for value in reply.values() for v in reply_values(value)]
    if isinstance(reply, list):
        return [v for value in reply for v in reply_values(value)]
    return []


def copied(reply: Any, shown: Iterable[str]) -> list[str]:
    """The values of ``reply`` that repeat one the prompt showed (normalised), in reply order."""
    wanted = set(shown)
    return [value for value in reply_values(reply) if wanted.intersection(parts(value))]
