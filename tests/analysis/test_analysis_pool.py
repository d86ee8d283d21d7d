"""Analysis jobs in shared processes (analysis.jobs_per_process, dyafdb.analysis.pool): a job gives the
same bytes in a process that served other jobs before as in a process of its own; a killed job
leaves no output; with the setting 1 nothing is shared."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import synthetic_analysis as S
from dyafdb.analysis.pool import ANALYSIS
from dyafdb.cli import main
from dyafdb.commands.analysis import TURN_TAKING
from dyafdb.config import validate_config

REPO = Path(__file__).resolve().parents[2]
TASKS = ("T1-1", "T2", "T4-2")  # rows for timing, action success, balance and the rating's battles
HEALTH = ("dnsmos_ovrl", "text_wer")
SHARED = re.compile(r"analysed in shared process (\d+) \(job (\d+) of at most (\d+) there\)")

# Two configs of the same size, so a rewrite keeps the file's size; the test puts its mtime back too:
# nothing keyed by a path, its size or its time can tell them apart.
CONFIG_A = {"dpi": 60, "bootstrap": 10, "label": "Alpha"}
CONFIG_B = {"dpi": 70, "bootstrap": 12, "label": "Alphz"}


def _config(values: dict) -> str:
    spec = S.Spec(tasks=TASKS)
    cfg = {
        "scenarios_dir": "scenarios", "results_dir": "results", "demo_quality": True,
        "models": {m: {"adapter": "null", "label": values["label"] if m == "alpha" else m.title()} for m in spec.models},
        "suites": {"main": {"models": list(spec.models), "archetypes": list(TASKS), "repetitions": 1, "window_s": 60}},
        "judge": {"judges": {"judge-main": {"backend": "anthropic", "model": "x"},
                             "judge-second": {"backend": "anthropic", "model": "y"}}},
        "analysis": {"bootstrap": values["bootstrap"], "dpi": values["dpi"], "reference_models": ["alpha", "beta"],
                     "anchor_model": "alpha"},
    }
    return yaml.safe_dump(cfg)


def _rewrite(path: Path, text: str) -> None:
    """Rewrite ``path`` in place, keeping its mtime (and, for the configs, its size)."""
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _use(project: Path, version: str) -> None:
    """Point the project's config and measures (same paths) at version A or B."""
    _rewrite(project / "config.yaml", _config(CONFIG_A if version == "A" else CONFIG_B))
    _rewrite(project / "measures.tsv", (project / f"measures-{version}.tsv").read_text())


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pool")
    for version, seed in (("A", 0), ("B", 1)):
        S.write(S.Spec(tasks=TASKS, scenarios=1, windows=(30.0, 60.0), own={"alpha": 0.8}, partner={"beta": 0.5},
                       seed=seed), root / f"measures-{version}.tsv")
    assert len(_config(CONFIG_A)) == len(_config(CONFIG_B))
    (root / "config.yaml").write_text(_config(CONFIG_A))
    shutil.copy(root / "measures-A.tsv", root / "measures.tsv")
    return root


