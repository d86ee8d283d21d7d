"""The LLM clients shared by the judge and the text-only pairing: one interface, one retry policy.

``base``           ModelSpec, Request, Reply, LLMError, the retry policy and deadline every HTTP call goes through
``secrets``        every configured API key scrubbed from replies, errors and the SDKs' logs
``sdk``            the official SDKs' errors mapped onto that policy; malformed HTTP-200 replies named
``anthropic_api``  Anthropic Messages and Message Batches (``anthropic`` SDK)
``openai_api``     OpenAI-compatible chat completions (``openai`` SDK)
``llamacpp``       a local GGUF model through xllamacpp (the demo judge, local text models)
``clients``        make_client(spec), and SyncClient for turn-by-turn callers
``text_backends``  the text pairing's model settings and reply cleaning

Callers build a :class:`ModelSpec` from their own config; this package knows no judge or pairing.
"""

from dyafdb.llm.base import Client, LLMError, ModelSpec, Reply, Request, RetryPolicy
from dyafdb.llm.clients import SyncClient, make_client

__all__ = ["Client", "LLMError", "ModelSpec", "Reply", "Request", "RetryPolicy", "SyncClient", "make_client"]
