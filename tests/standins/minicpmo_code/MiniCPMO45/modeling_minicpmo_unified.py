"""A ``code_dir`` checkout stand-in: ``MiniCPMO45/modeling_minicpmo_unified.py`` of
OpenBMB/minicpm-o-4_5-pytorch-simple-demo @ c7e1660, as far as the MiniCPM-o adapter's ``code: demo``
path imports it (``dyafdb.agents.minicpmo.MiniCPMOAgent._load_base``).

It exists so that a config alone (config/ci-slurm-engines-sessions.yaml: ``code_dir`` pointing here,
``allow_other_code: true``, as this folder is not the pinned git checkout) runs the real adapter and
the real ``MiniCPMOEngine`` over the stand-in model, in a process that only imports what the config
names (a SLURM job's engine), with nothing downloaded. Upstream's ``MiniCPMO`` is a transformers
``PreTrainedModel``: ``from_pretrained(folder, trust_remote_code=..., _attn_implementation=...)``
builds and loads it (the model load counted by ``UnifiedMiniCPMO.loads``), ``.to(dtype)``,
``.eval()`` and ``.to(device)`` return the model itself. ``ProcessorMode`` is the module's own Enum
(~L88), which ``set_mode`` compares against. Everything past loading is
``tests/standins/minicpmo_duplex.py`` ``UnifiedMiniCPMO``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/standins: the stand-in model
from minicpmo_duplex import ProcessorMode, UnifiedMiniCPMO

__all__ = ["MiniCPMO", "ProcessorMode"]


class MiniCPMO(UnifiedMiniCPMO):
    """``MiniCPMO`` with the ``PreTrainedModel`` surface the adapter's loading uses."""

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str, *args: Any, **kwargs: Any) -> MiniCPMO:
        if not (Path(pretrained_model_name_or_path) / "config.json").is_file():  # as transformers, offline
            raise OSError(f"{pretrained_model_name_or_path} does not appear to have a file named config.json")
        return cls()

    def to(self, *args: Any, **kwargs: Any) -> MiniCPMO:
        return self

    def eval(self) -> MiniCPMO:
        return self