def _chain(project: Path) -> tuple[list[list[str]], list[list[str]], list[list[str]], list[list[str]]]:
    """The analysis jobs of a run, as the workflow's rules call them: the per-run table, every product,
    every figure, the report (each group may run in any order)."""
    t, cfg = project / "out", ["--config", str(project / "config.yaml"), "--root", str(project)]
    runs = str(t / "runs.tsv")

    def product(name: str, stem: str, *extra: str) -> list[str]:
        return ["analysis", name, "--runs", runs, *extra, "--out", str(t / f"{stem}.tsv"), "--html", str(t / f"{stem}.html"), *cfg]

    products = [product("matrix", f"score_{task}", "--task", task) for task in TASKS]
    products += [product("turntaking", f"turntaking_{m}", "--metric", m) for m in TURN_TAKING]
    products += [product("health", f"health_{m}", "--metric", m) for m in HEALTH]
    products += [product(p, p.replace("-", "_")) for p in ("health-models", "variance", "action-success", "windows",
                                                           "balance", "profiles")]
    products += [product("timing", "timing", "--curves", str(t / "timing_curves.tsv")),
                 product("rating", "leaderboard", "--effects", str(t / "rating_effects.tsv")),
                 ["analysis", "agreement", "--measures", str(project / "measures.tsv"), "--out", str(t / "agreement.tsv"),
                  "--html", str(t / "agreement.html"), *cfg],
                 ["analysis", "versions", "--out", str(t / "versions.tsv"), "--config-out", str(t / "config.yaml"), *cfg]]
    figures = {
        "task_matrices": ("matrices", [f"score_{task}" for task in TASKS]),
        "turntaking_matrices": ("matrices", [f"turntaking_{m}" for m in TURN_TAKING]),
        "health_matrices": ("matrices", [f"health_{m}" for m in HEALTH]),
        "fig2_variance": ("variance", ["variance"]), "fig3_timing": ("timing", ["timing", "timing_curves"]),
        "fig4_action_success": ("action_success", ["action_success"]), "fig5_windows": ("windows", ["windows"]),
        "fig6_balance": ("balance", ["balance"]), "leaderboard": ("leaderboard", ["leaderboard"]),
        "text_pairing": ("text_pairing", ["text_pairing"]),
    }
    drawn = [["analysis", "figure", kind, "--input", *(str(t / f"{s}.tsv") for s in stems),
              "--out-prefix", str(t / "figures" / name), *cfg] for name, (kind, stems) in figures.items()]
    tables = sorted({str(t / f"{a[a.index('--out') + 1][len(str(t)) + 1:-4]}.html") for a in products if "--html" in a})
    report = [["analysis", "report", "--tables", *tables, "--figures", *(str(t / "figures" / f"{n}.png") for n in figures),
               "--captions", str(REPO / "workflow" / "report"), "--versions", str(t / "versions.tsv"),
               "--config-file", str(t / "config.yaml"), "--out", str(t / "report.html"), *cfg]]
    first = [["analysis", "runs", "--measures", str(project / "measures.tsv"), "--out", runs, *cfg]]
    return first, products, drawn, report


def _text_pairing_table(project: Path, version: str) -> None:
    """Table 9 as `dyafdb text-pairing table` writes it (that job is the text-pairing stage's; its
    figure is an analysis job): two speech models and a text pairing."""
    (project / "out").mkdir(exist_ok=True)
    shift = 0.0 if version == "A" else 0.1
    rows = ["model\tlabel\tkind\tT1-1\tT2"] + [f"{m}\t{m.title()}\t{k}\t{0.2 + i / 10 + shift:.2f}\t{0.7 - i / 10:.2f}"
                                               for i, (m, k) in enumerate([("alpha", "speech"), ("beta", "speech"),
                                                                           ("q", "text"), ("r", "text")])]
    (project / "out" / "text_pairing.tsv").write_text("\n".join(rows) + "\n")


# The fresh baseline: each job in a process of its own, forked from one that has imported what a job
# imports and run nothing (a fresh process's state; the anchors below check it against real ones).
_FORKED = r"""
import json, os, sys
import dyafdb.cli, dyafdb.analysis.figures, dyafdb.analysis.products, dyafdb.analysis.report, dyafdb.analysis.runs
for i, argv in enumerate(json.load(open(sys.argv[1]))):
    log = f"{sys.argv[2]}/{i}.log"
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1); os.dup2(fd, 2)
        rc = dyafdb.cli.main(argv)
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(rc)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{' '.join(argv)} failed: " + open(log).read())
"""


