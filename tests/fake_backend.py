"""``llm.backend=tests.fake_backend:build``: the scripted SLM behind the real CLI (tests only)."""

from tests.memory_fakes import MemoryScript
from tests.scripted_llm import ScriptedBackend


def build(cfg):
    return ScriptedBackend(MemoryScript(), model_id="scripted-memory", delay_s=float(cfg.get("delay_s", 0.005)))
