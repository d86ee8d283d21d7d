"""Results that travel (issue 27): one checked bundle per run, two runs compared cell by cell.

- :mod:`dyafdb.share.sources`: a results folder or a bundle, opened the same way;
- :mod:`dyafdb.share.bundle`: `dyafdb bundle` writes the archive and its results.json;
- :mod:`dyafdb.share.check`: `dyafdb verify BUNDLE` checks schema, digests and numbers;
- :mod:`dyafdb.share.recompute`: the analysis tables again from a bundle's measures;
- :mod:`dyafdb.share.compare`: `dyafdb compare A B`;
- :mod:`dyafdb.share.site`: `dyafdb viewer --share BUNDLE`.

Merging a bundle into a local run is the analysis's own (dyafdb.analysis.bundles): it runs inside
the analysis stage, which must not import this later one.
"""
