"""The preflight's far side: one cheap request per model a run will call, before the run starts.

A judge with an unreachable ``base_url``, a refused key or a model id the endpoint does not know
used to pass ``dyafdb plan --check`` and fail hours later, after the recordings. So each model the
run calls gets one request that proves all three at once and costs nothing:

``anthropic``  ``GET /v1/models/{model}`` (``models.retrieve`` of the SDK): no tokens, no charge
``openai``     ``GET {base_url}/models/{model}``; where a local server lacks the route, ``GET /models``
               and the id looked for in the list
``llamacpp``   no network: the GGUF file is on disk and xllamacpp is installed

Each probe runs once, without retries, the whole of it under one deadline (``asyncio.timeout``, as
each try of :meth:`~dyafdb.llm.base.RetryingClient.call`); all of a run's probes run at once. Each
answer is a :class:`~dyafdb.llm.base.Probe`: ok or not, what was found, the fix, scrubbed of every key.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Sequence

from dyafdb.errors import InputError
from dyafdb.llm.base import ModelSpec, Probe, RetryPolicy
from dyafdb.llm.clients import make_client
from dyafdb.llm.llamacpp import probe_local

PROBE_TIMEOUT_S = 10.0


async def probe_model(spec: ModelSpec, timeout_s: float = PROBE_TIMEOUT_S, timeout_key: str = "") -> Probe:
    """One model's probe; ``timeout_key`` names the setting of ``timeout_s`` in the fix of a timeout."""
    if spec.backend == "llamacpp":
        return probe_local(spec)
    try:
        client = make_client(spec, RetryPolicy(max_retries=0, timeout_s=timeout_s))
    except InputError as exc:  # no key, an unknown backend: nothing to ask
        return Probe(False, str(exc), f"fix {spec.config_key}")
    try:
        return await client.probe(timeout_key)  # type: ignore[attr-defined]
    finally:
        await client.aclose()


def probe_models(specs: Sequence[ModelSpec], timeout_s: float = PROBE_TIMEOUT_S, timeout_key: str = "") -> list[Probe]:
    """Every model's probe, all at once, in ``specs``' order."""
    if not specs:
        return []

    async def all_of() -> list[Probe]:
        return list(await asyncio.gather(*(probe_model(s, timeout_s, timeout_key) for s in specs)))

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(all_of())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from async code: a loop of its own
        return pool.submit(asyncio.run, all_of()).result()


__all__ = ["PROBE_TIMEOUT_S", "Probe", "probe_model", "probe_models"]
