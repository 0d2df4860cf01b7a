"""The decoding policy: one statement of how every backend turns a request into tokens.

A number from this harness must not depend on which backend produced it, so everything that
shapes decoding beyond the request itself lives here and every backend reads it from here:

- **sampling filters** — ``top_p``/``top_k``/``min_p``/``repetition_penalty``. The defaults are
  neutral, as on the paper's SGLang path (top_p 1, no top-k, no min-p, no penalty). Servers get
  them explicitly: left out, a server applies the model's own ``generation_config`` (Qwen3:
  top-k 20, top-p 0.95) while the in-process backends would sample neutrally.
- **stop tokens** — the model's generation config when it lists them (Qwen3 ends on several),
  else the tokenizer's end token; ``stop_token_ids`` adds more.
- **thinking** — off for chat prompts on every backend (the template's ``enable_thinking``; on
  servers ``chat_template_kwargs``); a reasoning block that still appears is stripped once, by
  the client (:func:`strip_reasoning`).
- **chat rendering** — one renderer (:func:`render_chat`) for every backend that renders locally,
  so a chat request becomes the same text on ``hf`` and ``llamacpp``; servers render with the
  same template and the same ``enable_thinking``.
- **repetition window** — ``repeat_last_n``: how many of the last tokens the repetition penalty
  looks at. ``None``: all of them, as transformers does; llama.cpp's servers default to 64.
  ``repeat_window_includes_prompt`` says whether that window reaches back into the prompt:
  transformers, vLLM, SGLang and llama.cpp's own server count the prompt's tokens (the server
  replays the prompt into its sampler), llama-cpp-python counts only the tokens it generated
  (its ``Llama.generate`` never feeds the prompt to the sampler). No backend can do both, so a
  policy with a penalty goes only to a backend that honours its window (``hf`` does either).
- **grammar whitespace** — ``max_whitespace`` caps the whitespace a JSON grammar allows between
  tokens (``None``: unbounded, as servers' xgrammar and the reference) and ``whitespace_chars``
  says which characters count (llama-cpp-python's converter allows one optional space and no
  newline: ``max_whitespace=1, whitespace_chars=" "``). The cap must admit a model's natural
  indentation: Qwen-family models indent nested arrays by newline + 8 spaces, and a cap of 4 made
  them close every array at once (empty keyword lists).

Named sets of these values are the ``decoding`` config group's presets (``configs/decoding/``):
``neutral`` (the paper's SGLang path), ``llama-cpp-python`` (that server's defaults for a request
that leaves sampling out) and ``generation-config`` (the model's own ``generation_config``, as
vLLM's and SGLang's chat endpoints apply it). A preset is only a name; the values are the policy.

The policy is part of every backend's cache identity and is written to ``ledger.json`` and
``env.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from functools import lru_cache
from typing import Any

from clag.errors import UserFacingError

#: bump when what a policy means changes (its fields' effect on decoding), so old cache entries die
POLICY_VERSION = "dp1"

#: the default whitespace cap: admits three levels of 4-space indentation after a newline
DEFAULT_MAX_WHITESPACE = 16

#: the characters a JSON grammar admits between tokens unless the policy says fewer
DEFAULT_WHITESPACE_CHARS = " \t\n"

#: the sampling keys a model's ``generation_config`` may set (what vLLM and SGLang read from it)
GENERATION_CONFIG_KEYS = ("top_p", "top_k", "min_p", "repetition_penalty")

#: the preset that takes its values from the model's recorded ``generation_config``
FROM_MODEL_PRESET = "generation-config"


@dataclass(frozen=True)
class DecodingPolicy:
    """How a backend decodes, beyond what each request says (prompt, schema, temperature, seed)."""

    top_p: float = 1.0
    top_k: int = 0                      # 0: off
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    max_whitespace: int | None = DEFAULT_MAX_WHITESPACE
    whitespace_chars: str = DEFAULT_WHITESPACE_CHARS
    repeat_last_n: int | None = None    # None: the whole sequence
    repeat_window_includes_prompt: bool = True   # False: only generated tokens (llama-cpp-python)
    enable_thinking: bool = False
    stop_token_ids: tuple[int, ...] = field(default_factory=tuple)   # added to the model's own

    def __post_init__(self) -> None:
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], not {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be 0 (off) or positive, not {self.top_k}")
        if not 0.0 <= self.min_p < 1.0:
            raise ValueError(f"min_p must be in [0, 1), not {self.min_p}")
        if self.repetition_penalty <= 0:
            raise ValueError(f"repetition_penalty must be positive, not {self.repetition_penalty}")
        if self.max_whitespace is not None and self.max_whitespace < 0:
            raise ValueError(f"max_whitespace must be null or at least 0, not {self.max_whitespace}")
        if not self.whitespace_chars or set(self.whitespace_chars) - set(" \t\n\r"):
            raise ValueError(f"whitespace_chars must be some of space, tab, newline and return, "
                             f"not {self.whitespace_chars!r}")
        if self.repeat_last_n is not None and self.repeat_last_n < 1:
            raise ValueError(f"repeat_last_n must be null (the whole sequence) or positive, "
                             f"not {self.repeat_last_n}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> DecodingPolicy:
        """The policy an ``llm`` config states; keys it leaves out keep the neutral defaults.

        Under ``decoding: generation-config`` the sampling keys the config leaves null come from
        the model's recorded ``generation_config`` (a model without one is a one-line error)."""
        values: dict[str, Any] = {}
        if cfg.get("decoding") == FROM_MODEL_PRESET:
            recorded = cfg.get("generation_config")
            if recorded is None:
                raise UserFacingError(
                    f"decoding={FROM_MODEL_PRESET}: llm={cfg.get('name')} records no generation_config "
                    "(its sampling values); state them under llm.generation_config or pick another preset")
            values.update({k: v for k, v in dict(recorded).items() if k in GENERATION_CONFIG_KEYS})
        for f in fields(cls):
            if f.name in cfg and cfg[f.name] is not None:
                values[f.name] = cfg[f.name]
        for name in ("max_whitespace", "repeat_last_n"):
            if name in cfg and cfg[name] is None:
                values[name] = None
        if "repeat_last_n" in values and values["repeat_last_n"] is not None:
            values["repeat_last_n"] = int(values["repeat_last_n"])
        for name, kind in (("top_p", float), ("min_p", float), ("repetition_penalty", float),
                           ("top_k", int)):
            if name in values:
                values[name] = kind(values[name])
        if "max_whitespace" in values and values["max_whitespace"] is not None:
            values["max_whitespace"] = int(values["max_whitespace"])
        for name in ("enable_thinking", "repeat_window_includes_prompt"):
            if name in values:
                values[name] = bool(values[name])
        if "stop_token_ids" in values:
            values["stop_token_ids"] = tuple(int(t) for t in values["stop_token_ids"])
        return cls(**values)

    def identity(self) -> str:
        """A compact string for cache keys and model ids: two policies that decode differently
        never share a cached completion."""
        ws = "inf" if self.max_whitespace is None else str(self.max_whitespace)
        stops = ",".join(str(t) for t in self.stop_token_ids)
        identity = (f"{POLICY_VERSION}:p{self.top_p:g}:k{self.top_k}:m{self.min_p:g}:"
                    f"r{self.repetition_penalty:g}:ws{ws}:think{int(self.enable_thinking)}:stop[{stops}]")
        # fields added later are named only when they differ from what older identities meant
        if self.whitespace_chars != DEFAULT_WHITESPACE_CHARS:
            identity += ":wschars[" + self.whitespace_chars.encode("unicode_escape").decode() + "]"
        if self.repeat_last_n is not None:
            identity += f":last{self.repeat_last_n}"
        if not self.repeat_window_includes_prompt:
            identity += ":genwin"
        return identity

    @property
    def penalises(self) -> bool:
        return self.repetition_penalty != 1.0

    def penalty_window_error(self, engine: str, counts_prompt: bool) -> str | None:
        """Why ``engine``, whose repetition window does (``counts_prompt``) or does not reach
        into the prompt, cannot decode this policy; ``None`` when it can."""
        if not self.penalises or self.repeat_window_includes_prompt == counts_prompt:
            return None
        if counts_prompt:
            return (f"{engine} counts the prompt's tokens in the repetition penalty's window, and this "
                    "policy counts only generated ones (llm.repeat_window_includes_prompt=false, as "
                    "llama-cpp-python does): run it on llama-cpp-python in process (llm.backend=llamacpp "
                    "llm.server=null) or on hf")
        return (f"{engine} counts only generated tokens in the repetition penalty's window, and this "
                "policy counts the prompt's too (llm.repeat_window_includes_prompt=true): set it to "
                "false to decode as llama-cpp-python does, or run on hf or a server")

    def to_dict(self) -> dict[str, Any]:
        report = asdict(self)
        report["stop_token_ids"] = list(self.stop_token_ids)
        report["version"] = POLICY_VERSION
        return report

    def server_sampling(self) -> dict[str, Any]:
        """The filters as an OpenAI-compatible server's extra body takes them. ``top_k: -1`` is
        "off" on vLLM, SGLang and llama.cpp's server alike (SGLang rejects 0). The repetition
        window (``repeat_last_n``, llama.cpp's name) is sent only when set: vLLM and SGLang have no
        window and penalise the whole sequence; llama-server's dialect sends its slot's context
        for "the whole sequence" (it rejects llama.cpp's -1)."""
        sampling: dict[str, Any] = {"top_k": self.top_k if self.top_k > 0 else -1, "min_p": self.min_p,
                                    "repetition_penalty": self.repetition_penalty}
        if self.repeat_last_n is not None:
            sampling["repeat_last_n"] = self.repeat_last_n
        return sampling

    def chat_template_kwargs(self) -> dict[str, Any]:
        return {"enable_thinking": self.enable_thinking}


