"""Model engines: one long-lived process per model per device hosting many sessions (issue 19).

batcher: collects the sessions' frames into one batched step per tick (bounded wait, hung sessions
dropped); models: which adapters have a batched model; host: the process, serving a Unix socket with
the worker frame protocol; client: the record job's side of one session.
"""
