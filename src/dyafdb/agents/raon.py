"""KRAFTON Raon-SpeechChat 9B through its real-time gateway, as a WebSocket client on loopback.

Both published gateways speak the same raw-frame protocol, ``[1 byte kind][payload]``: READY 0x00,
AUDIO 0x01 (float32 little-endian PCM, 24 kHz, 1,920 samples), TEXT 0x02 (UTF-8 delta), SEQ_TRACE
0x03 / SEQ_DELTA 0x04 (debug traces), ERROR 0x05, CLOSE 0x06, PING 0x07, PONG 0x08. They differ in
what a session can be told, and the adapter reports only what the gateway really applies:

* ``variant: demo`` (default; krafton-ai/Raon-SpeechChat-Demo @ 5b3bc6f, Ray + SGLang): ``WS
  /ws/chat`` with the session settings as query parameters (``gateway/server.py``
  ``_ws_chat_impl``). The prompt key's ``speak-first`` reaches ``init_duplex_decoding_state``, so the
  opener really speaks first; the voice is the worker's default speaker, set when the worker starts
  (``DEFAULT_SPEAKER_AUDIO_PATH``: the adapter sets it from ``params.speaker_audio`` when it starts
  the gateway itself). It PINGs every 30 s with an empty payload and closes after 15 s without PONG.
* ``variant: realtime`` (krafton-ai/Raon-Speech ``demo/realtime``, read in the fork
  devyoongu/Raon-Speech @ afec411; one session per process): ``POST /realtime/session/start`` with
  a JSON session, ``WS <ws_path>?session_id=``, ``POST /realtime/session/finish``.
  ``LocalRealtimeSession`` ignores ``speak_first`` and the persona fields, so this variant always
  listens first (meta.json says so); the voice comes only from ``speaker_audio`` (a server-side wav),
  and a wav it cannot load leaves the voice unconditioned (the finish payload says which). It never
  PINGs. Each session writes wavs, a transcript and a zip bundle under ``result_root``: the adapter
  points that at a scratch folder of its own and deletes it after each session.

The voice is a fact, not a label (demo variant). The worker embeds ``speaker_audio`` once at start
with SpeechBrain's ECAPA (``raon_runtime/modules.py`` ``PretrainedSpeakerEncoder._load_backend``),
which it downloads unless ``$SPEECHBRAIN_ECAPA_SAVEDIR/speechbrain_spkrec-ecapa-voxceleb.done`` exists;
on an offline node that fails and the worker runs every session with no speaker, saying so only in
its log (READY is empty, ``/health`` carries no speaker field). So the adapter (1) refuses to start a
gateway whose ECAPA files are not on local disk (:func:`ecapa_problem`, also a preflight check), and
(2) reads the gateway's log (the one it started, or ``params.gateway_log``) for upstream's
speaker-failure lines at open and on every tick. The worker actors log only WARNING and ERROR, so
"applied" is inferred from ECAPA on disk plus the absence of those lines, and meta.json says so
(``extra.voice_applied``, ``extra.voice_evidence``). A failure fails the recording, or with
``voice_check: mark`` is recorded (``voice`` "none ...", ``extra.voice_problem``). A failure first
seen after the last tick can only be marked (close cannot fail a recording).

Self-play: the demo's ``launch_worker.py --role head`` starts a Ray head, and two on one node
collide (``ray stop`` ends both), so :func:`self_play_problem` refuses it in preflight; one gateway
started by hand (``FD_MAX_SESSIONS_PER_GPU=2``) serves both sides through ``params.url``.

Sampling: the official duplex settings of Raon-Speech ``config/duplex_infer.yaml`` (temperature
0.9, top_k 66, top_p 0.95, penalties 0) are sent explicitly on every session (each gateway has other
defaults: 0.7/50/0.8 and 1.1/100/0.99); ``params.sampling`` overrides them key by key. meta.json
records the full set the model decodes with, including what the gateway fixes.

Errors as upstream treats them: a recoverable decode error arrives as ERROR plus a silent AUDIO frame
(realtime: ERROR first, every time; demo: AUDIO first, ERROR on the first of a streak); the session
goes on, and the adapter counts them (``recoverable_errors`` in meta.json, via ``close``). Only what
ends the session upstream is fatal: CLOSE (the third decode error in a row, a fatal CUDA error, an
init failure) or the connection dropping.

Lockstep: per tick one AUDIO frame goes out and the adapter reads until that frame's AUDIO reply
arrives, keeping the TEXT deltas on the way. A background reader answers PINGs at any time (also
while the bridge waits on the partner). Structural tokens are filtered from the text channel. CLOSE
ends the session.

The worker can start the gateway itself (``gateway.command``, with ``$port``, ``$checkpoint_dir``,
``$python``, ``$result_root``, ``$gpu`` (the first visible GPU) and any ``$port_<name>`` filled in; each ``$port*`` is a free loopback
port), waits for ``GET /health``, and stops it (its whole process group, then ``gateway.stop_command``)
when the worker exits. The command is checked against the variant's upstream entry points. Weights
are never fetched: the command points at a local SGLang bundle (``checkpoint_dir``).
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import queue
import re
import shutil
import signal
import socket
import ssl
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from dyafdb import __version__
from dyafdb.agents.base import AgentError, AgentInfo, Frame, Session
from dyafdb.agents.checkpoints import checkpoint_revision, expand, git_head
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError
from dyafdb.schema_check import model_default, schema_default
from dyafdb.agents.registry import adapter, engine

READY, AUDIO, TEXT, SEQ_TRACE, SEQ_DELTA, ERROR, CLOSE, PING, PONG = range(9)
KIND_NAMES = dict(enumerate(["READY", "AUDIO", "TEXT", "SEQ_TRACE", "SEQ_DELTA", "ERROR", "CLOSE", "PING", "PONG"]))

# Raon-Speech config/duplex_infer.yaml (the published duplex inference settings).
OFFICIAL_SAMPLING = {"temperature": 0.9, "top_k": 66, "top_p": 0.95, "eos_penalty": 0.0, "sil_penalty": 0.0, "bc_penalty": 0.0}
VARIANTS: dict[str, dict[str, Any]] = {
    "demo": {
        # query parameters _ws_chat_impl reads; sil_penalty is not one (SamplingConfig keeps 0.0)
        "sampling_keys": ("temperature", "top_k", "top_p", "eos_penalty", "bc_penalty"),
        # what the gateway decodes with whatever the client sends (proto/config.py SamplingConfig)
        "fixed_sampling": {"sil_penalty": 0.0, "code_temperature": 0.8, "code_top_k": 10},
        "honours_speak_first": True,
        # entry points of the two processes (scripts/entrypoint*.sh, docker-compose.yml)
        "entry_points": ("launch_worker.py", "launch_gateway.py"),
    },
    "realtime": {
        "sampling_keys": ("temperature", "top_k", "top_p", "eos_penalty", "sil_penalty", "bc_penalty"),
        "fixed_sampling": {"code_temperature": 0.8, "code_top_k": 10},
        "honours_speak_first": False,  # LocalRealtimeSession builds SessionConfig without speak_first
        "entry_points": ("gradio_duplex_demo.py", "run_gradio_duplex_demo.sh"),
    },
}
DEFAULT_VARIANT = "demo"
DEFAULT_PROMPT_TEMPLATE = "You are engaging in real-time conversation. $prompt"
STRUCTURAL = re.compile(r"<\|[^<>|]*\|>")
PORT_PLACEHOLDER = re.compile(r"\$\{?(port_[A-Za-z0-9_]+)\}?")
MAX_ERRORS_KEPT = 20
# raon_runtime/modules.py _load_backend: where the demo worker looks for SpeechBrain's ECAPA
ECAPA_ENV = "SPEECHBRAIN_ECAPA_SAVEDIR"
ECAPA_DEFAULT_ROOT = "/tmp/speechbrain_ecapa_cache"
ECAPA_DEFAULT_ID = "speechbrain/spkrec-ecapa-voxceleb"
ECAPA_FILES = ("hyperparams.yaml", "embedding_model.ckpt")
# What the demo worker logs when the default speaker was not made or not used (worker/engine.py
# _load_default_speaker_embeds, create_session): WARNING/ERROR, the only levels its actors emit.
VOICE_FAILURES = (
    "failed to compute default speaker embedding from audio",
    "DEFAULT_SPEAKER_AUDIO_PATH does not exist",
    "DEFAULT_SPEAKER_AUDIO_PATH was set, but torchaudio is unavailable",
    "failed to compute silence-fallback speaker embedding",
    "no default speaker embedding is available; falling back to speaker_mode=none",
)
VOICE_CHECKS = ("fail", "mark")


def ecapa_location(params: dict[str, Any]) -> tuple[Path, str, str]:
    """(cache root, model id, where the root comes from) as the demo worker will resolve them."""
    env = (params.get("gateway") or {}).get("env") or {}
    if env.get(ECAPA_ENV):
        root, origin = str(env[ECAPA_ENV]), f"params.gateway.env.{ECAPA_ENV}"
    elif os.environ.get(ECAPA_ENV):
        root, origin = os.environ[ECAPA_ENV], f"{ECAPA_ENV} in the environment"
    else:
        root, origin = ECAPA_DEFAULT_ROOT, f"upstream's default ({ECAPA_ENV} unset)"
    model_id = ECAPA_DEFAULT_ID
    if params.get("checkpoint_dir"):  # the bundle's speaker encoder may name another SpeechBrain model
        try:
            cfg = json.loads((expand(params["checkpoint_dir"]) / "raon_runtime" / "config.json").read_text())
            model_id = (cfg.get("speaker_encoder_config") or {}).get("pretrained_model_id") or model_id
        except (OSError, ValueError, AttributeError):
            pass
    return expand(root), model_id, origin


def ecapa_problem(params: dict[str, Any], model: str) -> tuple[str, str] | None:
    """(what is missing, the fix) when the demo worker's speaker encoder is not on local disk; None if it is
    or the voice does not need it (realtime variant, speaker_mode none)."""
    if str(params.get("variant", DEFAULT_VARIANT)) != "demo" or str(params.get("speaker_mode", "default")) == "none":
        return None
    root, model_id, origin = ecapa_location(params)
    folder = root / model_id.replace("/", "_")
    done = Path(f"{folder}.done")
    missing = [f for f in ECAPA_FILES if not (folder / f).is_file()] + ([done.name] if not done.exists() else [])
    if not missing:
        return None
    return (f"model {model}: Raon's speaker encoder ({model_id}, SpeechBrain ECAPA) is not on local disk: {folder} "
            f"(root from {origin}) lacks {', '.join(missing)}; the demo gateway would download it at run time, and "
            "on a node without network run every session with no speaker, only logging it",
            f"on a machine with network `huggingface-cli download {model_id} --local-dir {folder} && touch {done}`, "
            f"then copy {root} to the GPU node, or point models.{model}.params.gateway.env.{ECAPA_ENV} at a shared "
            "folder holding it (docs/models.md)")


def starts_ray_head(params: dict[str, Any]) -> bool:
    """Whether each worker's gateway command starts its own Ray head (the demo's launch_worker.py --role head)."""
    argv = (params.get("gateway") or {}).get("command")
    text = " ".join(str(a) for a in argv) if isinstance(argv, list) else ""
    return str(params.get("variant", DEFAULT_VARIANT)) == "demo" and "launch_worker.py" in text and "worker-node" not in text


def self_play_problem(config: dict[str, Any], model: str) -> tuple[str, str] | None:
    """(why, the fix) when an enabled suite pairs ``model`` with itself while each worker starts a Ray head:
    a self-play job puts both workers on one node, where two heads collide and ``ray stop`` ends both."""
    if not starts_ray_head((config["models"][model].get("params") or {})):
        return None
    engine = config["models"][model].get("engine")
    if engine is not None and int(engine.get("sessions", model_default("engine", "sessions"))) >= 2:
        return None  # an engine runs one gateway per node, and both sides are sessions of it (RaonEngine)
    suites = [name for name, suite in (config.get("suites") or {}).items()
              if suite.get("enabled", schema_default("config", "suites", "<suite>", "enabled")) and model in suite.get("models", [])
              and not suite.get("cross_play_only", schema_default("config", "suites", "<suite>", "cross_play_only"))
              and (not suite.get("only_with") or model in suite["only_with"])]
    if not suites:
        return None
    return (f"suites {', '.join(suites)} self-play {model}, and each {model} worker starts its own Ray head "
            "(params.gateway.command runs launch_worker.py --role head): two on one node collide and `ray stop` "
            "ends both",
            f"give models.{model} an engine section (engine: {{sessions: 8}}: one gateway per node, both sides its "
            "sessions); or start one demo gateway on the node by hand (FD_MAX_SESSIONS_PER_GPU=2 python3 launch_worker.py --role "
            "head ... and launch_gateway.py --http, output to a log file), set models."
            f"{model}.params.url to it and params.gateway_log to that log, and drop params.gateway; or set "
            "cross_play_only: true on those suites (docs/models.md)")


class GatewayLog:
    """New complete lines of the gateway's log since the last read."""

    def __init__(self, path: Path, offset: int = 0):
        self.path, self.offset = path, offset
        self._partial = b""

    def new_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        return [line.decode(errors="replace") for line in lines]