def sampling_report(policy: DecodingPolicy, request: Any, prompt: str,
                    stops: Sequence[int]) -> dict[str, Any]:
    """What decodes ``request`` on a backend that renders locally, in the terms every backend
    reports (the conformance tests compare these)."""
    return {"prompt": prompt, "stop_token_ids": list(stops), "temperature": request.temperature,
            "top_p": policy.top_p, "top_k": policy.top_k, "min_p": policy.min_p,
            "repetition_penalty": policy.repetition_penalty, "seed": request.seed,
            "max_tokens": request.max_tokens, "max_whitespace": policy.max_whitespace,
            "whitespace_chars": policy.whitespace_chars, "repeat_last_n": policy.repeat_last_n,
            "repeat_window_includes_prompt": policy.repeat_window_includes_prompt}


# ---- reasoning ----------------------------------------------------------------------------------

THINK_END = "</think>"


def strip_reasoning(text: str) -> str:
    """What follows a reasoning block (``… </think>``), or the text unchanged when it has none.

    Qwen3 with thinking off still opens its reply with an empty ``<think></think>`` on some
    paths, and GAM's reference parses what follows the block: done once, for every caller."""
    if THINK_END not in text:
        return text
    return text.rsplit(THINK_END, 1)[-1].lstrip()


# ---- stop tokens --------------------------------------------------------------------------------

