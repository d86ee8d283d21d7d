"""KRAFTON Raon-SpeechChat 9B through its real-time gateway, as a WebSocket client on loopback.

Both published gateways speak the same raw-frame protocol, ``[1 byte kind][payload]``: READY 0x00,
AUDIO 0x01 (float32 little-endian PCM, 24 kHz, 1,920 samples), TEXT 0x02 (UTF-8 delta), SEQ_TRACE
0x03 / SEQ_DELTA 0x04 (debug traces), ERROR 0x05, CLOSE 0x06, PING 0x07, PONG 0x08. They differ in
how a session starts:

* ``variant: demo`` (krafton-ai/Raon-SpeechChat-Demo, Ray + SGLang): ``WS /ws/chat`` with the
  session settings as query parameters (prompt key, system_prompt_style=custom with the role text,
  speaker_mode, sampling);
* ``variant: realtime`` (krafton-ai/Raon-Speech ``demo/realtime``, one session per process):
  ``POST /realtime/session/start`` with a JSON session, then ``WS <ws_path>?session_id=...``, and
  ``POST /realtime/session/finish`` at the end.

Lockstep: per tick one AUDIO frame goes out and the adapter reads until that frame's AUDIO reply
arrives, keeping the TEXT deltas on the way. A background reader answers the gateway's PINGs at any
time (also while the bridge waits on the partner), so the gateway's keepalive never closes the
session. Structural tokens (``<|...|>`` markers, the newlines the gateways put at silences and
segment starts) are filtered from the text channel. CLOSE ends the session.

The worker can start the gateway itself (``gateway.command``, with ``$port``, ``$checkpoint_dir``
and ``$python`` filled in), on a free loopback port, waits for
``GET /health`` and stops it (its whole process group) when the worker exits. Weights are never
fetched: the command points at a local SGLang bundle (``checkpoint_dir``).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
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
from dyafdb.agents.checkpoints import expand
from dyafdb.clock import FRAME_SAMPLES
from dyafdb.errors import InputError
from dyafdb.agents.registry import adapter

READY, AUDIO, TEXT, SEQ_TRACE, SEQ_DELTA, ERROR, CLOSE, PING, PONG = range(9)
KIND_NAMES = dict(enumerate(["READY", "AUDIO", "TEXT", "SEQ_TRACE", "SEQ_DELTA", "ERROR", "CLOSE", "PING", "PONG"]))

VARIANTS = {
    # ws path, sampling defaults of that gateway (what a session gets when the adapter sends none)
    "demo": {"ws_path": "/ws/chat", "sampling": {"temperature": 0.7, "top_k": 50, "top_p": 0.8, "eos_penalty": 0.0, "bc_penalty": 0.0}},
    "realtime": {"ws_path": None, "sampling": {"temperature": 1.1, "top_k": 100, "top_p": 0.99, "eos_penalty": 0.0,
                                               "sil_penalty": 0.0, "bc_penalty": 0.0}},
}
SAMPLING_KEYS = {"demo": {"temperature", "top_k", "top_p", "eos_penalty", "bc_penalty"},
                 "realtime": {"temperature", "top_k", "top_p", "eos_penalty", "sil_penalty", "bc_penalty"}}
DEFAULT_PROMPT_TEMPLATE = "You are engaging in real-time conversation. $prompt"
STRUCTURAL = re.compile(r"<\|[^<>|]*\|>")


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


class GatewayProcess:
    """A gateway started by this worker; stopped with its whole process group at exit."""

    def __init__(self, argv: list[str], cwd: str | None, env: dict[str, str], log_path: Path):
        self.log_path = log_path
        self._log = open(log_path, "ab")
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
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
        self._log.close()


@adapter("raon")
class RaonAgent:
    def __init__(self, params: dict[str, Any], model_name: str = "raon"):
        self.params = params
        self.model_name = model_name
        self.variant = str(params.get("variant", "realtime"))
        if self.variant not in VARIANTS:
            raise InputError(f"models.{model_name}.params.variant = {self.variant!r}; use 'demo' (Raon-SpeechChat-Demo, "
                             "query-parameter session on /ws/chat) or 'realtime' (Raon-Speech demo/realtime, session-start POST)")
        sampling = params.get("sampling") or {}
        unknown = sorted(set(sampling) - SAMPLING_KEYS[self.variant])
        if unknown:
            raise InputError(f"models.{model_name}.params.sampling: unknown key(s) {', '.join(unknown)} for the "
                             f"{self.variant} gateway; allowed: {', '.join(sorted(SAMPLING_KEYS[self.variant]))}")
        self.sampling_overrides = dict(sampling)
        self.step_timeout_s = float(params.get("step_timeout_s", 30))
        self.prompt_template = str(params.get("prompt_template", DEFAULT_PROMPT_TEMPLATE))
        self.speaker_mode = str(params.get("speaker_mode", "default"))
        self.speak_first_for_opener = bool(params.get("speak_first_for_opener", True))
        self.ssl_context = None
        self.gateway: GatewayProcess | None = None
        self.base_url = self._start_gateway()
        self.ws = None
        self._reader: threading.Thread | None = None
        self._inbox: queue.Queue = queue.Queue()
        self._session_id: str | None = None
        self._audio_out = np.zeros(0, dtype=np.float32)
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
            self._wait_healthy(url, float(self.params.get("health_timeout_s", 30)))
            return url.rstrip("/")
        argv = spec.get("command")
        if not isinstance(argv, list) or not argv:
            raise InputError(f"models.{self.model_name}.params.gateway.command must be a list (the gateway's argv)")
        port = int(spec.get("port") or 0) or free_port()
        subs = {"port": str(port), "python": sys.executable}
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
        self.gateway = GatewayProcess([fill(a) for a in argv], str(expand(fill(spec["cwd"]))) if spec.get("cwd") else None,
                                      {k: fill(v) for k, v in (spec.get("env") or {}).items()}, log)
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
                     "speaker_mode": self.speaker_mode, **{k: str(v) for k, v in self.sampling_overrides.items()}}
            if self.params.get("speaker_key"):
                query["speaker_key"] = str(self.params["speaker_key"])
            path = str(self.params.get("ws_path", VARIANTS["demo"]["ws_path"]))
            return f"{self._ws_base()}{path}?{urllib.parse.urlencode(query)}"
        body: dict[str, Any] = {"prompt": prompt, "prompt_role": "system", "speaker_mode": self.speaker_mode,
                                "speak_first": speak_first}
        if self.sampling_overrides:
            body["sampling"] = dict(self.sampling_overrides)
        if self.params.get("speaker_audio"):
            body["speaker_audio"] = str(expand(self.params["speaker_audio"]))
        session_id = f"{session.conversation_id}-{session.side}-{uuid.uuid4().hex[:8]}"
        try:
            reply = self._http("POST", f"{self.base_url}/realtime/session/start",
                               {"session_id": session_id, "force_restart": True, "session": body}, timeout=self.step_timeout_s)
        except urllib.error.HTTPError as exc:
            raise AgentError(f"Raon gateway refused the session start: HTTP {exc.code} {exc.read()[:300]!r}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise AgentError(f"Raon gateway unreachable at session start: {exc}{self._gateway_state()}") from None
        self._session_id = str(reply.get("session_id") or session_id)
        ws_path = str(reply.get("ws_path") or "/realtime/ws")
        return f"{self._ws_base()}{ws_path}?{urllib.parse.urlencode({'session_id': self._session_id})}"

    def open(self, session: Session) -> AgentInfo:
        from websockets.sync.client import connect

        self.close()
        self.tick = 0
        self._audio_out = np.zeros(0, dtype=np.float32)
        self._inbox = queue.Queue()
        speak_first = self.speak_first_for_opener and session.is_opener
        prompt = string.Template(self.prompt_template).safe_substitute(prompt=session.prompt.strip())
        uri = self._start_session(session, prompt, speak_first)
        try:
            # __enter__ gives the connection on every websockets version (17 wants connect() as a context manager)
            self.ws = connect(uri, max_size=None, open_timeout=self.step_timeout_s, compression=None,
                              ssl=self.ssl_context if uri.startswith("wss") else None).__enter__()
        except Exception as exc:
            raise AgentError(f"cannot connect to the Raon gateway at {uri.split('?')[0]}: {exc}{self._gateway_state()}") from None
        self._reader = threading.Thread(target=self._read_loop, args=(self.ws,), daemon=True, name="raon-reader")
        self._reader.start()
        self._expect_ready(float(self.params.get("session_timeout_s", 120)))
        sampling = {**VARIANTS[self.variant]["sampling"], **self.sampling_overrides}
        return AgentInfo(
            adapter="raon", adapter_version=__version__, model=self.model_name,
            voice=Path(str(self.params["speaker_audio"])).name if self.params.get("speaker_audio") else f"gateway {self.speaker_mode} speaker",
            sampling=sampling,
            extra={"variant": self.variant, "session_id": self._session_id, "speak_first": speak_first,
                   "seed": "none: the gateway has no seed parameter", "prompt_template": self.prompt_template},
        )

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

    def _next(self, timeout: float, doing: str) -> tuple[Any, bytes]:
        try:
            kind, payload = self._inbox.get(timeout=timeout)
        except queue.Empty:
            raise AgentError(f"Raon gateway sent nothing for {timeout:g} s while {doing}{self._gateway_state()}") from None
        if kind == "closed":
            raise AgentError(f"Raon gateway died while {doing}: {payload}{self._gateway_state()}")
        if kind == "bad":
            raise AgentError(f"Raon gateway broke the frame protocol while {doing}: {payload}")
        if kind == ERROR:
            raise AgentError(f"Raon gateway error while {doing}: {payload.decode(errors='replace')}")
        if kind == CLOSE:
            raise AgentError(f"Raon gateway closed the session while {doing}: {payload.decode(errors='replace') or 'no reason'}")
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
        audio = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        n = min(FRAME_SAMPLES, len(self._audio_out))
        audio[:n] = self._audio_out[:n]
        self._audio_out = self._audio_out[n:]
        self.tick += 1
        return Frame(audio, text)

    def close(self) -> None:
        ws, self.ws = self.ws, None
        if ws is not None:
            try:
                ws.send(bytes([CLOSE]) + b"client_finish")
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:  # the gateway answers CLOSE (or just hangs up)
                    kind, _ = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
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
        if self.variant == "realtime" and self._session_id:
            try:
                self._http("POST", f"{self.base_url}/realtime/session/finish", {"session_id": self._session_id}, timeout=10)
            except (urllib.error.URLError, OSError, ValueError):
                pass  # the gateway finishes the session itself when the socket closes
        self._session_id = None
