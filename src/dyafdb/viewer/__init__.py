"""The conversation viewer and the blind annotation pages: a static site under ``<results_dir>/site``.

``dyafdb viewer`` builds it (docs/viewer.md). Modules, one job each: ``settings`` (config section),
``sources`` (reading a conversation's files), ``media`` (audio copies and waveform peaks),
``model`` (what a page shows, full or blind), ``summary`` (measures for the index), ``questions``
(the judge's questions for human raters), ``sampler`` (which seats are annotated), ``pages`` (HTML),
``site`` (the build). The browser side is in ``assets/``.
"""

from dyafdb.viewer.site import BuildSummary, build_site

__all__ = ["build_site", "BuildSummary"]
