"""Request formats (``profile.request_format``) and decoding presets (``decoding=…``): each format
sends what the reference's controller sends for a note, on every backend, and each preset's values
reach every backend's request."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clag.errors import UserFacingError
from clag.llm.client import LLMClient
from clag.llm.decoding import DecodingPolicy
from clag.llm.gbnf import schema_to_gbnf
from clag.llm.openai_backend import OpenAIBackend
from clag.llm.request_format import RequestFormat
from clag.llm.types import Request
from clag.prompt_sets import ReferencePrompts, ReferenceTemplateError, reference_system_message
from eval.labels import setup_name
from tests.loopback_server import LoopbackServer
from tests.scripted_llm import ScriptedBackend

NOTE = "Ivermectin is used to treat parasitic infections such as river blindness."


@pytest.fixture(scope="module")
def system_message(reference_dir):
    return reference_system_message(reference_dir / "CLAG_memory.py")


@pytest.fixture(scope="module")
def note_prompt(reference_dir):
    return ReferencePrompts(reference_dir / "CLAG_memory.py", reference_dir / "test_CLAG.py").analysis(NOTE)


def _controller_messages(memory_file: Path) -> list[dict]:
    """What the reference's OpenAIController.get_completion puts in ``messages``, found in its source
    independently of the reader under test (the list literal, evaluated with ``prompt`` unbound)."""
    tree = ast.parse(memory_file.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "OpenAIController":
            for call in ast.walk(node):
                if isinstance(call, ast.keyword) and call.arg == "messages":
                    return [{ast.literal_eval(k): (ast.literal_eval(v) if isinstance(v, ast.Constant) else "<prompt>")
                             for k, v in zip(d.keys, d.values)} for d in call.value.elts]
    raise AssertionError("no OpenAIController messages in the reference file")


def test_the_system_message_is_read_from_the_pinned_reference(reference_dir, system_message):
    messages = _controller_messages(reference_dir / "CLAG_memory.py")
    assert messages == [{"role": "system", "content": system_message}, {"role": "user", "content": "<prompt>"}]
    assert system_message.strip()


def test_a_changed_reference_changes_the_system_message_and_a_missing_one_is_one_line(reference_dir, tmp_path,
                                                                                     system_message):
    source = (reference_dir / "CLAG_memory.py").read_text(encoding="utf-8")
    changed = tmp_path / "changed.py"
    changed.write_text(source.replace(system_message, "Answer in JSON."), encoding="utf-8")
    assert reference_system_message(changed) == "Answer in JSON."
    empty = tmp_path / "empty.py"
    empty.write_text("class OpenAIController:\n    def get_completion(self, prompt):\n        return prompt\n")
    with pytest.raises(ReferenceTemplateError, match="no system message"):
        reference_system_message(empty)


def test_formats_rewrite_raw_prompts_only():
    raw = Request(prompt="p", tag="note")
    chat = Request(messages=(("user", "q"),))
    openai = RequestFormat("openai", "sys")
    assert openai.apply(raw).messages == (("system", "sys"), ("user", "p")) and openai.apply(raw).prompt is None
    assert openai.apply(raw).tag == "note"
    assert RequestFormat("chat").apply(raw).messages == (("user", "p"),)
    assert RequestFormat("chat").apply(raw).prompt is None
    assert openai.apply(chat) is chat and RequestFormat("chat").apply(chat) is chat
    assert RequestFormat().apply(raw) is raw and RequestFormat().name == "raw"
    with pytest.raises(ValueError, match="system message"):
        RequestFormat("openai")
    with pytest.raises(ValueError, match="request_format"):
        RequestFormat("sglang", "sys")


def test_the_client_applies_the_format_before_seeds_and_cache_keys(note_prompt, system_message):
    from clag.llm.cache import request_key

    backends = {name: ScriptedBackend(lambda r: "{}") for name in ("raw", "chat", "openai")}
    keys = {}
    for name, backend in backends.items():
        client = LLMClient(backend)
        client.request_format = RequestFormat(name, system_message if name == "openai" else None)
        client.generate([Request(prompt=note_prompt, temperature=0.7)])
        sent = backend.requests[0]
        keys[name] = (request_key(backend.model_id, sent), sent.seed)
    assert backends["raw"].requests[0].prompt == note_prompt
    assert backends["chat"].requests[0].messages == (("user", note_prompt),)
    assert backends["openai"].requests[0].messages == (("system", system_message), ("user", note_prompt))
    assert len({key for key, _ in keys.values()}) == 3 and len({seed for _, seed in keys.values()}) == 3


def test_openai_backend_sends_each_format_as_the_reference_does(note_prompt, system_message, reference_dir):
    server = LoopbackServer(reply=lambda body: "{}")
    try:
        backend = OpenAIBackend(server.url, "m")
        for name in ("raw", "openai", "chat"):
            client = LLMClient(backend)
            client.request_format = RequestFormat(name, system_message if name == "openai" else None)
            client.generate([Request(prompt=note_prompt, temperature=0.7, json_schema={"type": "object"})])
    finally:
        server.close()
    raw, chat, user_only = server.bodies
    assert server.paths[0].endswith("/completions") and raw["prompt"] == note_prompt
    expected = [{**m, "content": note_prompt if m["content"] == "<prompt>" else m["content"]}
                for m in _controller_messages(reference_dir / "CLAG_memory.py")]
    assert server.paths[1].endswith("/chat/completions") and chat["messages"] == expected
    assert server.paths[2].endswith("/chat/completions")
    assert user_only["messages"] == [{"role": "user", "content": note_prompt}]


def test_hf_and_llamacpp_render_the_openai_format_with_the_models_template(note_prompt, system_message):
    from clag.llm.decoding import render_chat
    from clag.llm.hf import HFBackend, convert_gguf
    from clag.llm.models import packaged_model_path

    gguf = packaged_model_path("smollm2-135m")
    hf = HFBackend(str(convert_gguf(gguf)), label="smollm2", device="cpu")
    shaped = RequestFormat("openai", system_message).apply(Request(prompt=note_prompt))
    template = hf.tokenizer.chat_template
    expected = render_chat(template, [{"role": "system", "content": system_message},
                                      {"role": "user", "content": note_prompt}],
                           bos_token=hf.tokenizer.bos_token or "", eos_token=hf.tokenizer.eos_token or "")
    assert hf.render(shaped) == expected
    assert system_message in expected and expected.index(system_message) < expected.index(note_prompt)
    assert hf.render(Request(prompt=note_prompt)) == note_prompt        # raw: the prompt as it is
    pytest.importorskip("llama_cpp")
    from clag.llm.llamacpp import LlamaCppBackend

    lc = LlamaCppBackend(str(gguf), label="smollm2", threads=1)
    assert lc.render(shaped) == expected
    assert lc.render(Request(prompt=note_prompt)) == note_prompt


# ---- decoding presets ---------------------------------------------------------------------------

def _compose(overrides: list[str]) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from eval.resources import CONFIG_DIR

    with initialize_config_dir(str(CONFIG_DIR), version_base=None):
        return OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)


LLAMA_CPP_PYTHON = dict(top_p=0.95, top_k=40, min_p=0.05, repetition_penalty=1.1, repeat_last_n=64,
                        max_whitespace=1, whitespace_chars=" ", repeat_window_includes_prompt=False)


def test_presets_compose_into_the_llm_policy_and_the_run_label():
    cfg = _compose(["method=clag", "profile=reference", "profile.request_format=openai",
                    "decoding=llama-cpp-python", "llm=qwen2.5-coder-0.5b"])
    policy = DecodingPolicy.from_config(cfg["llm"])
    assert {k: getattr(policy, k) for k in LLAMA_CPP_PYTHON} == LLAMA_CPP_PYTHON
    neutral = DecodingPolicy.from_config(_compose(["method=clag", "profile=reference"])["llm"])
    assert (neutral.top_p, neutral.top_k, neutral.min_p, neutral.repetition_penalty) == (1.0, 0, 0.0, 1.0)
    assert neutral.max_whitespace is None and neutral.whitespace_chars == " \t\n"   # the profile's
    assert DecodingPolicy.from_config(_compose(["method=clag"])["llm"]).max_whitespace == 16
    override = DecodingPolicy.from_config(_compose(["decoding=llama-cpp-python", "llm.top_k=5"])["llm"])
    assert override.top_k == 5 and override.min_p == 0.05
    from eval.labels import describe

    assert describe(cfg)["method"] == "clag@reference+openai+llama-cpp-python"
    assert setup_name("reference") == "reference" and setup_name("reference", "openai") == "reference+openai"
    # each profile's own format goes unsaid: robust sends chat messages unless told otherwise
    assert setup_name("robust", "openai") == "robust" and setup_name("robust", "raw") == "robust+raw"
    assert setup_name("reference", "raw") == "reference" and setup_name("robust", "chat") == "robust+chat"


def test_the_generation_config_preset_takes_the_models_values_or_refuses():
    qwen3 = DecodingPolicy.from_config(_compose(["decoding=generation-config", "llm=qwen3-0.6b"])["llm"])
    assert (qwen3.top_p, qwen3.top_k, qwen3.min_p, qwen3.repetition_penalty) == (0.95, 20, 0.0, 1.0)
    smol = DecodingPolicy.from_config(_compose(["decoding=generation-config", "llm=smollm2-135m"])["llm"])
    assert (smol.top_p, smol.top_k) == (1.0, 0)
    with pytest.raises(UserFacingError, match="records no generation_config"):
        DecodingPolicy.from_config(_compose(["decoding=generation-config", "llm=qwen2.5-coder-0.5b"])["llm"])


def test_policies_that_differ_in_whitespace_characters_or_window_never_share_a_cache_key():
    base = DecodingPolicy(max_whitespace=1)
    assert len({base.identity(), DecodingPolicy(max_whitespace=1, whitespace_chars=" ").identity(),
                DecodingPolicy(max_whitespace=1, repeat_last_n=64).identity()}) == 3
    assert DecodingPolicy().identity() == "dp1:p1:k0:m0:r1:ws16:think0:stop[]"   # old keys still hit
    with pytest.raises(ValueError, match="whitespace_chars"):
        DecodingPolicy(whitespace_chars="x")


SCHEMA = {"type": "object", "additionalProperties": False, "required": ["keywords", "context"],
          "properties": {"keywords": {"type": "array", "items": {"type": "string"}},
                         "context": {"type": "string"}}}


def test_one_optional_space_rejects_a_newline_and_a_second_space():
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as accepts

    one_space = xgr.Grammar.from_ebnf(schema_to_gbnf(SCHEMA, 1, " "))
    assert accepts(one_space, '{"keywords": ["a", "b"], "context": "c"}')
    assert accepts(one_space, '{"keywords":["a","b"],"context":"c"}')
    assert not accepts(one_space, '{\n"keywords": ["a"], "context": "c"}')
    assert not accepts(one_space, '{"keywords":  ["a"], "context": "c"}')
    default = xgr.Grammar.from_ebnf(schema_to_gbnf(SCHEMA, 16))
    assert accepts(default, '{\n    "keywords": ["a"],\n    "context": "c"\n}')


def test_the_llama_cpp_python_preset_reaches_the_servers_request():
    # the servers replay the prompt into the penalty's window: the same values, prompt counted
    policy = DecodingPolicy(**{**LLAMA_CPP_PYTHON, "repeat_window_includes_prompt": True})
    server = LoopbackServer(reply=lambda body: "{}")
    try:
        generic = OpenAIBackend(server.url, "m", policy=policy)
        llama = OpenAIBackend(server.url, "m", policy=policy, dialect="llamacpp")
        request = Request(messages=(("user", "q"),), temperature=0.7, json_schema=SCHEMA)
        generic.generate([request])
        llama.generate([request])
    finally:
        server.close()
    vllm_body, llama_body = server.bodies
    assert {k: vllm_body[k] for k in ("top_p", "top_k", "min_p", "repetition_penalty", "repeat_last_n")} == \
        {"top_p": 0.95, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1, "repeat_last_n": 64}
    assert {k: llama_body[k] for k in ("top_p", "top_k", "min_p", "repeat_penalty", "repeat_last_n")} == \
        {"top_p": 0.95, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.1, "repeat_last_n": 64}
    assert "[ ]{0,1}" in llama_body["grammar"] and "\\n" not in llama_body["grammar"].split("char ::=")[0]
    # the whole sequence is the slot's context, not the server's 64 (and not -1, which it rejects)
    neutral = OpenAIBackend("http://127.0.0.1:9/v1", "m", policy=DecodingPolicy(), dialect="llamacpp",
                            context_tokens=4096)
    assert neutral.payload(request)["extra_body"]["repeat_last_n"] == 4096
    unsized = OpenAIBackend("http://127.0.0.1:9/v1", "m", policy=DecodingPolicy(), dialect="llamacpp")
    with pytest.raises(ValueError, match="context_tokens"):
        unsized.payload(request)


def test_the_llama_cpp_python_preset_reaches_the_in_process_backends():
    from clag.llm.hf import HFBackend, convert_gguf
    from clag.llm.models import packaged_model_path
    from clag.llm.row_sampling import WindowedRepetitionPenalty

    policy = DecodingPolicy(**LLAMA_CPP_PYTHON)
    gguf = packaged_model_path("smollm2-135m")
    hf = HFBackend(str(convert_gguf(gguf)), label="smollm2", device="cpu", policy=policy)
    request = Request(prompt="Say hi.", temperature=0.7, max_tokens=4, seed=1)
    report = hf.sampling_report(request)
    assert {k: report[k] for k in LLAMA_CPP_PYTHON} == LLAMA_CPP_PYTHON
    seen = []
    original = WindowedRepetitionPenalty.__call__

    def spy(self, input_ids, scores):
        seen.append((self.penalty, self.window, self.generated_from, input_ids.shape[1]))
        return original(self, input_ids, scores)

    WindowedRepetitionPenalty.__call__ = spy
    try:
        hf.generate([request])
    finally:
        WindowedRepetitionPenalty.__call__ = original
    # the window starts after the prompt: the first step sees the prompt alone, and leaves it out
    assert seen and seen[0][:2] == (1.1, 64) and seen[0][2] == seen[0][3] > 0
    pytest.importorskip("llama_cpp")
    from clag.llm.llamacpp import LlamaCppBackend

    lc = LlamaCppBackend(str(gguf), label="smollm2", threads=1, policy=policy)
    kwargs = lc._sampling(request)
    assert (kwargs["top_p"], kwargs["top_k"], kwargs["min_p"], kwargs["repeat_penalty"]) == (0.95, 40, 0.05, 1.1)
    assert lc.model.last_n_tokens_size == 64
    assert lc.sampling_report(request) == {**report, "stop_token_ids": lc.sampling_report(request)["stop_token_ids"]}


def test_the_windowed_penalty_equals_transformers_when_the_window_covers_the_sequence():
    import torch
    from transformers import RepetitionPenaltyLogitsProcessor

    from clag.llm.row_sampling import WindowedRepetitionPenalty

    torch.manual_seed(0)
    ids = torch.tensor([[3, 5, 3, 7], [1, 1, 2, 0]])
    scores = torch.randn(2, 10)
    ours = WindowedRepetitionPenalty(1.3, 16)(ids, scores.clone())
    theirs = RepetitionPenaltyLogitsProcessor(1.3)(ids, scores.clone())
    assert torch.allclose(ours, theirs)
    windowed = WindowedRepetitionPenalty(1.3, 2)(ids, scores.clone())   # only the last two tokens count
    assert torch.equal(windowed[0, 5], scores[0, 5]) and not torch.equal(windowed[0, 7], scores[0, 7])


def test_the_penalty_window_leaves_the_prompt_out_when_the_policy_says_so():
    import torch

    from clag.llm.row_sampling import WindowedRepetitionPenalty

    ids = torch.tensor([[3, 5, 3, 7]])           # a three-token prompt, then one generated token
    scores = torch.ones(1, 10)
    generated_only = WindowedRepetitionPenalty(2.0, 64, generated_from=3)(ids, scores.clone())
    assert generated_only[0, 7] == 0.5 and generated_only[0, 3] == 1.0 and generated_only[0, 5] == 1.0
    first_step = WindowedRepetitionPenalty(2.0, None, generated_from=4)(ids, scores.clone())
    assert torch.equal(first_step, scores)       # nothing generated yet: nothing penalised
    with_prompt = WindowedRepetitionPenalty(2.0, 64)(ids, scores.clone())
    assert with_prompt[0, 3] == 0.5 and with_prompt[0, 5] == 0.5


def test_a_penalty_goes_only_to_an_engine_that_counts_its_window_as_asked():
    """llama.cpp's server replays the prompt into its sampler, llama-cpp-python never does: a
    penalty whose window differs from the engine's is refused with one line, and server=auto
    runs a generated-only window in process."""
    from clag.llm.models import served_by_llama_server

    generated_only = DecodingPolicy(**LLAMA_CPP_PYTHON)
    with pytest.raises(UserFacingError, match="llm.server=null"):
        OpenAIBackend("http://127.0.0.1:9/v1", "m", policy=generated_only, dialect="llamacpp")
    with pytest.raises(UserFacingError, match="OpenAI-compatible server"):
        OpenAIBackend("http://127.0.0.1:9/v1", "m", policy=generated_only)
    # no penalty, no window to disagree on
    assert DecodingPolicy(repeat_window_includes_prompt=False).penalty_window_error("x", True) is None
    assert DecodingPolicy(repetition_penalty=1.1).penalty_window_error("llama-cpp-python", False)
    cfg = _compose(["decoding=llama-cpp-python", "llm=qwen2.5-coder-0.5b"])["llm"]
    assert cfg["server"] == "auto" and not served_by_llama_server(cfg)
    assert served_by_llama_server({**cfg, "repeat_window_includes_prompt": True})
    assert served_by_llama_server(_compose(["llm=qwen2.5-coder-0.5b"])["llm"])
    assert DecodingPolicy(**LLAMA_CPP_PYTHON).identity().endswith(":genwin")


def test_server_auto_builds_the_in_process_engine_for_a_generated_only_window(monkeypatch):
    """server=auto with a policy llama.cpp's server cannot honour is built in process, not
    refused for naming a server (the first anchor run of the fixed preset stopped there)."""
    import clag.llm.llamacpp as llamacpp
    from clag.llm.models import BACKENDS, ModelFileError

    built: dict = {}

    class Recorded:
        def __init__(self, location, **kwargs):
            built.update(kwargs, location=location)

    monkeypatch.setattr(llamacpp, "LlamaCppBackend", Recorded)
    monkeypatch.setattr("clag.llm.models.model_location", lambda cfg: "model.gguf")
    cfg = _compose(["decoding=llama-cpp-python", "llm=qwen2.5-coder-0.5b"])["llm"]
    backend = BACKENDS.get("llamacpp").build(cfg)
    assert isinstance(backend, Recorded) and built["location"] == "model.gguf"
    assert built["policy"].repeat_window_includes_prompt is False
    with pytest.raises(ModelFileError, match="auto or null"):
        BACKENDS.get("llamacpp").build({**cfg, "server": "elsewhere"})


def test_a_setup_name_leaves_unsaid_the_format_the_profiles_own_file_names(tmp_path, monkeypatch):
    """The label reads each profile's own format from its file, so it is said once (a copy that
    disagreed would file a profile's default runs under a format they did not send)."""
    import eval.resources
    from clag.llm.request_format import REQUEST_FORMATS
    from eval.labels import profile_request_format, request_format_name

    for path in sorted((Path(__file__).resolve().parents[1] / "configs" / "profile").glob("*.yaml")):
        assert profile_request_format(path.stem) in REQUEST_FORMATS, path.name
    (tmp_path / "profile").mkdir()
    (tmp_path / "profile" / "mine.yaml").write_text("name: mine\nrequest_format: chat\n", encoding="utf-8")
    monkeypatch.setattr(eval.resources, "CONFIG_DIR", tmp_path)
    profile_request_format.cache_clear()
    try:
        assert setup_name("mine", "chat") == "mine" and setup_name("mine", "raw") == "mine+raw"
        assert setup_name("unfiled", "raw") == "unfiled"          # no file: the paper's raw prompts
        assert request_format_name({"profile": {"name": "mine"}}) == "chat"
        assert request_format_name({"profile": {"name": "mine", "request_format": "openai"}}) == "openai"
    finally:
        profile_request_format.cache_clear()


