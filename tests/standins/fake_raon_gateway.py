"""Stand-ins for Raon's two real-time gateways, on loopback, with their quirks.

Run as ``python fake_raon_gateway.py --variant demo|realtime --port N --record events.jsonl``. One
HTTP port serves ``GET /health``, the realtime variant's session POSTs and the WebSocket, as the
real servers do. Frames are ``[1 byte kind][payload]``: READY 0, AUDIO 1 (float32 LE, 24 kHz,
1,920 samples), TEXT 2, SEQ_TRACE 3, SEQ_DELTA 4, ERROR 5, CLOSE 6, PING 7, PONG 8.

``--variant realtime`` mirrors krafton-ai/Raon-Speech ``demo/realtime`` as read in the fork
devyoongu/Raon-Speech @ afec411 (the upstream repository is not public in the store):

* ``api/app.py`` ``create_fastapi_app``: ``GET /health`` -> ``{status, active_session_id, ws_path}``;
  ``POST /realtime/session/start`` passes the top-level payload keys (``session_id``,
  ``result_root``, ``session`` ...) to ``LocalRealtimeSession``; one active session per process
  (409, unless ``force_restart`` finishes the active one); ``POST /realtime/session/finish``
  returns the finished session's artifact payload (cached after the socket closed; 404 if unknown).
* ``runtime/session.py`` ``LocalRealtimeSession.__init__`` (~L770): the ``SessionConfig`` is built
  from ``prompt``, ``prompt_role``, ``speaker_mode``, ``speaker_key`` and ``sampling`` only; the
  payload's ``speak_first``, ``persona`` and ``persona_context`` are ignored, so every session
  listens first. Sampling defaults are 1.1 / 100 / 0.99 (``runtime/config.py``). The speaker comes
  only from ``speaker_audio``; a path that cannot be loaded is logged and the session runs without
  speaker conditioning (~L803). ``speaker_mode`` does nothing here.
* ``RealtimeDuplexSession.step`` (~L595): a recoverable decode error (AssertionError, or
  RuntimeError "sil-no-audio ... assert") yields ERROR ``decode error: ...`` then a silent AUDIO
  frame, every time; the third in a row also finishes the session and sends CLOSE
  ``internal_error``; the socket stays open and answers every later AUDIO with CLOSE.
* ``mount_realtime_websocket``: READY on connect; client CLOSE -> finish, CLOSE back, socket
  closed; client PING -> PONG with the same payload; the server never PINGs; an exception in the
  loop -> ERROR + CLOSE ``internal_error``.
* ``finish`` -> ``SessionArtifacts.flush(write_optional_bundle=True)``: user/assistant/stereo wavs,
  transcript, events, metadata.json and a zip bundle under ``<result_root>/<UTC timestamp>/``
  (about 20 MB per minute of a real session; here the wavs are real, so sizes scale the same way).

``--variant demo`` mirrors krafton-ai/Raon-SpeechChat-Demo @ 5b3bc6f:

* ``gateway/server.py`` ``_ws_chat_impl``: session settings are query parameters on ``/ws/chat``
  (also ``/ws/chat/``, ``/fd-demo/ws/chat``); ``speak_first`` comes from the prompt key
  (``proto/prompt_map.resolve_speak_first``), the prompt text from ``build_system_prompt`` (style
  ``custom``: the custom text with terminal punctuation ensured); sampling defaults 0.7 / 50 / 0.8;
  ``sil_penalty`` is not a query parameter (stays 0.0); ``repetition_penalty`` is ignored.
* ``worker/engine.py`` ``_load_default_speaker_embeds`` (~L276-339), once when the worker starts:
  ``DEFAULT_SPEAKER_EMBEDDING_PATH`` (a tensor, no encoder needed), else ``DEFAULT_SPEAKER_AUDIO_PATH``
  through the speaker encoder, else 1 s of silence through it; each failure is logged
  (``logger.exception`` / ``logger.warning``) and the next is tried; when all fail the worker has no
  default speaker. The source it reports is ``DEFAULT_SPEAKER_LABEL`` when set, whether or not an
  embedding was made. ``create_session`` (~L483-497): ``speaker_mode=default`` without a default
  speaker logs a WARNING and runs with no speaker; ``recorded`` falls back to default; ``none`` has
  none. None of this reaches the client (READY is empty; ``/health`` shows only the router's worker
  registry): only the log says it. The worker actors have no logging config, so only WARNING and
  ERROR lines appear, forwarded by Ray to the driver's output with a ``(RaonWorkerActor pid=N)``
  prefix; the INFO lines (``default speaker ready ...``, ``session_init_start ...``) do not.
* ``raon_runtime/modules.py`` ``PretrainedSpeakerEncoder._load_backend`` (~L690-775): the speaker
  encoder is SpeechBrain's ECAPA (``speechbrain/spkrec-ecapa-voxceleb``), looked for under
  ``$SPEECHBRAIN_ECAPA_SAVEDIR`` (default ``/tmp/speechbrain_ecapa_cache``) as
  ``speechbrain_spkrec-ecapa-voxceleb/`` with a ``speechbrain_spkrec-ecapa-voxceleb.done`` sentinel;
  without the sentinel it calls ``snapshot_download``. The stand-in never downloads: a missing
  sentinel is the offline node, where the download raises and every embedding above fails (the
  encoder is retried, and fails, for each). An unreadable wav fails the same way (``torchaudio.load``).
* ``gateway/server.py`` ``_ws_chat_impl`` + ``router`` ``reserve``: a session beyond the workers'
  capacity (``--max-sessions-per-gpu``, ``FD_MAX_SESSIONS_PER_GPU``, default 2) gets ERROR
  ``no workers available`` and the socket closes, without READY.
* ``worker/engine.py`` ``RaonEngine`` + ``worker/session.py`` ``SessionState``: each session keeps
  its own state (here: its speak-first flag, sampling, speaker, tick, idle clock and error streak per
  WebSocket) while the worker's default speaker is made once at start and shared (``worker_start``
  is logged once per process: one model load, however many sessions). This is what the Raon engine
  (``dyafdb.agents.raon.RaonEngine``) relies on when it hosts many record jobs' sessions on one gateway.
* ``gateway/proxy.py`` ``SessionProxy._keepalive``: PING with an empty payload every
  ``ping_interval`` (30 s), close when no PONG arrived within ``ping_timeout`` (15 s); the PONG's
  payload is not checked; a client PING gets an empty PONG; client CLOSE just ends the session (no
  CLOSE back); an unsupported frame kind -> ERROR + CLOSE ``invalid_client_frame``.
* ``worker/actor.py`` ``feed_and_decode`` + ``worker/session.py`` ``RaonWorkerSession.step``: per
  decoded frame SEQ_DELTA (when tokens were added), TEXT (filtered delta), AUDIO. The actor's cleanup
  loop (``start_cleanup_loop``, every 5 s) closes a session that has had no AUDIO for
  ``idle_timeout_seconds`` (15 s, not a query parameter; the session starts idle at READY); the next
  AUDIO then gets CLOSE ``internal_error`` (``feed_and_decode``: session gone). A recoverable
  decode error yields a silent AUDIO frame, then ERROR only on the first of a streak; after the
  third in a row the next call returns ERROR ``session closed: internal_error`` + CLOSE instead of
  audio. The demo writes no per-session artifacts.

The "model" both variants run is a script: it speaks (AUDIO samples encode the tick) from tick 0 when
the session speaks first, otherwise only after it has heard speech, and sends TEXT deltas that still
contain structural markers. Every event and the settings the gateway really applied go to the
record file as JSON. Written on websockets' sans-I/O protocol, because websockets' own server cannot
answer a POST.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import urllib.parse
import wave
import zipfile
from pathlib import Path

import numpy as np
from websockets.frames import Opcode
from websockets.server import ServerProtocol

READY, AUDIO, TEXT, SEQ_TRACE, SEQ_DELTA, ERROR, CLOSE, PING, PONG = range(9)
FRAME = 1920
# What a gateway may put in TEXT (relative to the tick the model started speaking): pieces with leading
# spaces, segment-break newlines, and structural markers a tokenizer decode can leave in.
TEXT_SCRIPT = {2: "\n", 3: " Hello", 4: "<|fim_middle|>", 5: " there<|im_end|>", 7: "\n Nice", 8: "<|audio_output_sil|>\n"}
REALTIME_SAMPLING = {"temperature": 1.1, "top_k": 100, "top_p": 0.99, "eos_penalty": 0.0, "sil_penalty": 0.0, "bc_penalty": 0.0}
DEMO_WS_PATHS = {"/ws/chat", "/ws/chat/", "/fd-demo/ws/chat", "/fd-demo/ws/chat/"}


def readable_wav(path: str) -> bool:
    """What torchaudio.load would decode (the stand-in reads PCM wavs only)."""
    try:
        with wave.open(path, "rb") as w:
            return w.getnframes() > 0
    except (wave.Error, EOFError, OSError):
        return False


def frame_audio(tick: int) -> np.ndarray:
    return np.full(FRAME, 0.01 * (tick % 90 + 1), dtype="<f4")


# -- proto/prompt_map.py (Raon-SpeechChat-Demo) -----------------------------------------------------
def parse_prompt_key(prompt: str) -> tuple[str, str, str] | None:
    """``_parse_prompt_key``: (language, channel, speak mode) of a prompt key, None for free text."""
    parts = [p.strip() for p in prompt.split(":") if p.strip()]
    if len(parts) == 2:
        parts = ["eng", *parts]
    if len(parts) != 3 or parts[1] not in {"full_duplex", "duplex_instruct"} or parts[2] not in {"speak-first", "listen-first"}:
        return None
    return parts[0], parts[1], parts[2]


def build_system_prompt(style: str, custom: str | None, persona: str | None, context: str | None) -> str:
    base = "You are engaging in real-time conversation."

    def punct(text: str) -> str:
        text = text.strip()
        return text if not text or text[-1] in ".!?" else text + "."

    if style == "custom":
        return punct(custom) if custom and custom.strip() else base
    if style not in {"raon", "raon_persona", "raon_persona_context"}:
        return base
    if style == "raon" or not persona:
        return f"{base} You are a helpful assistant."
    prompt = punct(f"{base} You are a helpful assistant, {persona}.")
    return f"{prompt} {punct(context)}" if style == "raon_persona_context" and context else prompt


def _float(raw: str | None, default: float) -> float:
    try:
        return float(raw) if raw not in (None, "") else default
    except ValueError:
        return default


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw not in (None, "") else default
    except ValueError:
        return default


class DecodeError(AssertionError):
    """What the runtime raises for a recoverable decode failure (``_is_recoverable_decode_error``)."""


class ScriptModel:
    """One session's 'model': listens first unless told to speak first; fails where the options say."""

    def __init__(self, args: argparse.Namespace, speak_first: bool):
        self.args = args
        self.speaking_since = 0 if speak_first else None
        self.frames = 0

    def step(self, heard: np.ndarray) -> tuple[str, np.ndarray]:
        tick = self.frames
        self.frames += 1
        if tick in self.args.decode_errors:
            raise DecodeError("sil-no-audio assert: talker produced no codes")
        if tick == self.args.fatal_at:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        if self.speaking_since is None and float(np.sqrt(np.mean(heard.astype(np.float64) ** 2))) > 0.005:
            self.speaking_since = tick + 1  # heard speech: answers from the next frame on
        if self.speaking_since is None or tick < self.speaking_since:
            return "", np.zeros(FRAME, dtype="<f4")
        return TEXT_SCRIPT.get(tick - self.speaking_since, ""), frame_audio(tick)


