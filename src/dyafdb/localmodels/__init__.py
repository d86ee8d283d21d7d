"""Local models loaded once per process and shared by whoever asks: llama.cpp servers
(:mod:`.llama_server`) and faster-whisper models (:mod:`.whisper_model`).

A shared leaf, not a stage: the agents (the CPU cascade), the recorder's garble watcher, the score
stage's audio health and the LLM clients all load these models, and the agents come before the others,
so the loader may import no stage.
"""
