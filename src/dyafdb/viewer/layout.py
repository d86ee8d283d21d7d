"""Where a file sits in the site: the one place the per-conversation paths under ``c/`` and
``media/`` are spelled (the pages, the index data and the build all ask here).

A site holds one page and two media files (audio, peaks) per conversation: 22,000 files for the
main suite and up to 240,000 at the scaled designs. One flat folder of that size is what network
file systems (NFS, Lustre) list slowly and lock as one, so both folders are split one level down:

- ``c/<shard>/<conversation_id>.html``: the shard is the conversation's scenario
  (:func:`dyafdb.paths.shard_of`), the same sub-folder its recording, transcript and measures sit
  in under the results folder, so one scenario's pages are found together and a page's path is the
  results layout's. The conversation pages name the model, pairing and scenario in their text
  anyway (they are not blind), so a folder named after the scenario tells nothing new; the blind
  annotation-only site has no ``c/`` at all.
- ``media/<tt>/<key>.<ext>`` (and ``<key>.json``): ``key`` is the salted HMAC token of
  :func:`dyafdb.viewer.media.media_key`, and ``tt`` its first two hex characters (256 folders,
  ~60 files each for the main suite). The blind annotation pages play these files, so their folder
  may carry nothing but a piece of the token itself: no scenario, model, pairing or id, in any
  encoding.

A conversation page is two folders below the site's top, so its links to the rest climb two
(:data:`CONVERSATION_ROOT`); the annotation items stay flat in ``annotate/`` (one per sampled
conversation, a few hundred) and climb one.
"""

from __future__ import annotations

from dyafdb.paths import shard_of

# Hex characters of the media token that name its sub-folder: 16**2 = 256 folders.
MEDIA_SHARD_CHARS = 2
# From a conversation page (c/<shard>/) back to the site's top.
CONVERSATION_ROOT = "../../"


def conversation_page(conversation_id: str) -> str:
    """``c/<scenario>/<conversation_id>.html``, relative to the site's top."""
    return f"c/{shard_of(conversation_id)}/{conversation_id}.html"


def media_name(key: str, ext: str) -> str:
    """``<tt>/<key><ext>``, relative to ``media/``: the sub-folder is a prefix of the token itself."""
    return f"{key[:MEDIA_SHARD_CHARS]}/{key}{ext}"
