"""The LLM judge (paper, Appendix D): one closed question per measure, strict labels, cached replies.

``rubric``    questions, label sets, strict parsing, the measures each answer yields
``prompts``   prompt templates (``config/judge/<question>.txt``) and what fills them
``client``    a judge as an LLM client (:mod:`dyafdb.llm`: Anthropic + Batches, OpenAI-compatible, llama.cpp)
``cache``     on-disk reply cache keyed by (prompt incl. transcript, judge model)
``runner``    one batch = (judge, archetype, question): build prompts, ask, re-ask off-label, write JSONL
``settings``  the ``judge`` config section and API keys from the environment
"""