class Connection:
    """A WebSocket on websockets' sans-I/O protocol."""

    def __init__(self, proto: ServerProtocol, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.proto, self.reader, self.writer = proto, reader, writer
        self.pending: list = []
        self.lock = asyncio.Lock()

    async def flush(self) -> None:
        data = b"".join(self.proto.data_to_send())
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def send(self, kind: int, payload: bytes = b"") -> None:
        async with self.lock:
            self.proto.send_binary(bytes([kind]) + payload)
            await self.flush()

    async def recv(self) -> bytes | None:
        while True:
            self.pending.extend(self.proto.events_received())
            while self.pending:
                event = self.pending.pop(0)
                if event.opcode == Opcode.BINARY:
                    return event.data
                if event.opcode == Opcode.CLOSE:
                    await self.flush()
                    return None
            await self.flush()  # pongs to control pings
            data = await self.reader.read(65536)
            if not data:
                self.proto.receive_eof()
                return None
            self.proto.receive_data(data)

    async def close(self) -> None:
        async with self.lock:
            self.proto.send_close(1000)
            await self.flush()


class Gateway:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.record = open(args.record, "a")
        self.reserved: dict[str, dict] = {}  # realtime: session_id -> session state
        self.active: str | None = None
        self.completed: dict[str, dict] = {}
        self.active_ws = 0
        # the demo's worker only; the realtime runtime takes its speaker per session
        self.default_speaker, self.has_default_speaker = self.load_default_speaker() if args.variant == "demo" else (None, False)
        self.log(event="worker_start", default_speaker=self.default_speaker, has_default_speaker=self.has_default_speaker)

    @staticmethod
    def actor_log(message: str) -> None:
        """A worker actor's WARNING/ERROR line as it reaches the gateway's log (forwarded by Ray)."""
        print(f"(RaonWorkerActor pid={os.getpid()}) {message}", file=sys.stderr, flush=True)

    def ecapa_ready(self) -> bool:
        """PretrainedSpeakerEncoder._load_backend: the cached snapshot, or a download that fails offline."""
        root = os.environ.get("SPEECHBRAIN_ECAPA_SAVEDIR", "/tmp/speechbrain_ecapa_cache")
        shared = Path(root) / "speechbrain_spkrec-ecapa-voxceleb"
        if Path(f"{shared}.done").exists():
            return True
        shared.mkdir(parents=True, exist_ok=True)  # made before snapshot_download, so it exists even after a failure
        return False

    def embed_audio(self, what: str) -> bool:
        """The speaker encoder on some audio; False (with upstream's log lines) when it cannot run."""
        if self.ecapa_ready():
            return True
        self.actor_log(f"{what}\nTraceback (most recent call last):\n  ...\nhuggingface_hub.errors.LocalEntryNotFoundError: "
                       "An error happened while trying to locate the files on the Hub and we cannot find the "
                       "appropriate snapshot folder for the specified revision on the local disk.")
        return False

    def load_default_speaker(self) -> tuple[str | None, bool]:
        """worker/engine.py _load_default_speaker_embeds: (the source it reports, whether there is an embedding)."""
        embed = os.environ.get("DEFAULT_SPEAKER_EMBEDDING_PATH", "").strip()
        audio = os.environ.get("DEFAULT_SPEAKER_AUDIO_PATH", "").strip()
        label = os.environ.get("DEFAULT_SPEAKER_LABEL", "").strip() or None
        source = None
        if embed:
            if Path(embed).exists():
                source = f"embedding:{embed}"
            else:
                self.actor_log(f"DEFAULT_SPEAKER_EMBEDDING_PATH does not exist: {embed}")
        if source is None and audio:
            if not Path(audio).exists():
                self.actor_log(f"DEFAULT_SPEAKER_AUDIO_PATH does not exist: {audio}")
            elif not readable_wav(audio):
                self.actor_log(f"failed to compute default speaker embedding from audio: {audio}\nTraceback (most recent "
                               "call last):\n  ...\nRuntimeError: Failed to decode audio.")
            elif self.embed_audio(f"failed to compute default speaker embedding from audio: {audio}"):
                source = f"audio:{audio}"
        if source is None and self.embed_audio("failed to compute silence-fallback speaker embedding"):
            source = "silence-fallback"
        return label or source, source is not None

    def log(self, **event) -> None:
        self.record.write(json.dumps(event) + "\n")
        self.record.flush()

    # -- realtime: LocalRealtimeSession -------------------------------------------------------------
    def realtime_session(self, payload: dict, session_id: str) -> dict:
        session = dict(payload.get("session") or {})
        sampling_in = dict(session.get("sampling") or {})
        sampling = {k: type(v)(sampling_in.get(k, v)) for k, v in REALTIME_SAMPLING.items()}
        speaker = None
        value = str(session.get("speaker_audio", "") or "").strip()
        if value:
            if Path(value).is_file() and value.endswith(".wav"):
                speaker = value
            else:
                self.log(event="warning", message=f"realtime speaker reference load failed: {value}. "
                                                  "Proceeding without speaker conditioning.")
        applied = {"prompt": str(session.get("prompt", "eng:full_duplex:listen-first")),
                   "prompt_role": str(session.get("prompt_role", "system")),
                   "speaker_mode": str(session.get("speaker_mode", "default")), "speaker_key": session.get("speaker_key"),
                   "speaker_audio": speaker, "sampling": sampling, "speak_first": False}
        self.log(event="session_applied", session_id=session_id, applied=applied)
        return {"session_id": session_id, "applied": applied, "result_root": str(payload.get("result_root") or self.args.result_root or "./output/fd_gradio_demo"),
                "user": [], "assistant": [], "text": [], "model": ScriptModel(self.args, speak_first=False),
                "consecutive_errors": 0, "errors": 0, "closed": False, "result": None, "started": time.gmtime()}

    def realtime_finish(self, session_id: str, reason: str) -> dict:
        if session_id in self.completed:
            return self.completed[session_id]
        state = self.reserved.pop(session_id)
        if self.active == session_id:
            self.active = None
        out = Path(state["result_root"]) / time.strftime("%Y%m%d_%H%M%S", state["started"])
        out.mkdir(parents=True, exist_ok=True)

        def write_wav(path: Path, samples: list) -> None:
            data = np.concatenate(samples) if samples else np.zeros(0, np.float32)
            with wave.open(str(path), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(24000)
                w.writeframes((np.clip(data, -1, 1) * 32767).astype("<i2").tobytes())

        write_wav(out / "user.wav", state["user"])
        write_wav(out / "assistant.wav", state["assistant"])
        write_wav(out / "conversation_stereo.wav", state["user"] + state["assistant"])
        (out / "transcript.txt").write_text("".join(state["text"]))
        metadata = {"session_id": session_id, "close_reason": reason, "session_params": state["applied"],
                    "runtime_stats": {"frames_in": state["model"].frames, "decode_errors": state["errors"]}}
        (out / "metadata.json").write_text(json.dumps(metadata))
        with zipfile.ZipFile(out / "session_bundle.zip", "w") as zf:
            for name in ("user.wav", "assistant.wav", "conversation_stereo.wav", "metadata.json", "transcript.txt"):
                zf.write(out / name, arcname=name)
        state["closed"] = True
        result = {"session_id": session_id, "close_reason": reason, "metadata": metadata,
                  "session_bundle_zip": str(out / "session_bundle.zip")}
        self.completed[session_id] = result
        self.log(event="session_finish", session_id=session_id, reason=reason, output_dir=str(out))
        return result

    def route(self, method: str, path: str, body: bytes) -> tuple[int, dict]:
        if method == "GET" and path == "/health":
            if self.args.variant == "demo":
                return 200, {"status": "ok", "mode": "ray", "active_sessions": self.active_ws,
                             "router": {"healthy_worker_count": 1, "workers": [{"worker_id": "worker-gpu0", "healthy": True}]}}
            return 200, {"status": "ok", "active_session_id": self.active, "ws_path": "/realtime/ws"}
        if self.args.variant == "realtime" and method == "POST" and path == "/realtime/session/start":
            payload = json.loads(body or b"{}")
            self.log(event="session_start", payload=payload)
            if self.active is not None:
                if not payload.get("force_restart"):
                    return 409, {"detail": "session already active"}
                self.realtime_finish(self.active, "force_restart")
            sid = str(payload.get("session_id") or "s1")
            self.reserved[sid] = self.realtime_session(payload, sid)
            self.active = sid
            return 200, {"session_id": sid, "ws_path": "/realtime/ws"}
        if self.args.variant == "realtime" and method == "POST" and path == "/realtime/session/finish":
            payload = json.loads(body or b"{}")
            sid = str(payload.get("session_id") or "").strip()
            if not sid:
                return 400, {"detail": "session_id is required"}
            if sid not in self.completed and sid not in self.reserved:
                return 404, {"detail": f"unknown session_id: {sid}"}
            return 200, self.realtime_finish(sid, str(payload.get("reason") or "client_finish"))
        return 404, {"detail": "Not Found"}

    # -- realtime: mount_realtime_websocket ---------------------------------------------------------
    async def realtime_ws(self, ws: Connection, path: str, query: dict) -> None:
        sid = str(query.get("session_id") or "")
        if path != "/realtime/ws" or sid not in self.reserved or (self.active not in (None, sid)):
            await ws.send(ERROR, b"session already active")
            await ws.send(CLOSE, b"session already active")
            await ws.close()
            return
        state = self.reserved[sid]
        await ws.send(READY)
        reason = "client_disconnect"
        while True:
            message = await ws.recv()
            if message is None:
                break
            kind, payload = message[0], message[1:]
            if kind == CLOSE:
                reason = payload.decode() or "client_finish"
                self.log(event="client_close", reason=reason, tick=state["model"].frames)
                self.realtime_finish(sid, reason)
                await ws.send(CLOSE, reason.encode())
                break
            if kind == PING:
                await ws.send(PONG, payload)
                continue
            if kind != AUDIO:
                await ws.send(ERROR, f"unsupported frame kind: {kind}".encode())
                continue
            if state["closed"]:
                await ws.send(CLOSE, b"internal_error")
                continue
            heard = np.frombuffer(payload, dtype="<f4")
            state["user"].append(heard.copy())
            tick = state["model"].frames
            self.log(event="audio", tick=tick, first=float(heard[0]) if len(heard) else None, samples=len(heard))
            if tick == self.args.die_at:
                os._exit(3)
            try:
                text, audio = state["model"].step(heard)
                state["consecutive_errors"] = 0
            except DecodeError as exc:
                state["errors"] += 1
                state["consecutive_errors"] += 1
                await ws.send(ERROR, f"decode error: {exc}".encode())
                await ws.send(AUDIO, np.zeros(FRAME, "<f4").tobytes())
                if state["consecutive_errors"] >= 3:
                    self.realtime_finish(sid, "internal_error")
                    await ws.send(CLOSE, b"internal_error")
                continue
            except Exception as exc:  # the handler's safety net
                await ws.send(ERROR, str(exc).encode())
                await ws.send(CLOSE, b"internal_error")
                self.realtime_finish(sid, "internal_error")
                break
            if text:
                state["text"].append(text)
                await ws.send(TEXT, text.encode())
            state["assistant"].append(audio.astype(np.float32))
            await ws.send(AUDIO, audio.tobytes())
        if sid in self.reserved:
            self.realtime_finish(sid, reason)
        await ws.close()

    # -- demo: _ws_chat_impl + SessionProxy ---------------------------------------------------------
    async def demo_ws(self, ws: Connection, path: str, query: dict) -> None:
        if path not in DEMO_WS_PATHS:
            await ws.close()  # no such route: the real server rejects the upgrade
            return
        prompt = query.get("prompt") or "eng:full_duplex:listen-first"
        key = parse_prompt_key(prompt)
        speak_first = key is not None and key[2] == "speak-first"
        style = query.get("system_prompt_style") or "generic"
        prompt_text = build_system_prompt(style, query.get("custom_system_prompt"), query.get("system_prompt_persona"),
                                          query.get("system_prompt_context")) if key else prompt
        sampling = {"temperature": _float(query.get("temperature"), 0.7), "top_k": _int(query.get("top_k"), 50),
                    "top_p": _float(query.get("top_p"), 0.8), "eos_penalty": _float(query.get("eos_penalty"), 0.0),
                    "bc_penalty": _float(query.get("bc_penalty"), 0.0), "sil_penalty": 0.0,
                    "code_temperature": 0.8, "code_top_k": 10}
        speaker_mode = query.get("speaker_mode") or "default"
        if self.active_ws >= self.args.max_sessions:  # router.reserve finds no worker with room
            self.log(event="no_workers", query=query)
            await ws.send(ERROR, b"no workers available")
            await ws.close()
            return
        speaker = None
        if speaker_mode in ("default", "recorded"):
            if speaker_mode == "recorded":
                self.actor_log("speaker_mode=recorded requested but fd-demo worker does not store recorded speakers; "
                               "falling back to default speaker")
            if self.has_default_speaker:
                speaker = self.default_speaker
            elif speaker_mode == "default":
                self.actor_log("speaker_mode=default requested but no default speaker embedding is available; "
                               "falling back to speaker_mode=none")
        applied = {"prompt_text": prompt_text, "speak_first": speak_first, "sampling": sampling,
                   "speaker_mode": speaker_mode, "speaker": speaker,
                   "repetition_penalty_ignored": _float(query.get("repetition_penalty"), 1.0)}
        self.log(event="session_start", query=query)
        self.log(event="session_applied", applied=applied)
        self.active_ws += 1
        await ws.send(READY)
        model = ScriptModel(self.args, speak_first)
        state = {"closed": False, "last_pong": time.monotonic(), "last_audio": time.monotonic(), "expired": False}
        consecutive = 0
        close_requested = False

        async def keepalive() -> None:
            while not state["closed"]:
                await asyncio.sleep(self.args.ping_interval)
                if state["closed"]:
                    return
                sent = time.monotonic()
                self.log(event="ping", tick=model.frames)
                await ws.send(PING, b"")
                await asyncio.sleep(self.args.ping_timeout)
                if not state["closed"] and state["last_pong"] < sent:
                    self.log(event="ping_timeout", tick=model.frames)
                    state["closed"] = True
                    await ws.close()
                    return

        async def cleanup() -> None:  # worker/actor.py start_cleanup_loop + engine.cleanup_idle_sessions
            while not state["closed"]:
                await asyncio.sleep(self.args.cleanup_interval)
                if not state["expired"] and time.monotonic() - state["last_audio"] > self.args.idle_timeout:
                    state["expired"] = True
                    self.log(event="idle_timeout", tick=model.frames)

        pinger = asyncio.create_task(keepalive())
        cleaner = asyncio.create_task(cleanup())
        try:
            while not state["closed"]:
                message = await ws.recv()
                if message is None:
                    self.log(event="disconnected", tick=model.frames)
                    break
                kind, payload = message[0], message[1:]
                if kind == PONG:
                    state["last_pong"] = time.monotonic()
                    self.log(event="pong", tick=model.frames, payload=payload.decode(errors="replace"))
                    continue
                if kind == PING:
                    await ws.send(PONG, b"")
                    continue
                if kind == CLOSE:
                    self.log(event="client_close", reason=payload.decode(), tick=model.frames)
                    break
                if kind != AUDIO:
                    await ws.send(ERROR, f"unsupported frame kind: {kind}".encode())
                    await ws.send(CLOSE, b"invalid_client_frame")
                    break
                if state["expired"]:  # feed_and_decode: the session is gone
                    await ws.send(CLOSE, b"internal_error")
                    break
                state["last_audio"] = time.monotonic()
                if close_requested:  # engine.run_step with a pending close: no audio for this frame
                    await ws.send(ERROR, b"session closed: internal_error")
                    await ws.send(CLOSE, b"internal_error")
                    break
                heard = np.frombuffer(payload, dtype="<f4")
                tick = model.frames
                self.log(event="audio", tick=tick, first=float(heard[0]) if len(heard) else None, samples=len(heard))
                if tick == self.args.die_at:
                    os._exit(3)
                try:
                    text, audio = model.step(heard)
                    consecutive = 0
                except DecodeError as exc:
                    consecutive += 1
                    await ws.send(AUDIO, np.zeros(FRAME, "<f4").tobytes())
                    if consecutive == 1:
                        await ws.send(ERROR, f"decode error: {exc}".encode())
                    close_requested = consecutive >= 3
                    continue
                except Exception as exc:  # fatal CUDA error: the worker marks itself unhealthy
                    await ws.send(ERROR, f"session closed: internal_error ({exc})".encode())
                    await ws.send(CLOSE, b"internal_error")
                    break
                await ws.send(SEQ_DELTA, json.dumps({"frame": tick, "ids": [151660]}).encode())
                if text:
                    await ws.send(TEXT, text.encode())
                await ws.send(AUDIO, audio.tobytes())
        finally:
            state["closed"] = True
            pinger.cancel()
            cleaner.cancel()
            self.active_ws -= 1
            await ws.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in lines[1:] if ": " in line)}
        path, _, qs = target.partition("?")
        query = {k: v[0] for k, v in urllib.parse.parse_qs(qs).items()}
        if headers.get("upgrade", "").lower() == "websocket":
            proto = ServerProtocol()
            proto.receive_data(head)
            request = proto.events_received()[0]
            proto.send_response(proto.accept(request))
            writer.write(b"".join(proto.data_to_send()))
            await writer.drain()
            ws = Connection(proto, reader, writer)
            try:
                if self.args.variant == "demo":
                    await self.demo_ws(ws, path, query)
                else:
                    await self.realtime_ws(ws, path, query)
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                writer.close()
            return
        body = await reader.readexactly(int(headers.get("content-length", 0) or 0))
        status, obj = self.route(method, path, body)
        data = json.dumps(obj).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     "Connection: close\r\n\r\n".encode() + data)
        await writer.drain()
        writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--variant", choices=["demo", "realtime"], required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--die-at", type=int, default=-1, help="exit hard when this frame arrives")
    parser.add_argument("--fatal-at", type=int, default=-1, help="a non-recoverable error at this frame")
    parser.add_argument("--decode-errors", type=lambda s: {int(x) for x in s.split(",") if x}, default=set(),
                        help="frames whose decode step fails recoverably, e.g. 4,5")
    parser.add_argument("--ping-interval", type=float, default=30.0, help="demo keepalive (GatewayConfig: 30 s)")
    parser.add_argument("--ping-timeout", type=float, default=15.0, help="demo keepalive (GatewayConfig: 15 s)")
    parser.add_argument("--idle-timeout", type=float, default=15.0, help="demo SessionConfig.idle_timeout_seconds")
    parser.add_argument("--cleanup-interval", type=float, default=5.0, help="demo actor cleanup loop period")
    parser.add_argument("--max-sessions", type=int, default=int(os.environ.get("FD_MAX_SESSIONS_PER_GPU", "2")),
                        help="demo: sessions the one worker takes (launch_worker.py --max-sessions-per-gpu)")
    parser.add_argument("--startup-delay", type=float, default=0.0)
    # accepted so the adapter's launch commands can be run against the stand-in unchanged
    parser.add_argument("--result-root", default=None)
    args = parser.parse_args()
    await asyncio.sleep(args.startup_delay)  # a gateway takes a while to load its model
    gateway = Gateway(args)
    server = await asyncio.start_server(gateway.handle, "127.0.0.1", args.port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
