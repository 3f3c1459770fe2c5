"""Process-wide llama.cpp set-up: the AMX work-around and quiet logging.

llama-cpp-python 0.3.36 built by default uses llama.cpp's AMX "extra buffer types" on CPUs that have AMX and
segfaults there on any real prompt (measured, docs/design-notes.md). ``Llama()`` does not expose the switch, so the
default model parameters are wrapped to turn ``use_extra_bufts`` off. It was also the fastest setting here.
"""

from __future__ import annotations

import os
from pathlib import Path

_ENV = "RQA_LLAMA_EXTRA_BUFTS"  # "auto" (default), "off" (always apply the work-around) or "on" (never)


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """True when the CPU flags list any AMX feature."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return any(flag.startswith("amx") for flag in line.split(":", 1)[1].split())
    return False


def extra_buffer_types_wanted(setting: str | None = None) -> bool:
    """Whether llama.cpp may use extra buffer types, from ``setting`` or ``$RQA_LLAMA_EXTRA_BUFTS``."""
    setting = (setting or os.environ.get(_ENV, "auto")).strip().lower()
    if setting not in {"auto", "on", "off"}:
        raise ValueError(f"{_ENV} must be auto, on or off, not {setting!r}")
    if setting == "auto":
        return not cpu_has_amx()
    return setting == "on"


def configure_llama_cpp(setting: str | None = None) -> bool:
    """Apply the AMX work-around to this process if needed; return True when it is active. Idempotent."""
    import llama_cpp.llama_cpp as lib

    # Not ``__wrapped__``: llama_cpp's bindings already carry one, pointing at an empty Python stub.
    original = getattr(lib.llama_model_default_params, "_rqa_original", lib.llama_model_default_params)
    if extra_buffer_types_wanted(setting):
        lib.llama_model_default_params = original
        return False

    def default_params_without_extra_bufts():
        params = original()
        params.use_extra_bufts = False
        return params

    default_params_without_extra_bufts._rqa_original = original
    lib.llama_model_default_params = default_params_without_extra_bufts
    return True