def clean_text(delta: str) -> str | None:
    """A TEXT delta without structural markers; segment-break newlines become spaces.

    Leading spaces are kept (deltas are BPE pieces that carry their own spacing); a delta that is
    only structure or whitespace yields nothing. Markers are dropped outright, as the gateways' own
    filter drops them; the gateways already turn silence/segment-start tokens into newlines.
    """
    text = STRUCTURAL.sub("", delta)
    text = re.sub(r"\s+", " ", text)
    return text if text.strip() else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the gateway child: own process group, and SIGTERM if the worker dies (Linux)."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def check_gateway_command(params: dict[str, Any], model: str) -> None:
    """The gateway launch command must start the upstream entry point(s) of the configured variant.

    A command that starts the other variant's server would connect and then fail on every session
    (or, worse, run with that server's semantics); the demo gateway serves HTTPS unless told
    ``--http``, which an ``http://`` url cannot talk to.
    """
    variant = str(params.get("variant", DEFAULT_VARIANT))
    spec = params.get("gateway")
    if not spec:
        return
    argv = spec.get("command") if isinstance(spec, dict) else None
    if not isinstance(argv, list) or not argv:
        raise InputError(f"models.{model}.params.gateway.command must be a list (the gateway's argv)")
    text = " ".join(str(a) for a in argv)
    others = [v for v in VARIANTS if v != variant]
    for other in others:
        hit = [e for e in VARIANTS[other]["entry_points"] if e in text]
        if hit:
            raise InputError(f"models.{model}.params.gateway.command starts {hit[0]}, the entry point of the "
                             f"'{other}' Raon gateway, but params.variant is '{variant}'; set variant: {other} or "
                             f"start {' and '.join(VARIANTS[variant]['entry_points'])} (see docs/models.md)")
    wanted = VARIANTS[variant]["entry_points"]
    if variant == "demo":
        missing = [e for e in wanted if e not in text]
    else:
        missing = [] if any(e in text for e in wanted) else [" or ".join(wanted)]
    if missing and not spec.get("unchecked", False):
        raise InputError(f"models.{model}.params.gateway.command does not start {', '.join(missing)} (the upstream entry "
                         f"point of the '{variant}' gateway); fix the command, or set gateway.unchecked: true for a "
                         "wrapper script you have checked yourself (see docs/models.md)")
    url = str(params.get("url", "http://127.0.0.1:$port"))
    if variant == "demo" and "launch_gateway.py" in text and url.startswith("http:") and not re.search(r"(^|\s)--http(\s|$)", text):
        raise InputError(f"models.{model}.params.gateway.command: launch_gateway.py serves HTTPS unless given --http, "
                         f"but params.url is {url}; add --http (loopback) or use an https url")


