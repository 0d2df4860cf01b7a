"""Baseline memory systems (RAG, A-mem, GAM, MemoryOS), each behind :class:`clag.types.MemorySystem`."""
