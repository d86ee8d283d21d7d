"""Analysis stage: measures.tsv -> tables, variance decomposition, timing curves, rating, figures, report.

Every module reads the per-run frame built by :mod:`dyafdb.analysis.runs` (one row per conversation
side, one column per indicator), never ``measures.tsv`` directly, so the input contract lives in
:mod:`dyafdb.analysis.columns` alone.
"""