class GatewayProcess:
    """A gateway started by this worker; stopped with its whole process group at exit."""

    def __init__(self, argv: list[str], cwd: str | None, env: dict[str, str], log_path: Path,
                 stop_argv: list[str] | None = None):
        self.log_path = log_path
        self.stop_argv = stop_argv
        self._log = open(log_path, "ab")
        self._cwd, self._env = cwd, {**os.environ, **env}
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=self._env, stdin=subprocess.DEVNULL,
                                         stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        except OSError as exc:
            raise AgentError(f"cannot start the Raon gateway {argv!r}: {exc}") from None
        atexit.register(self.stop)

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def log_tail(self, lines: int = 15) -> str:
        try:
            tail = deque(self.log_path.read_text(errors="replace").splitlines(), maxlen=lines)
        except OSError:
            return ""
        return ("\n  gateway log (last lines):\n    " + "\n    ".join(tail)) if tail else ""

    def stop(self) -> None:
        try:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            else:  # the gateway died; its helpers (SGLang schedulers) may still hold the GPU
                os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.stop_argv:  # daemons that left the process group (`ray start` daemonizes)
            try:
                subprocess.run(self.stop_argv, cwd=self._cwd, env=self._env, stdin=subprocess.DEVNULL,
                               stdout=self._log, stderr=subprocess.STDOUT, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.stop_argv = None
        if not self._log.closed:
            self._log.close()


UPSTREAM = {"demo": ("krafton-ai/Raon-SpeechChat-Demo", "5b3bc6fa6694ef1b6478013df34eedf72c1c59b3"),
            # upstream is not public in the store; its history up to this merge is in devyoongu/Raon-Speech
            "realtime": ("krafton-ai/Raon-Speech", "afec41185e27653aa905d4ad28a7b8497681275e")}


def gateway_code(params: dict[str, Any], model: str) -> dict[str, Any]:
    """The gateway checkout's commit against the one the adapter was checked against (``gateway.cwd``)."""
    variant = str(params.get("variant", DEFAULT_VARIANT))
    repo, pinned = UPSTREAM[variant]
    spec = params.get("gateway") or {}
    info: dict[str, Any] = {"gateway_repo": repo, "gateway_commit_checked": pinned}
    if not spec.get("cwd"):
        info["gateway_commit"] = "unknown (no gateway.cwd)"
        return info
    head = git_head(expand(spec["cwd"]))
    info["gateway_commit"] = head or "unknown (not a git checkout)"
    if head and head != pinned and not params.get("allow_other_code", False):
        raise InputError(f"model {model}: the gateway checkout {expand(spec['cwd'])} is at {head[:7]}, but the adapter was "
                         f"checked against {repo} @ {pinned[:7]}; `git -C {expand(spec['cwd'])} checkout {pinned[:7]}`, "
                         "or set params.allow_other_code: true to run it anyway")
    return info


@adapter("raon")
class RaonAgent:
    @staticmethod
    def missing_weights(params: dict[str, Any], model: str) -> list[str]:
        """What is missing for this model to start, each with where to put it (empty: ready)."""
        problems = []
        variant = str(params.get("variant", DEFAULT_VARIANT))
        if params.get("checkpoint_dir"):
            bundle = expand(params["checkpoint_dir"])
            lacking = [d for d in ("text_model", "raon_runtime") if not (bundle / d).is_dir()]
            if lacking:
                problems.append(f"model {model}: SGLang bundle {bundle} (params.checkpoint_dir) lacks {', '.join(d + '/' for d in lacking)}; "
                                "download KRAFTON/Raon-SpeechChat-9B on a machine with network (`huggingface-cli download "
                                "KRAFTON/Raon-SpeechChat-9B --local-dir <dir>`), export it with `python -m raon.export "
                                f"--input_path <dir> --output_path {bundle} --dtype bfloat16` and copy it here")
        spec = params.get("gateway") or {}
        if spec.get("cwd") and not expand(spec["cwd"]).is_dir():
            repo, commit = UPSTREAM.get(variant, ("?", "?"))
            problems.append(f"model {model}: the gateway's checkout {expand(spec['cwd'])} (params.gateway.cwd) does not exist; "
                            f"`git clone https://github.com/{repo} {expand(spec['cwd'])}` and check out {commit[:7]}")
        elif spec.get("cwd"):
            try:
                gateway_code(params, model)
            except InputError as exc:
                problems.append(str(exc))
        ecapa = ecapa_problem(params, model)
        if ecapa:
            problems.append(f"{ecapa[0]}; fix: {ecapa[1]}")
        if params.get("speaker_audio") and not expand(params["speaker_audio"]).is_file():
            problems.append(f"models.{model}.params.speaker_audio: {expand(params['speaker_audio'])} does not exist "
                            "(the demo ships data/raon.wav)")
        return problems

    def __init__(self, params: dict[str, Any], model_name: str = "raon"):
        self.params = params
        self.model_name = model_name
        self.variant = str(params.get("variant", DEFAULT_VARIANT))
        if self.variant not in VARIANTS:
            raise InputError(f"models.{model_name}.params.variant = {self.variant!r}; use 'demo' (Raon-SpeechChat-Demo, "
                             "query-parameter session on /ws/chat) or 'realtime' (Raon-Speech demo/realtime, session-start POST)")
        self.spec = VARIANTS[self.variant]
        sampling = params.get("sampling") or {}
        unknown = sorted(set(sampling) - set(self.spec["sampling_keys"]))
        if unknown:
            raise InputError(f"models.{model_name}.params.sampling: unknown key(s) {', '.join(unknown)} for the "
                             f"{self.variant} gateway; allowed: {', '.join(self.spec['sampling_keys'])}")
        # sent on every session, so neither gateway's own defaults apply
        self.sampling_sent = {k: sampling.get(k, OFFICIAL_SAMPLING[k]) for k in self.spec["sampling_keys"]}
        self.step_timeout_s = float(params.get("step_timeout_s", 30))
        self.prompt_template = str(params.get("prompt_template", DEFAULT_PROMPT_TEMPLATE))
        self.speaker_mode = str(params.get("speaker_mode", "default"))
        if self.speaker_mode not in ("none", "default"):
            raise InputError(f"models.{model_name}.params.speaker_mode = {self.speaker_mode!r}; use 'default' (the "
                             "pinned speaker) or 'none'; the gateways treat 'recorded' as 'default'")
        self.speak_first_for_opener = bool(params.get("speak_first_for_opener", True))
        self.voice_check = str(params.get("voice_check", "fail"))
        if self.voice_check not in VOICE_CHECKS:
            raise InputError(f"models.{model_name}.params.voice_check = {self.voice_check!r}; use 'fail' (a voice the "
                             "gateway did not apply fails the recording) or 'mark' (meta.json records it)")
        # the demo's voice is per worker and only its log tells whether it was made (see the module docstring)
        self.voice_watched = self.variant == "demo" and self.speaker_mode != "none"
        self._voice_problem: str | None = None
        self._voice_predicted = False  # the problem is ECAPA missing, until the gateway's own line replaces it
        self._voice_log: GatewayLog | None = None
        self._voice_owner: RaonAgent = self  # an engine's sessions share the gateway's voice state
        self._voice_lock = threading.Lock()
        check_gateway_command(params, model_name)
        self.code_info = gateway_code(params, model_name)
        if params.get("checkpoint_dir"):
            self.code_info["checkpoint_revision"] = checkpoint_revision(expand(params["checkpoint_dir"])) or "unknown"
        self.speaker_audio = str(expand(params["speaker_audio"])) if params.get("speaker_audio") else None
        # the realtime gateway writes ~20 MB of artifacts per session: into a scratch folder we delete
        self.result_root = Path(tempfile.mkdtemp(prefix=f"raon-results-{model_name}-"))
        atexit.register(shutil.rmtree, self.result_root, True)
        self.ssl_context = None
        self.gateway: GatewayProcess | None = None
        self.base_url = self._start_gateway()
        self.ws = None
        self._reader: threading.Thread | None = None
        self._inbox: queue.Queue = queue.Queue()
        self._session_id: str | None = None
        self._audio_out = np.zeros(0, dtype=np.float32)
        self._errors: list[tuple[int, str]] = []
        self._error_count = 0
        self._pending_uri: str | None = None
        self.tick = 0

    # -- the gateway -----------------------------------------------------------------------------
    def _start_gateway(self) -> str:
        url = str(self.params.get("url", "http://127.0.0.1:$port"))
        spec = self.params.get("gateway")
        if url.startswith("https") and not self.params.get("tls_verify", False):
            self.ssl_context = ssl.create_default_context()  # loopback with the gateway's self-signed certificate
            self.ssl_context.check_hostname = False
            self.ssl_context.verify_mode = ssl.CERT_NONE
        if not spec:
            if "$port" in url:
                raise InputError(f"models.{self.model_name}.params.url has $port but no gateway.command starts a gateway")
            if self.params.get("gateway_log"):  # a gateway started by hand: its whole log is this gateway's
                self._voice_log = GatewayLog(expand(self.params["gateway_log"]))
            self._wait_healthy(url, float(self.params.get("health_timeout_s", 30)))
            return url.rstrip("/")
        ecapa = ecapa_problem(self.params, self.model_name) if self.voice_watched else None
        if ecapa and self.voice_check == "fail":  # before a 20-minute model load that cannot give the voice
            raise InputError(f"{ecapa[0]}; fix: {ecapa[1]}, or set models.{self.model_name}.params.voice_check: mark")
        if ecapa:
            self._voice_problem, self._voice_predicted = ecapa[0], True
        argv = spec["command"]
        port = int(spec.get("port") or 0) or free_port()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        subs = {"port": str(port), "python": sys.executable, "result_root": str(self.result_root),
                "gpu": visible if visible.isdigit() else "0"}  # the demo's launch_worker checks ids against it
        for item in [*argv, *(spec.get("stop_command") or []), *(spec.get("env") or {}).values()]:
            for name in PORT_PLACEHOLDER.findall(str(item)):
                subs.setdefault(name, str(free_port()))
        if self.params.get("checkpoint_dir"):
            bundle = expand(self.params["checkpoint_dir"])
            if not bundle.is_dir():
                raise InputError(
                    f"model {self.model_name}: SGLang bundle {bundle} (params.checkpoint_dir) does not exist; download "
                    "KRAFTON/Raon-SpeechChat-9B on a machine with network (`huggingface-cli download KRAFTON/Raon-SpeechChat-9B "
                    "--local-dir <dir>`), export it with `python -m raon.export --input_path <dir> --output_path "
                    f"{bundle} --dtype bfloat16` (krafton-ai/Raon-Speech), and copy it here; see docs/models.md")
            subs["checkpoint_dir"] = str(bundle)
        # $port, $checkpoint_dir, $python (string.Template): braces would clash with Snakemake's wildcards
        fill = lambda s: string.Template(str(s)).safe_substitute(subs)  # noqa: E731
        if spec.get("log"):
            log = expand(fill(spec["log"]))
            log.parent.mkdir(parents=True, exist_ok=True)
        else:
            log = Path(tempfile.mkstemp(prefix=f"raon-gateway-{port}-", suffix=".log")[1])
        env = {k: fill(v) for k, v in (spec.get("env") or {}).items()}
        if ECAPA_ENV in env:  # upstream makes the folder as given: a literal "~" would land in the checkout
            env[ECAPA_ENV] = str(expand(env[ECAPA_ENV]))
        if self.variant == "demo" and self.speaker_audio:
            # the demo's voice is per worker: worker/engine.py reads it once at start. No
            # DEFAULT_SPEAKER_LABEL: upstream reports a label as the source even when nothing was embedded.
            env["DEFAULT_SPEAKER_AUDIO_PATH"] = self.speaker_audio
        stop = [fill(a) for a in spec["stop_command"]] if spec.get("stop_command") else None
        log_start = log.stat().st_size if log.exists() else 0  # the log may hold earlier gateways' lines
        self.gateway = GatewayProcess([fill(a) for a in argv], str(expand(fill(spec["cwd"]))) if spec.get("cwd") else None,
                                      env, log, stop)
        self._voice_log = GatewayLog(log, log_start)
        url = fill(url).rstrip("/")
        try:
            self._wait_healthy(url, float(spec.get("startup_timeout_s", 1200)))
        except BaseException:
            self.gateway.stop()  # a gateway that never became healthy must not hold its GPU
            raise
        return url

    def _http(self, method: str, url: str, body: dict | None = None, timeout: float = 10.0) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout, context=self.ssl_context) as response:
            return json.loads(response.read() or b"{}")

    def _healthy(self, status: dict) -> bool:
        if status.get("status") != "ok":
            return False
        router = status.get("router")
        return not isinstance(router, dict) or "healthy_worker_count" not in router or router["healthy_worker_count"] > 0

    def _wait_healthy(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            if self.gateway is not None and self.gateway.exit_code() is not None:
                raise AgentError(f"Raon gateway exited with code {self.gateway.exit_code()} before it became healthy"
                                 f"{self.gateway.log_tail()}")
            try:
                status = self._http("GET", f"{url}/health", timeout=5)
                if self._healthy(status):
                    return
                last = json.dumps(status)[:300]
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                tail = self.gateway.log_tail() if self.gateway else ""
                raise AgentError(f"Raon gateway at {url} not healthy after {timeout:g} s (GET /health: {last}); "
                                 f"start it or fix params.url / params.gateway{tail}")
            time.sleep(0.5)

    def _gateway_state(self, settle_s: float = 2.0) -> str:
        """Whether the gateway we started is alive, for error messages (a dying one gets a moment to exit)."""
        if self.gateway is None:
            return ""
        try:
            self.gateway.proc.wait(timeout=settle_s)
        except subprocess.TimeoutExpired:
            pass
        code = self.gateway.exit_code()
        state = "still running" if code is None else f"exited with code {code}"
        return f"; the gateway process {state}{self.gateway.log_tail()}"

    # -- session start ---------------------------------------------------------------------------
    def _ws_base(self) -> str:
        return "ws" + self.base_url[len("http"):] if self.base_url.startswith("http") else self.base_url

    def _start_session(self, session: Session, prompt: str, speak_first: bool) -> str:
        if self.variant == "demo":
            query = {"prompt": f"eng:full_duplex:{'speak-first' if speak_first else 'listen-first'}",
                     "prompt_language": "eng", "system_prompt_style": "custom", "custom_system_prompt": prompt,
                     "speaker_mode": self.speaker_mode, **{k: str(v) for k, v in self.sampling_sent.items()}}
            path = str(self.params.get("ws_path", "/ws/chat"))
            return f"{self._ws_base()}{path}?{urllib.parse.urlencode(query)}"
        # speak_first is sent for the record, but LocalRealtimeSession never reads it
        body: dict[str, Any] = {"prompt": prompt, "prompt_role": "system", "speaker_mode": self.speaker_mode,
                                "speak_first": speak_first, "sampling": dict(self.sampling_sent)}
        if self.speaker_audio and self.speaker_mode != "none":
            body["speaker_audio"] = self.speaker_audio
        session_id = f"{session.conversation_id}-{session.side}-{uuid.uuid4().hex[:8]}"
        try:
            reply = self._http("POST", f"{self.base_url}/realtime/session/start",
                               {"session_id": session_id, "force_restart": True, "result_root": str(self.result_root),
                                "session": body}, timeout=self.step_timeout_s)
        except urllib.error.HTTPError as exc:
            raise AgentError(f"Raon gateway refused the session start: HTTP {exc.code} {exc.read()[:300]!r}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise AgentError(f"Raon gateway unreachable at session start: {exc}{self._gateway_state()}") from None
        self._session_id = str(reply.get("session_id") or session_id)
        ws_path = str(reply.get("ws_path") or "/realtime/ws")
        return f"{self._ws_base()}{ws_path}?{urllib.parse.urlencode({'session_id': self._session_id})}"

    def _scan_voice(self) -> None:
        """Upstream's speaker-failure lines in the gateway log since the last look."""
        owner = self._voice_owner
        if owner is not self:  # one gateway, one log: its owner reads it for every session
            owner._scan_voice()
            with owner._voice_lock:
                self._voice_problem, self._voice_predicted = owner._voice_problem, owner._voice_predicted
            return
        if self._voice_log is None:
            return
        with self._voice_lock:
            self._scan_voice_locked()

    def _scan_voice_locked(self) -> None:
        for line in self._voice_log.new_lines():
            if (self._voice_problem is None or self._voice_predicted) and any(m in line for m in VOICE_FAILURES):
                self._voice_problem, self._voice_predicted = f"the gateway log says: {line.strip()[:300]}", False

    def _voice_failed(self, doing: str) -> AgentError:
        return AgentError(f"Raon gateway is not applying the configured voice ({self._voice()}) while {doing}: "
                          f"{self._voice_problem}; the session would run with another or no speaker. Put SpeechBrain's "
                          f"ECAPA and the speaker wav where the gateway reads them (dyafdb plan --check names both), or "
                          f"set models.{self.model_name}.params.voice_check: mark to record such sessions marked")

    def _voice_facts(self) -> dict[str, Any]:
        """What meta.json says about the voice: applied or not, and how the adapter knows."""
        if not self.voice_watched:
            return {}
        if self._voice_problem:
            return {"voice_applied": False, "voice_problem": self._voice_problem}
        if self._voice_log is None:
            return {"voice_applied": "unknown", "voice_evidence": "the gateway was started elsewhere and "
                    "params.gateway_log is not set, so its speaker lines cannot be read"}
        return {"voice_applied": True, "voice_evidence": (
            "inferred: the speaker encoder's files are on local disk and the gateway log has no speaker-failure line "
            "(upstream reports the speaker only in its log; its worker actors log WARNING and ERROR only)")}

    def _voice(self) -> str:
        if self.voice_watched and self._voice_problem:
            return "none (the gateway ran without the configured speaker: see extra.voice_problem)"
        if self.speaker_mode == "none":
            return "none (speaker_mode none: no speaker conditioning)"
        if self.speaker_audio and (self.variant == "realtime" or self.gateway is not None):
            return Path(self.speaker_audio).name  # demo: only a worker this adapter started was given it
        if self.variant == "demo":
            return ("gateway worker's default speaker (DEFAULT_SPEAKER_AUDIO_PATH of the running worker, unknown "
                    "to the adapter; a 1 s silence embedding when unset)")
        return "none (no speaker_audio: the realtime gateway runs without speaker conditioning)"

    def _connect(self, uri: str) -> None:
        from websockets.sync.client import connect

        try:
            # __enter__ gives the connection on every websockets version (17 wants connect() as a context manager)
            self.ws = connect(uri, max_size=None, open_timeout=self.step_timeout_s, compression=None,
                              ssl=self.ssl_context if uri.startswith("wss") else None).__enter__()
        except Exception as exc:
            raise AgentError(f"cannot connect to the Raon gateway at {uri.split('?')[0]}: {exc}{self._gateway_state()}") from None
        self._reader = threading.Thread(target=self._read_loop, args=(self.ws,), daemon=True, name="raon-reader")
        self._reader.start()
        self._expect_ready(float(self.params.get("session_timeout_s", 120)))

    def open(self, session: Session) -> AgentInfo:
        self.close()
        self.tick = 0
        self._audio_out = np.zeros(0, dtype=np.float32)
        self._inbox = queue.Queue()
        self._errors, self._error_count = [], 0
        asked = self.speak_first_for_opener and session.is_opener
        speak_first = asked and self.spec["honours_speak_first"]
        prompt = string.Template(self.prompt_template).safe_substitute(prompt=session.prompt.strip())
        if self.voice_watched:
            self._scan_voice()
            if self._voice_problem and self.voice_check == "fail":
                raise self._voice_failed("opening the session")
            if self._voice_log is None and self.voice_check == "fail":
                raise InputError(f"models.{self.model_name}.params.gateway_log is not set: the adapter cannot tell whether "
                                 "the gateway started by hand applies the voice (only its log says); set it to the file "
                                 "launch_worker.py writes to, or set params.voice_check: mark")
        uri = self._start_session(session, prompt, asked)
        if self.variant == "demo":
            # The demo's worker closes a session after 15 s without audio (idle_timeout_seconds, counted
            # from READY): connect at the first tick, not while the partner is still opening its session.
            self._pending_uri = uri
        else:
            self._connect(uri)
        extra: dict[str, Any] = {
            "variant": self.variant, "session_id": self._session_id, "speak_first": speak_first,
            "speaker_mode": self.speaker_mode, "seed": "none: the gateway has no seed parameter",
            "prompt_template": self.prompt_template, **self.code_info, **self._voice_facts()}
        if asked and not speak_first:
            extra["speak_first_ignored"] = ("requested for the opener, but Raon-Speech demo/realtime's LocalRealtimeSession "
                                            "does not pass speak_first to the model: it listens first")
        return AgentInfo(adapter="raon", adapter_version=__version__, model=self.model_name, voice=self._voice(),
                         sampling={**self.sampling_sent, **self.spec["fixed_sampling"]}, extra=extra)

    # -- frames ----------------------------------------------------------------------------------
    def _read_loop(self, ws: Any) -> None:
        """Answer PINGs at once; hand every other frame to the tick loop, then why the link ended."""
        from websockets.exceptions import ConnectionClosed

        try:
            for message in ws:
                if isinstance(message, str) or not message:
                    self._inbox.put(("bad", f"unexpected {'text' if isinstance(message, str) else 'empty'} message"))
                    continue
                kind, payload = message[0], message[1:]
                if kind == PING:
                    ws.send(bytes([PONG]) + payload)
                    continue
                self._inbox.put((kind, payload))
            self._inbox.put(("closed", f"connection closed by the gateway ({ws.close_code} {ws.close_reason or ''})".strip()))
        except ConnectionClosed as exc:
            self._inbox.put(("closed", f"connection lost: {exc}"))
        except Exception as exc:  # the socket died under us
            self._inbox.put(("closed", f"connection lost: {type(exc).__name__}: {exc}"))

    def _error_summary(self) -> str:
        if not self._errors:
            return ""
        shown = "; ".join(f"tick {t}: {m}" for t, m in self._errors[-3:])
        return f" (after {self._error_count} ERROR frame(s) from the gateway, last: {shown})"

    def _next(self, timeout: float, doing: str) -> tuple[Any, bytes]:
        """The next frame that matters; ERROR frames are counted, since upstream goes on after them."""
        while True:
            try:
                kind, payload = self._inbox.get(timeout=timeout)
            except queue.Empty:
                raise AgentError(f"Raon gateway sent nothing for {timeout:g} s while {doing}"
                                 f"{self._error_summary()}{self._gateway_state()}") from None
            if kind == ERROR:
                self._error_count += 1
                if len(self._errors) < MAX_ERRORS_KEPT:  # the demo sends it after the failed tick's audio
                    tick = self.tick - 1 if self.variant == "demo" and self.tick else self.tick
                    self._errors.append((tick, payload.decode(errors="replace")))
                continue
            if kind == "closed":
                raise AgentError(f"Raon gateway died while {doing}: {payload}{self._error_summary()}{self._gateway_state()}")
            if kind == "bad":
                raise AgentError(f"Raon gateway broke the frame protocol while {doing}: {payload}")
            if kind == CLOSE:
                hint = ("; the demo gateway also closes a session that got no audio for 15 s (idle_timeout_seconds), "
                        "e.g. while a slow partner stepped") if self.variant == "demo" and not self._errors else ""
                raise AgentError(f"Raon gateway closed the session while {doing}: "
                                 f"{payload.decode(errors='replace') or 'no reason'}{self._error_summary()}{hint}")
            if kind not in KIND_NAMES:
                raise AgentError(f"Raon gateway sent an unknown frame kind {kind} while {doing}")
            return kind, payload

    def _expect_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            kind, _ = self._next(max(deadline - time.monotonic(), 0.01), "starting the session (waiting for READY)")
            if kind == READY:
                return

    def step(self, heard: np.ndarray) -> Frame:
        if self.ws is None and self._pending_uri:
            uri, self._pending_uri = self._pending_uri, None
            self._connect(uri)
        if self.ws is None:
            raise AgentError("Raon: step() before open()")
        doing = f"stepping tick {self.tick}"
        try:
            self.ws.send(bytes([AUDIO]) + np.ascontiguousarray(heard, dtype="<f4").tobytes())
        except Exception as exc:
            raise AgentError(f"Raon gateway died while {doing}: cannot send ({exc}){self._gateway_state()}") from None
        text: list[str] = []
        deadline = time.monotonic() + self.step_timeout_s
        while True:
            kind, payload = self._next(max(deadline - time.monotonic(), 0.01), doing)
            if kind == TEXT:
                cleaned = clean_text(payload.decode("utf-8", errors="replace"))
                if cleaned:
                    text.append(cleaned)
            elif kind == AUDIO:
                if len(payload) % 4:
                    raise AgentError(f"Raon gateway sent an AUDIO frame of {len(payload)} bytes (not float32) while {doing}")
                self._audio_out = np.concatenate([self._audio_out, np.frombuffer(payload, dtype="<f4").astype(np.float32)])
                break
            # READY, PONG and the SEQ_* traces carry nothing the recording needs
        if self.voice_watched and (self._voice_problem is None or self._voice_predicted):
            self._scan_voice()  # the per-session WARNING comes with create_session, forwarded with a delay
            if self._voice_problem and self.voice_check == "fail":
                raise self._voice_failed(doing)
        audio = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        n = min(FRAME_SAMPLES, len(self._audio_out))
        audio[:n] = self._audio_out[:n]
        self._audio_out = self._audio_out[n:]
        self.tick += 1
        return Frame(audio, text)

    def _drain_errors(self) -> None:
        """ERROR frames that came after the last AUDIO (the demo sends a streak's first ERROR after its audio)."""
        while True:
            try:
                kind, payload = self._inbox.get_nowait()
            except queue.Empty:
                return
            if kind == ERROR:
                self._error_count += 1
                if len(self._errors) < MAX_ERRORS_KEPT:
                    self._errors.append((max(self.tick - 1, 0), payload.decode(errors="replace")))

    def close(self) -> dict[str, Any] | None:
        """End the session; returns the recoverable errors and, for realtime, what the gateway applied."""
        ws, self.ws = self.ws, None
        pending, self._pending_uri = self._pending_uri, None
        if ws is None and self._session_id is None:
            return None if pending is None else {"recoverable_errors": 0, "gateway_errors": []}
        if ws is not None:
            self._drain_errors()
            try:
                ws.send(bytes([CLOSE]) + b"client_finish")
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:  # realtime answers CLOSE; the demo just hangs up
                    kind, payload = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
                    if kind == ERROR:
                        self._error_count += 1
                    if kind in (CLOSE, "closed"):
                        break
            except Exception:
                pass
            try:
                ws.close()
            except Exception:
                pass
            if self._reader is not None:
                self._reader.join(timeout=5)
        report: dict[str, Any] = {"recoverable_errors": self._error_count,
                                  "gateway_errors": [[t, m] for t, m in self._errors]}
        if self.voice_watched:
            self._scan_voice()  # a failure seen only now is recorded: close cannot fail the recording
            report.update(self._voice_facts())
        if self.variant == "realtime" and self._session_id:
            try:
                finish = self._http("POST", f"{self.base_url}/realtime/session/finish", {"session_id": self._session_id},
                                    timeout=30)
                applied = (finish.get("metadata") or {}).get("session_params") or {}
                if applied:
                    report["gateway_applied"] = {k: applied.get(k) for k in ("speaker_audio", "sampling", "speaker_mode")}
                    if self.speaker_audio and not applied.get("speaker_audio"):
                        report["voice_applied"] = False  # the gateway could not load the wav: unconditioned voice
            except (urllib.error.URLError, OSError, ValueError):
                pass  # the gateway finishes the session itself when the socket closes
            for child in self.result_root.iterdir() if self.result_root.is_dir() else []:
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
        self._session_id = None
        return report


# launch_worker.py: --max-sessions-per-gpu defaults to FD_MAX_SESSIONS_PER_GPU, else 2
UPSTREAM_SESSIONS_PER_GPU = 2


def gateway_sessions(params: dict[str, Any], model: str, capacity: int) -> int:
    """Sessions the engine's gateway runs at once: the demo worker's ``--max-sessions-per-gpu`` (or
    FD_MAX_SESSIONS_PER_GPU) where the config sets it, else upstream's default of 2, never more than
    ``engine.sessions``; 1 for the realtime gateway (one active session per process; a start with
    ``force_restart`` ends the active one)."""
    if str(params.get("variant", DEFAULT_VARIANT)) == "realtime":
        return 1
    spec = params.get("gateway") or {}
    given = (spec.get("env") or {}).get("FD_MAX_SESSIONS_PER_GPU")
    text = " ".join(str(a) for a in spec.get("command") or [])
    flag = re.search(r"--max-sessions-per-gpu[ =](\d+)", text)
    if flag:
        given = flag.group(1)
    try:
        at_once = int(given) if given is not None else UPSTREAM_SESSIONS_PER_GPU
    except ValueError:
        raise InputError(f"models.{model}.params.gateway: FD_MAX_SESSIONS_PER_GPU = {given!r} is not a number") from None
    return max(1, min(at_once, capacity))


@engine("raon")
class RaonEngine:
    """Raon behind an engine: one gateway (the model load) per GPU, hosting record jobs' sessions.

    The gateway already is a long-lived server that holds the frame clock and each session's state, so
    the engine is its service: it starts the gateway once, as the adapter does (the same command checks,
    ECAPA check, voice, log), and each record job's session is a client session of that gateway. Which
    state is per session and which is shared (krafton-ai/Raon-SpeechChat-Demo @ 5b3bc6f): per session
    ``worker/session.py`` ``SessionState`` (raw input buffer, ``RaonDecodingState`` with the KV cache and
    sequences, prompt tokens, a copy of the speaker embedding, sampling, error streaks, idle clock);
    shared ``worker/engine.py`` ``RaonEngine``'s SGLang model and tokenizer, the default speaker embedded
    once at worker start (``_load_default_speaker_embeds``), and ``_model_lock``, under which every
    session's decode step runs (sessions are served one step at a time, not batched). ``create_session``
    refuses more than ``max_sessions`` (``--max-sessions-per-gpu`` / FD_MAX_SESSIONS_PER_GPU, default 2):
    that many sessions run at once (:func:`gateway_sessions`), and ``engine.sessions`` share the load,
    taking turns. The realtime gateway has one active session per process, so there it is one.

    One gateway also means one Ray head per node: raon+raon self-play runs as two sessions of it.
    The gateway dying fails every hosted session and the engine; a session's own CLOSE or decode errors
    end or mark that session only, as in a per-job worker.
    """

    lockstep = False

    def __init__(self, params: dict[str, Any], model_name: str = "raon", capacity: int = 16):
        params = copy.deepcopy(params)
        self.concurrent = gateway_sessions(params, model_name, capacity)
        if params.get("gateway") and str(params.get("variant", DEFAULT_VARIANT)) == "demo":
            # the worker takes as many as the engine hands out turns (its flag, where given, wins: equal)
            params["gateway"].setdefault("env", {}).setdefault("FD_MAX_SESSIONS_PER_GPU", str(self.concurrent))
        self.model_name, self.capacity = model_name, capacity
        self.primary = RaonAgent(params, model_name)  # starts the gateway: the one model load
        self._sessions: dict[int, RaonAgent] = {}
        self._lock = threading.Lock()
        self.sessions_hosted = 0

    def session_agent(self) -> RaonAgent:
        """A client session of the engine's gateway, sharing its process, url and voice state."""
        agent = copy.copy(self.primary)
        agent._voice_owner = self.primary
        agent.ws, agent._reader, agent._session_id, agent._pending_uri = None, None, None, None
        agent._inbox = queue.Queue()
        agent._audio_out = np.zeros(0, dtype=np.float32)
        agent._errors, agent._error_count, agent.tick = [], 0, 0
        return agent

    def open(self, session: Session) -> tuple[int, AgentInfo]:
        agent = self.session_agent()
        with self._lock:  # sessions open from their connections' threads at once
            free = [i for i in range(self.concurrent) if i not in self._sessions]
            if not free:
                raise AgentError(f"Raon engine full: {self.concurrent} session(s) at once")
            slot = free[0]
            self._sessions[slot] = agent
            self.sessions_hosted += 1
            number = self.sessions_hosted
        try:
            info = agent.open(session)
        except BaseException:
            with self._lock:
                self._sessions.pop(slot, None)
            raise
        info.extra = {**info.extra, "engine": True, "engine_capacity": self.capacity, "engine_concurrent": self.concurrent,
                      "engine_session_number": number}
        return slot, info

    def step_one(self, slot: int, heard: np.ndarray) -> Frame:
        from dyafdb.agents.engine.sessions import EngineFailure

        try:
            return self._sessions[slot].step(heard)
        except AgentError as exc:
            gateway = self.primary.gateway
            if gateway is not None and gateway.exit_code() is not None:  # the model is gone for everyone
                raise EngineFailure(str(exc)) from exc
            raise

    def close(self, slot: int) -> dict[str, Any] | None:
        with self._lock:
            agent = self._sessions.pop(slot, None)
        return agent.close() if agent is not None else None

    def shutdown(self) -> None:
        for slot in list(self._sessions):
            self.close(slot)
        if self.primary.gateway is not None:
            self.primary.gateway.stop()
