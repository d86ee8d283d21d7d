"""`dyafdb viewer --share BUNDLE`: the conversation viewer built from a bundle alone, sealed.

The bundle is unpacked as the project it is (dyafdb.share.bundle), each preview (OGG/Vorbis) is
decoded to the audio.wav the viewer reads, and the viewer builds its site as for a local run. The
site is sealed: every page, script, audio and peaks file is inside the folder, and no link leaves
it (the link to a report that did not travel is taken out); the check runs after the build and
names any page that still points outside.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from dyafdb.analysis.bundles import RESULTS_DIR, Bundle
from dyafdb.config import validate_config
from dyafdb.errors import InputError
from dyafdb.paths import Results

_REPORT_LINK = re.compile(r"\s*The numbers they make up are in <a class=\"report\" href=\"[^\"]*\">the report</a>\."
                          r"(\s*<span class=\"cards\">.*?</span>)?", re.S)
_URL = re.compile(r"""(?:href|src)\s*=\s*["']([^"'#]+)""")


def _audio_from_previews(root: Path, recordings: list[str]) -> int:
    import soundfile as sf

    from dyafdb.share.bundle import PREVIEW_NAME

    results = Results(str(root / RESULTS_DIR))
    decoded = 0
    for cid in recordings:
        wav = Path(results.recording_file(cid, "audio.wav"))
        preview = Path(results.recording_file(cid, PREVIEW_NAME))
        if wav.exists() or not preview.exists():
            continue
        data, rate = sf.read(str(preview), dtype="float32", always_2d=True)
        sf.write(str(wav), data, rate, format="WAV", subtype="FLOAT")
        decoded += 1
    return decoded


def outside_links(site: Path) -> list[str]:
    """Each page's link that leaves the site folder or the machine (an absolute path, file:, http:)."""
    site = Path(site).resolve()
    found = []
    for page in sorted(site.rglob("*.html")):
        for url in _URL.findall(page.read_text(encoding="utf-8", errors="replace")):
            if url.startswith(("data:", "blob:", "javascript:")):
                continue
            if re.match(r"^[a-z]+:", url) or url.startswith("/"):
                found.append(f"{page.relative_to(site)}: {url}")
                continue
            target = (page.parent / url.split("?")[0]).resolve()
            if site not in target.parents and target != site:
                found.append(f"{page.relative_to(site)}: {url}")
    return found


def share_site(bundle_path: Path, out: Path, jobs: int = 1) -> Path:
    from dyafdb.viewer.settings import settings_with
    from dyafdb.viewer.site import build_site

    bundle = Bundle(bundle_path)
    doc = bundle.results()
    if doc.get("audio") == "none":
        raise InputError(f"{bundle_path}: the bundle holds no audio, and the viewer plays each conversation; fix: write "
                         "it with `dyafdb bundle --preview-audio` (or --with-audio)")
    out = Path(out).resolve()
    with tempfile.TemporaryDirectory(prefix="dyafdb-share-") as tmp:
        root = bundle.extract(Path(tmp))
        config = validate_config(doc["config"], f"{bundle_path}: results.json config")
        config["viewer"] = {**(config.get("viewer") or {}), "out": str(out)}
        _audio_from_previews(root, list(doc["recordings"]))
        held = {line.split("\t")[0] for line in (root / RESULTS_DIR / "design" / "conversations.tsv")
                .read_text(encoding="utf-8").splitlines()[1:] if line.strip()}
        settings = settings_with(config, root, out=out, no_annotation=True)
        build_site(config, root, settings, ids=sorted(held), jobs=jobs)
    index = out / "index.html"
    index.write_text(_REPORT_LINK.sub("", index.read_text(encoding="utf-8")), encoding="utf-8")
    (out / "bundle.json").write_text(json.dumps({k: doc[k] for k in ("format", "created_utc", "code", "config_digest",
                                                                    "scenarios_digest", "conversations", "audio")},
                                                indent=1), encoding="utf-8")
    leaks = outside_links(out)
    if leaks:
        raise InputError(f"{out}: the site links outside itself ({'; '.join(leaks[:3])}); it is not sealed")
    return out