def _each_in_its_own_process(jobs: list[list[str]], logs: Path) -> None:
    logs.mkdir(exist_ok=True)
    (logs / "jobs.json").write_text(json.dumps(jobs))
    env = {k: v for k, v in os.environ.items() if k != ANALYSIS.env}
    done = subprocess.run([sys.executable, "-c", _FORKED, str(logs / "jobs.json"), str(logs)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


GENERATED = re.compile(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")  # the report's clock, to the minute


def _outputs(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): GENERATED.sub(b"generated (when)", p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _in_shared_process(jobs: list[list[str]], capfd) -> list[tuple[int, int]]:
    """Run each job through `dyafdb` (its command forwards it); (pid, job number) of the process that ran it."""
    served = []
    for argv in jobs:
        assert main(argv) == 0, capfd.readouterr().err[-3000:]
        found = SHARED.findall(capfd.readouterr().err)
        assert len(found) == 1, f"{argv[:3]} did not run in a shared process"
        served.append((int(found[0][0]), int(found[0][1])))
    return served


def _stop(pids: set[int]) -> None:
    """End the shared processes this test started (they would leave after 20 idle seconds)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_a_shared_process_gives_the_bytes_of_a_process_of_its_own(project, monkeypatch, capfd):
    first, products, figures, report = _chain(project)

    # Each job in its own process, version A of the config and the measures.
    _use(project, "A")
    _text_pairing_table(project, "A")
    _each_in_its_own_process(first + products + figures + report, project / "logs-own")
    fresh = project / "fresh"
    (project / "out").rename(fresh)
    own = _outputs(fresh)
    assert {Path(k).suffix for k in own} >= {".tsv", ".html", ".png", ".pdf", ".yaml"}
    assert len([k for k in own if k.endswith(".pdf")]) == 10

    # Anchors: real fresh processes give the same bytes as the forked ones.
    shutil.copytree(fresh, project / "out")
    anchors = [next(a for a in figures if a[2] == "variance"), report[0]]
    env = {k: v for k, v in os.environ.items() if k != ANALYSIS.env}
    for argv in anchors:
        done = subprocess.run([sys.executable, "-m", "dyafdb.cli", *argv], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
    assert _outputs(project / "out") == own
    shutil.rmtree(project / "out")

    # All in one shared process: first every job with version B at the same paths (config rewritten
    # to the same size and mtime), then version A again, each group in the reverse order.
    monkeypatch.setenv(ANALYSIS.env, ANALYSIS.setting(500))
    pids: set[int] = set()
    try:
        _use(project, "B")
        _text_pairing_table(project, "B")
        served = _in_shared_process(first + products + figures + report, capfd)
        assert _outputs(project / "out")[next(k for k in own if k.endswith("leaderboard.tsv"))] != \
            own[next(k for k in own if k.endswith("leaderboard.tsv"))]  # version B is another run
        _use(project, "A")
        _text_pairing_table(project, "A")
        served += _in_shared_process(first + products[::-1] + figures[::-1] + report, capfd)
        pids = {pid for pid, _ in served}
        assert len(pids) == 1 and [n for _, n in served] == list(range(1, len(served) + 1))
    finally:
        _stop(pids)
    shared = _outputs(project / "out")
    assert sorted(shared) == sorted(own)
    differ = [k for k in own if shared[k] != own[k]]
    assert not differ, f"a shared process wrote other bytes than a process of its own: {differ}"


def test_a_killed_job_leaves_no_output_and_the_next_one_runs(project, monkeypatch, capfd, tmp_path):
    monkeypatch.setenv(ANALYSIS.env, ANALYSIS.setting(500))
    first, products, _figures, _report = _chain(project)
    _use(project, "A")
    out = tmp_path / "killed"
    out.mkdir()
    pids: set[int] = set()
    try:
        runs = list(first[0])
        runs[runs.index("--out") + 1] = str(out / "runs.tsv")
        (pid, _), = _in_shared_process([runs], capfd)
        pids.add(pid)
        # bad input: the job's one-line error and exit code, as in a process of its own; the process stays
        assert main(["analysis", "matrix", "--runs", str(out / "missing.tsv"), "--task", "T2", "--out",
                     str(out / "x.tsv"), "--config", str(project / "config.yaml")]) == 2
        err = capfd.readouterr().err
        assert "run `dyafdb analysis runs`" in err and SHARED.search(err).group(1) == str(pid)
        # A slow job: the leaderboard with many resamples; killed while its process computes it.
        slow = [*next(a for a in products if a[1] == "rating"), "--bootstrap", "100000"]
        slow[slow.index("--runs") + 1] = str(out / "runs.tsv")
        for option, name in (("--out", "leaderboard.tsv"), ("--html", "leaderboard.html"), ("--effects", "effects.tsv")):
            slow[slow.index(option) + 1] = str(out / name)
        cpu = _cpu_s(pid)
        job = subprocess.Popen([sys.executable, "-m", "dyafdb.cli", *slow], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=dict(os.environ))
        deadline = time.monotonic() + 120
        while _cpu_s(pid) < cpu + 0.5:  # the shared process is at work on it
            assert job.poll() is None and time.monotonic() < deadline, job.stderr.read().decode()[-2000:]
            time.sleep(0.05)
        job.send_signal(signal.SIGKILL)
        job.wait(30)
        job.stderr.close()
        deadline = time.monotonic() + 30
        while _alive(pid):  # the process leaves with the job's request, before it can publish anything
            assert time.monotonic() < deadline, "the shared process outlived the killed job"
            time.sleep(0.05)
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["runs.tsv"]
        # the next job finds a fresh process
        (again, n), = _in_shared_process([[*slow[:slow.index("--bootstrap")], "--bootstrap", "10"]], capfd)
        pids.add(again)
        assert again != pid and n == 1 and (out / "leaderboard.tsv").exists()
    finally:
        _stop(pids)


def _cpu_s(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_with_the_setting_1_each_job_runs_in_its_own_process(project, monkeypatch, capfd, tmp_path):
    base = validate_config(yaml.safe_load(_config(CONFIG_A)), "test")
    assert base["analysis"]["jobs_per_process"] == 200  # the schema's default
    monkeypatch.setenv(ANALYSIS.env, "stale")
    ANALYSIS.share_in_workflow(1)  # as workflow/rules/analysis.smk passes analysis.jobs_per_process
    assert ANALYSIS.env not in os.environ and ANALYSIS.per_process() == 1
    ANALYSIS.share_in_workflow(base["analysis"]["jobs_per_process"])
    assert ANALYSIS.per_process() == 200
    monkeypatch.setenv(ANALYSIS.env, ANALYSIS.setting(1))
    _use(project, "A")
    assert main(["analysis", "versions", "--out", str(tmp_path / "versions.tsv"), "--config", str(project / "config.yaml")]) == 0
    assert "shared process" not in capfd.readouterr().err
    assert (tmp_path / "versions.tsv").exists() and not ANALYSIS.folder().exists()


# The lru caches a chain of analysis jobs fills, and why a later job may reuse what they hold: each
# answers from its arguments and the package's own files, never from a file of the run.
CACHES = {
    "dyafdb.analysis.registry.tables": "the @table declarations in the package's source",
    "dyafdb.analysis.registry.figures": "the @figure declarations in the package's source",
    "dyafdb.declarations.declared": "declarations in the package's source and its entry points",
    "dyafdb.schema_check.load_schema": "the package's schema files",
    "dyafdb.analysis.answers._schema_defaults": "the package's analysis schema",
    "dyafdb.analysis.answers._question_cached": "the rubric's questions, declared in the package's source",
    "dyafdb.suite.check._norm": "text normalised, from its argument alone",
    "dyafdb.suite.secret_match.secret_pattern": "a regex from its argument alone",
    "dyafdb.llm.secrets._pattern": "a regex from its argument alone",
}


def _lru_caches() -> dict[str, functools._lru_cache_wrapper]:
    from dyafdb import declarations

    found = {}
    for name, module in list(sys.modules.items()):
        if name == "dyafdb" or name.startswith("dyafdb."):
            for attr, value in list(vars(module).items()):
                if isinstance(value, functools._lru_cache_wrapper) and getattr(value, "__module__", name) == name:
                    found[f"{name}.{value.__qualname__}"] = value
    for cached in declarations._DERIVED:  # a registry's derived lists: from the declarations alone
        found.setdefault(f"{cached.__module__}.{cached.__qualname__}", cached)
        CACHES.setdefault(f"{cached.__module__}.{cached.__qualname__}", "derived from the declarations (@derived)")
    return found


def test_every_cache_an_analysis_job_fills_is_keyed_by_content(project, monkeypatch, capfd):
    """Reaching a new cache keyed by a path (or anything a run's files say) fails here: key it by the
    file's content, or clear it in dyafdb.analysis.pool.fresh_state, then list it above."""
    monkeypatch.delenv(ANALYSIS.env, raising=False)
    _use(project, "A")
    first, products, figures, report = _chain(project)
    for cached in _lru_caches().values():
        cached.cache_clear()
    _text_pairing_table(project, "A")
    for argv in first + products + figures + report:
        assert main(argv) == 0, capfd.readouterr().err[-2000:]
    filled = sorted(name for name, cached in _lru_caches().items() if cached.cache_info().currsize)
    assert filled, "no cache filled: the scan finds none"
    unexplained = [name for name in filled if name not in CACHES]
    assert not unexplained, f"caches an analysis job fills that are not known to be keyed by content: {unexplained}"
