"""The AMX work-around: detection, override, and that it really reaches llama.cpp's model parameters."""

from __future__ import annotations

import pytest

from models.llama_runtime import configure_llama_cpp, cpu_has_amx, extra_buffer_types_wanted


def test_amx_detection(tmp_path):
    with_amx = tmp_path / "a"
    with_amx.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx512f amx_bf16 amx_tile\n")
    without = tmp_path / "b"
    without.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    assert cpu_has_amx(with_amx) and not cpu_has_amx(without)
    assert not cpu_has_amx(tmp_path / "missing")


def test_override(monkeypatch):
    monkeypatch.setenv("RQA_LLAMA_EXTRA_BUFTS", "on")
    assert extra_buffer_types_wanted() is True
    monkeypatch.setenv("RQA_LLAMA_EXTRA_BUFTS", "off")
    assert extra_buffer_types_wanted() is False
    monkeypatch.setenv("RQA_LLAMA_EXTRA_BUFTS", "sometimes")
    with pytest.raises(ValueError):
        extra_buffer_types_wanted()


def test_workaround_reaches_model_params():
    import llama_cpp.llama_cpp as lib

    try:
        assert configure_llama_cpp("off") is True
        assert lib.llama_model_default_params().use_extra_bufts is False
        assert configure_llama_cpp("off") is True  # idempotent: wraps the original, not the wrapper
        assert configure_llama_cpp("on") is False
        assert lib.llama_model_default_params().use_extra_bufts is True
    finally:
        configure_llama_cpp()