def _as_ids(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def stop_token_ids(generation_eos: Any, tokenizer_eos: int | None,
                   extra: Sequence[int] = ()) -> tuple[int, ...]:
    """The ids that end a completion: the model's generation config's ``eos_token_id`` (an id or
    a list), else the tokenizer's end token, plus the policy's extras — deduplicated, in order."""
    ids = _as_ids(generation_eos) or _as_ids(tokenizer_eos)
    ordered: list[int] = []
    for token in [*ids, *extra]:
        if token not in ordered:
            ordered.append(int(token))
    return tuple(ordered)


# ---- chat rendering -----------------------------------------------------------------------------

@lru_cache(maxsize=16)
def _compiled(template: str) -> Any:
    """A chat template compiled the way transformers compiles it (sandboxed Jinja, trimmed blocks)."""
    from jinja2 import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None,
               separators: Any = None, sort_keys: bool = False) -> str:
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(template)


def render_chat(template: str, messages: Sequence[Mapping[str, str]], *, bos_token: str = "",
                eos_token: str = "", enable_thinking: bool = False) -> str:
    """Chat messages as the text a model completes: the template with the generation prompt,
    thinking as the policy says. Every backend that renders locally calls this."""
    return _compiled(template).render(messages=[dict(m) for m in messages], add_generation_prompt=True,
                                      bos_token=bos_token, eos_token=eos_token,
                                      enable_thinking=enable_thinking)