def test_every_backends_model_id_keeps_the_segment_earlier_runs_cache_keys_hold():
    """Backends lost their own prompt-format setting; the segment it filled in their model ids
    (``raw`` in every committed run) stays, or every cached reply would stop answering."""
    from clag.llm.hf import hf_model_id
    from clag.llm.llamacpp import llamacpp_model_id
    from clag.llm.models import packaged_model_path
    from clag.llm.openai_backend import openai_model_id

    gguf, policy = str(packaged_model_path("smollm2-135m")), DecodingPolicy()
    assert openai_model_id("m", policy, "vllm").split(":")[3] == "raw"
    assert llamacpp_model_id(gguf, "smollm2", policy).split(":")[4] == "raw"
    assert hf_model_id(gguf, "smollm2", policy, "float32").split(":")[4] == "raw"


def test_a_run_recorded_under_the_old_keys_pools_with_the_same_setup_run_since():
    """Runs made one stream at a time pool by the hash of what they computed; a run recorded as
    ``profile.request_shape`` + ``llm.prompt_format`` computed what ``profile.request_format`` asks."""
    from eval.identity import setup_hash
    from eval.renamed_keys import in_current_terms

    def config(stream, profile, llm):
        return {"method": {"name": "clag"}, "profile": {"name": "reference", **profile},
                "llm": {"name": "m", "top_p": 0.95, **llm}, "data": {"subset": {"sample_ids": [stream]}}}

    today = config(7, {"request_format": "openai"}, {})
    assert in_current_terms(today) is today
    before = config(3, {"request_shape": "openai"}, {"prompt_format": "raw"})
    assert setup_hash(before) == setup_hash(today)
    assert before["profile"]["request_shape"] == "openai"          # the record itself is left as written
    assert setup_hash(config(3, {"request_shape": "sglang"}, {"prompt_format": "raw"})) == setup_hash(
        config(7, {"request_format": "raw"}, {}))
    assert setup_hash(config(3, {"request_shape": "sglang"}, {"prompt_format": "chat"})) == setup_hash(
        config(7, {"request_format": "chat"}, {}))
    assert setup_hash(config(3, {"request_shape": "sglang"}, {"prompt_format": "raw"})) != setup_hash(today)
