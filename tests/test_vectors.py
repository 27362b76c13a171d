"""The vectors projection: item → content hash mapping, the embeddings cache that survives a
rebuild, forgetting, the matrix file, vector_search, and the sync / worker wiring."""
from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from events import EventLog, Home, RecordedEvent
from events.types import EmbeddingModelChosen, LongTermRewritten, MemoryForgotten, UserTurn
from projections import vector_cache, vector_matrix
from projections import vector_search as vector_search_module
from projections.engine import ProjectionStore
from projections.items import content_hash
from projections.search import SearchProjector, search
from projections.vector_cache import active_model, pending_count
from projections.vector_embed import embed_pending
from projections.vector_matrix import refresh_vectors, vectors_dir
from projections.vector_search import vector_search
from projections.vectors import VectorsProjector
from workers.models import embedding as models

from .conftest import make_turns, write_transcript

MODEL = "all-MiniLM-L6-v2-int8"
CHECKSUM = "ab" * 32


class FakeEmbedder:
    """Bag of words: each word a fixed random direction, so shared words mean nearness.
    Records every text it is asked to embed."""

    dimension = 384

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.texts: list[str] = []
        self.batches: list[int] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        self.batches.append(len(texts))
        return (np.stack([word_vector(t) for t in texts]) if texts
                else np.zeros((0, 384), np.float32))

    def embed_one(self, text: str) -> np.ndarray:
        return word_vector(text)


def word_vector(text: str) -> np.ndarray:
    out = np.zeros(384, dtype=np.float64)
    for word in re.findall(r"\w+", text.lower()):
        if word != "user":
            seed = int(hashlib.sha256(word.encode()).hexdigest()[:8], 16)
            out += np.random.default_rng(seed).standard_normal(384)
    if not out.any():
        out[0] = 1.0
    return (out / np.linalg.norm(out)).astype(np.float32)


def say(log: EventLog, text: str, session: str = "s") -> RecordedEvent:
    return log.append(UserTurn(session=session, text=text), stream=session)


def choose(log: EventLog, checksum: str = CHECKSUM) -> RecordedEvent:
    return log.append(EmbeddingModelChosen(model=MODEL, dimension=384, checksum=checksum),
                      stream="memory")


def forget(log: EventLog, *events: RecordedEvent) -> RecordedEvent:
    return log.append(MemoryForgotten(ids=[e.id for e in events],
                                      texts=[e.payload["text"] for e in events]), stream="memory")


def key(event: RecordedEvent) -> str:
    return f"turn:{event.id}"


@pytest.fixture
def store(home: Home, log: EventLog) -> Iterator[ProjectionStore]:
    with ProjectionStore(home, log, [SearchProjector(), VectorsProjector()]) as s:
        yield s


def fake(store: ProjectionStore) -> FakeEmbedder:
    active = active_model(store)
    assert active is not None
    return FakeEmbedder(active.key)


def cached_hashes(store: ProjectionStore) -> set[str]:
    return {row[0] for row in store.db.execute("SELECT content_hash FROM embeddings")}


def file_columns(home: Home) -> np.ndarray:
    """Every slot's vector in the current matrix file, one row each (zeros included)."""
    files = list(vectors_dir(home).glob("*.f32"))
    assert len(files) == 1, files
    matrix = vector_matrix.Matrix(files[0], 384)
    return np.array(matrix.rows).reshape(-1, 384)


def file_codes(home: Home) -> np.ndarray:
    """Every slot's sign code in the current matrix file, one row of words each."""
    (path,) = vectors_dir(home).glob("*.f32")
    matrix = vector_matrix.Matrix(path, 384)
    return np.array(matrix.planes).transpose(0, 2, 1).reshape(-1, matrix.planes.shape[1])


def holds(columns: np.ndarray, vector: np.ndarray) -> bool:
    return bool(np.any(np.all(np.isclose(columns, vector, atol=1e-6), axis=1)))


def exact(store: ProjectionStore, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Brute force over (item, cached vector) pairs, for comparison."""
    active = active_model(store)
    rows = store.db.execute(
        "SELECT v.key, e.vector FROM vector_items v JOIN embeddings e"
        " ON e.content_hash = v.content_hash AND e.model = ?", (active.key,)).fetchall()
    scored = sorted(((-float(np.frombuffer(v, np.float32) @ query), k_) for k_, v in rows))
    return [(k_, -s) for s, k_ in scored[:k]]


def same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> bool:
    return ([g[0] for g in got] == [w[0] for w in want]
            and np.allclose([g[1] for g in got], [w[1] for w in want], atol=1e-5))


TEXTS = ["we adopted a puppy named biscuit", "the build failed on ci again",
         "dinner with my mother in may", "my puppy loves the beach",
         "the ci build is green now"]


# --- no model -------------------------------------------------------------------------------


def test_without_a_model_everything_works_and_nothing_is_found(store: ProjectionStore,
                                                               log: EventLog, home: Home) -> None:
    for text in TEXTS:
        say(log, text)
    store.catch_up_all()
    assert active_model(store) is None and pending_count(store) == 0
    assert vector_search(store, home, word_vector("puppy"), 5) == []
    assert embed_pending(store, FakeEmbedder("whatever")) == 0
    assert refresh_vectors(store) == 0 and not vectors_dir(home).exists()
    assert store.db.execute("SELECT COUNT(*) FROM vector_items").fetchone()[0] == len(TEXTS)


def test_vector_search_before_any_catch_up(home: Home, log: EventLog) -> None:
    with ProjectionStore(home, log, [SearchProjector(), VectorsProjector()]) as fresh:
        assert vector_search(fresh, home, word_vector("x"), 3) == []
        assert refresh_vectors(fresh) == 0


# --- embedding and searching ----------------------------------------------------------------


def test_embed_pending_in_batches_then_search_finds_the_nearest(store: ProjectionStore,
                                                                log: EventLog, home: Home) -> None:
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    assert pending_count(store) == len(TEXTS)
    model = fake(store)
    assert embed_pending(store, model, batch_size=2) == len(TEXTS)
    assert model.batches == [2, 2, 1]
    assert sorted(model.texts) == sorted(TEXTS)  # a turn's words, without its speaker
    assert pending_count(store) == 0

    hits = vector_search(store, home, word_vector("puppy biscuit"), 2)
    assert [h[0] for h in hits] == [key(events[0]), key(events[3])]
    assert hits[0][1] == pytest.approx(float(word_vector("user: " + TEXTS[0])
                                             @ word_vector("puppy biscuit")), abs=1e-5)
    assert same(hits, exact(store, word_vector("puppy biscuit"), 2))
    assert len(list(vectors_dir(home).glob("*.f32"))) == 1  # served from the matrix file
    assert embed_pending(store, model) == 0 and len(model.texts) == len(TEXTS)


def test_the_matrix_agrees_with_brute_force(store: ProjectionStore, log: EventLog, home: Home,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_matrix, "BLOCK", 16)  # several blocks, a partial last one
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    for i in range(70):
        say(log, f"{words[i % 8]} {words[i * 3 % 8]} {words[i * 5 % 8]} note {i}")
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store), batch_size=9)
    for query in ["alpha beta", "theta note 7", "zeta", "nothing shared"]:
        q = word_vector(query)
        assert same(vector_search(store, home, q, 10), exact(store, q, 10))
    state = vector_matrix.matrix_state(store.db)
    assert state.count == 70 and state.generation == vector_cache.generation(store.db)


def test_the_sign_code_prescan_scores_exactly_and_finds_what_it_should(
        store: ProjectionStore, log: EventLog, home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past PRESCAN_KEEP items only the nearest by sign code are scored: every score is
    still the exact cosine, an item's own vector finds it first, and the codes in the file
    are those of the vectors."""
    monkeypatch.setattr(vector_matrix, "BLOCK", 16)
    monkeypatch.setattr(vector_search_module, "PRESCAN_KEEP", 12)
    events = [say(log, f"note {i} about {['tea', 'rain', 'bikes', 'jazz', 'maps'][i % 5]}"
                  f" and {['owls', 'salt', 'kites'][i % 3]}") for i in range(60)]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store), batch_size=16)
    rows = file_columns(home)[:60]
    assert np.array_equal(file_codes(home)[:60], vector_matrix.sign_codes(rows))
    truth = dict(exact(store, word_vector("rain kites"), 60))
    hits = vector_search(store, home, word_vector("rain kites"), 5)
    assert len(hits) == 5 and all(score == pytest.approx(truth[k], abs=1e-5) for k, score in hits)
    assert {k for k, _ in hits} <= {k for k, _ in exact(store, word_vector("rain kites"), 12)}
    for event in events[::7]:
        own = word_vector("user: " + event.payload["text"])
        assert vector_search(store, home, own, 1)[0][0] == key(event)
    monkeypatch.setattr(vector_search_module, "PRESCAN_KEEP", 60)  # as many as there are
    assert same(vector_search(store, home, word_vector("rain kites"), 10),
                exact(store, word_vector("rain kites"), 10))


def embedded_notes(store: ProjectionStore, log: EventLog, home: Home,
                   n: int) -> tuple[vector_matrix.MatrixState, vector_matrix.Matrix]:
    """``n`` short notes on a few topics, embedded into the matrix file: its state and file."""
    for i in range(n):
        say(log, f"note {i} about {['tea', 'rain', 'bikes', 'jazz', 'maps'][i % 5]} {i * 7}")
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store), batch_size=16)
    state = vector_matrix.matrix_state(store.db)
    assert state is not None
    matrix = vector_matrix.open_matrix(home, state.file, 384, state.count)
    assert matrix is not None
    return state, matrix


@pytest.mark.parametrize("block", [128, 16])  # 128 slots a block: a whole number of rows
def test_rows_are_read_by_slot_across_blocks(store: ProjectionStore, log: EventLog, home: Home,
                                             monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """A slot's vector is read from its block, through the file seen as one array of rows
    when a block is a whole number of rows long, else block by block."""
    monkeypatch.setattr(vector_matrix, "BLOCK", block)
    _, matrix = embedded_notes(store, log, home, 150)
    assert matrix.blocks == -(-150 // block)
    assert (matrix.flat is not None) == (block == 128)
    slots = np.array([0, 1, block - 1, block, 149, 77])
    cached = dict(store.db.execute("SELECT s.slot, e.vector FROM vector_slots s JOIN"
                                   " embeddings e ON e.content_hash = s.content_hash").fetchall())
    want = np.stack([np.frombuffer(cached[int(slot)], dtype=np.float32) for slot in slots])
    assert np.array_equal(matrix.vectors(slots), want)


def test_a_prescan_done_beforehand_is_used_when_it_is_of_the_same_file(
        store: ProjectionStore, log: EventLog, home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall scans the file on the thread that embedded the query (``prescan``, no database
    read there); the search then checks those slots instead of scanning again — unless the
    file has changed since, when it scans afresh."""
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    query = word_vector("puppy beach")
    active = active_model(store)
    ready = vector_search_module.prescan(home, vector_matrix.matrix_state(store.db), active,
                                         query, 3)
    assert ready is not None and ready.count == len(TEXTS)
    expected = vector_search(store, home, query, 3)
    with monkeypatch.context() as patched:  # a second scan would fail
        patched.setattr(vector_matrix.Matrix, "candidates", lambda *a: pytest.fail("scanned"))
        assert vector_search(store, home, query, 3, prescanned=ready) == expected
    assert expected[0][0] == key(events[3])

    newer = say(log, "my puppy loves the beach at dawn")
    store.catch_up_all()
    embed_pending(store, fake(store))  # refreshed: one more slot, the prescan is stale
    hits = vector_search(store, home, query, 3, prescanned=ready)
    assert key(newer) in {h[0] for h in hits}
    assert same(hits, exact(store, query, 3))


def test_the_exact_scoring_is_shared_by_two_threads_bit_for_bit(
        store: ProjectionStore, log: EventLog, home: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recall's own thread, done with FTS5, takes chunks of the exact scoring that the
    query's thread (``prescan``) has not got to. The scores are bit for bit those of one
    product over every row: chunks are whole multiples of ``CHUNK`` rows, the remainder in
    the last."""
    monkeypatch.setattr(vector_matrix, "BLOCK", 16)
    monkeypatch.setattr(vector_matrix.Scoring, "CHUNK", 8)
    state, matrix = embedded_notes(store, log, home, 61)
    query = word_vector("rain tea")
    whole = matrix.vectors(np.arange(state.count)) @ query
    expected = vector_search(store, home, query, 10)

    started, helped = threading.Event(), threading.Event()
    took: list[tuple[str, int]] = []
    vectors = vector_matrix.Matrix.vectors

    def rows(self: vector_matrix.Matrix, slots: np.ndarray) -> np.ndarray:
        took.append((threading.current_thread().name, len(slots)))
        if threading.current_thread() is threading.main_thread():
            helped.set()
        elif not started.is_set():
            started.set()
            assert helped.wait(10)  # holds its first chunk until this thread has taken one
        return vectors(self, slots)

    monkeypatch.setattr(vector_matrix.Matrix, "vectors", rows)
    shared: list[vector_matrix.Scoring] = []
    handed = threading.Event()

    def share(scoring: vector_matrix.Scoring) -> None:
        shared.append(scoring)
        handed.set()

    result: list[vector_search_module.Prescan | None] = []
    worker = threading.Thread(target=lambda: result.append(vector_search_module.prescan(
        home, state, active_model(store), query, 10, share)), name="query")
    worker.start()
    assert handed.wait(10) and started.wait(10)
    shared[0].run()
    worker.join(10)
    assert {name for name, _ in took} == {"query", threading.main_thread().name}
    assert sorted(n for _, n in took) == [8] * 6 + [13]
    assert np.array_equal(shared[0].scores, whole)
    ready = result[0]
    assert ready is not None
    monkeypatch.setattr(vector_matrix.Matrix, "vectors", vectors)
    assert vector_search(store, home, query, 10, prescanned=ready) == expected


def test_a_slot_left_zeroed_by_a_crash_is_scored_from_the_cache(
        store: ProjectionStore, log: EventLog, home: Home) -> None:
    """A refresh that zeroed a slot and died before freeing it leaves zeros behind a slot the
    projection still vouches for: search reads that item's vector from the cache."""
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    slot = store.db.execute("SELECT slot FROM vector_slots WHERE key = ?",
                            (key(events[2]),)).fetchone()[0]
    state = vector_matrix.matrix_state(store.db)
    vector_matrix._zero_slots(vectors_dir(home) / state.file, 384, [slot])
    vector_matrix._MATRICES.clear()
    query = word_vector("mother dinner")
    assert same(vector_search(store, home, query, 3), exact(store, query, 3))
    assert vector_search(store, home, query, 1)[0][0] == key(events[2])
    filtered = vector_search(store, home, query, 5, keys_filter=[key(events[2])])
    assert same(filtered, [h for h in exact(store, query, 5) if h[0] == key(events[2])])


def test_keys_filter_restricts_the_search(store: ProjectionStore, log: EventLog,
                                          home: Home) -> None:
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    allowed = [key(events[1]), key(events[2]), "turn:unknown"]
    hits = vector_search(store, home, word_vector("puppy"), 5, keys_filter=allowed)
    assert {h[0] for h in hits} == {key(events[1]), key(events[2])}


def test_slots_read_with_the_items_are_not_looked_up_again(
        store: ProjectionStore, log: EventLog, home: Home,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The context step reads its turns' items with their matrix slots (``turn_items``
    with ``slots``); their cosines then look up only the keys without one, and come out
    as a plain ``keys_filter`` search's. A slot past the file's count, or hints given
    outside a transaction (read in another snapshot), are not trusted."""
    from events.db import read_transaction
    from projections.context import turn_items

    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    ids = {event.id for event in events}
    slots: dict[str, int] = {}
    items = turn_items(store.db, ids, slots)
    assert items.keys() == turn_items(store.db, ids).keys() == slots.keys()
    assert slots == dict(store.db.execute("SELECT key, slot FROM vector_slots").fetchall())
    found: dict[str, int] = {}  # the lexical hits' slots come with them the same way
    hits = search(store.db, "puppy build", 10, slots=found)
    assert len(hits) == 4 and found == {hit.key: slots[hit.key] for hit in hits}
    assert search(store.db, "puppy build", 10) == hits
    expected = {k: hit.content_hash for k, (hit, _) in items.items()}
    query = word_vector("puppy ci")
    plain = vector_search(store, home, query, 5, keys_filter=expected)
    looked_up: list[list[str]] = []
    real = vector_search_module._in_chunks
    monkeypatch.setattr(vector_search_module, "_in_chunks",
                        lambda db, sql, values, before=(): looked_up.append(list(values))
                        or real(db, sql, values, before))
    hinted = {k: slots[k] for k in sorted(slots)[:3]}
    with read_transaction(store.db):
        got = vector_search(store, home, query, 5, keys_filter=expected, slots=hinted)
    assert got == plain
    assert looked_up == [sorted(set(expected) - set(hinted))]
    looked_up.clear()
    with read_transaction(store.db):  # a slot the file does not have yet: looked up
        vector_search(store, home, query, 5, keys_filter=expected,
                      slots={**hinted, sorted(hinted)[0]: 10_000})
    assert looked_up == [sorted(set(expected) - set(hinted) | {sorted(hinted)[0]})]
    looked_up.clear()
    assert vector_search(store, home, query, 5, keys_filter=expected, slots=hinted) == plain
    assert looked_up == [sorted(expected)]  # no transaction of the caller's: no hints
    stale = sorted(slots)[0]  # a slot that holds other content than the item's: not given
    store.db.execute("UPDATE vector_slots SET content_hash = 'other' WHERE key = ?", (stale,))
    again: dict[str, int] = {}
    turn_items(store.db, ids, again)
    assert again == {k: v for k, v in slots.items() if k != stale}


def test_without_the_file_search_falls_back_to_the_cache(store: ProjectionStore, log: EventLog,
                                                         home: Home) -> None:
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    for path in vectors_dir(home).glob("*.f32"):
        path.unlink()
    vector_matrix._MATRICES.clear()
    hits = vector_search(store, home, word_vector("mother dinner"), 1)
    assert hits[0][0] == key(events[2])
    refresh_vectors(store)  # rewrites the missing file
    assert len(list(vectors_dir(home).glob("*.f32"))) == 1
    assert vector_search(store, home, word_vector("mother dinner"), 1) == hits


def test_a_damaged_file_is_rewritten(store: ProjectionStore, log: EventLog, home: Home) -> None:
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    (path,) = vectors_dir(home).glob("*.f32")
    with open(path, "r+b") as handle:
        handle.truncate(vector_matrix.HEADER + 100)  # cut short: fewer columns than recorded
    vector_matrix._MATRICES.clear()
    assert vector_search(store, home, word_vector("mother"), 1)[0][0] == key(events[2])
    refresh_vectors(store)
    (fresh,) = vectors_dir(home).glob("*.f32")
    assert fresh != path and holds(file_columns(home), word_vector("user: " + TEXTS[2]))


def test_items_added_after_the_last_refresh_are_still_found(store: ProjectionStore,
                                                            log: EventLog, home: Home) -> None:
    first = say(log, "we adopted a puppy named biscuit")
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    again = say(log, "we adopted a puppy named biscuit", session="other")  # cached content
    store.catch_up_all()  # no refresh: the file does not have it yet
    assert pending_count(store) == 0
    hits = vector_search(store, home, word_vector("puppy"), 5)
    assert {h[0] for h in hits} == {key(first), key(again)}
    assert refresh_vectors(store) == 1
    assert vector_matrix.matrix_state(store.db).count == 2


# --- replay -----------------------------------------------------------------------------------


def test_a_rebuild_embeds_nothing_again_and_digests_the_same(store: ProjectionStore, log: EventLog,
                                                            home: Home, tmp_path: Path) -> None:
    events = [say(log, text) for text in TEXTS]
    choose(log)
    log.append(LongTermRewritten(content="# Pets\nBiscuit is a puppy.\n\n# Work\nCI is green.\n"),
               stream="memory")
    store.catch_up_all()
    embed_pending(store, fake(store))
    digest = store.digest("vectors")
    before = vector_search(store, home, word_vector("puppy"), 3)

    store.rebuild("vectors")
    again = fake(store)
    assert embed_pending(store, again) == 0 and again.texts == []
    assert store.digest("vectors") == digest
    assert vector_search(store, home, word_vector("puppy"), 3) == before
    assert key(events[0]) in {h[0] for h in before}  # with the MEMORY.md "Pets" section
    store.check("vectors")

    # the digest covers the mapping and the model, not the floats: a scratch rebuild with an
    # empty cache (what `replay --verify` does) gives the same one
    with ProjectionStore(Home(tmp_path / "scratch"), log, [VectorsProjector()]) as scratch:
        scratch.rebuild("vectors")
        assert scratch.digest("vectors") == digest


def test_a_memory_rewrite_keeps_the_vectors_of_unchanged_sections(store: ProjectionStore,
                                                                  log: EventLog) -> None:
    choose(log)
    log.append(LongTermRewritten(content="# Pets\nBiscuit is a puppy.\n"), stream="memory")
    store.catch_up_all()
    embed_pending(store, fake(store))
    log.append(LongTermRewritten(content="# Pets\nBiscuit is a puppy.\n\n# Food\nTea, no milk.\n"),
               stream="memory")
    store.catch_up_all()
    model = fake(store)
    assert embed_pending(store, model) == 1 and model.texts == ["# Food\nTea, no milk."]
    log.append(LongTermRewritten(content="# Food\nTea, no milk.\n"), stream="memory")
    store.catch_up_all()
    # the dropped section's vector goes: no item has that content any more
    assert content_hash("# Pets\nBiscuit is a puppy.") not in cached_hashes(store)


# --- forgetting -------------------------------------------------------------------------------


def test_forgetting_removes_the_item_its_vector_and_its_column(store: ProjectionStore,
                                                              log: EventLog, home: Home) -> None:
    secret = say(log, "my diary code is tulip seven")
    weather = say(log, "the weather is nice")
    same = say(log, "the weather is nice", session="other")  # same content as `weather`
    say(log, "the ci build is green now")
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    secret_hash = content_hash("user: my diary code is tulip seven")
    secret_vector = word_vector("user: my diary code is tulip seven")
    assert secret_hash in cached_hashes(store) and holds(file_columns(home), secret_vector)

    forget(log, secret, weather)
    store.catch_up_all()
    keys = {row[0] for row in store.db.execute("SELECT key FROM vector_items")}
    assert key(secret) not in keys and key(weather) not in keys and key(same) in keys
    assert secret_hash not in cached_hashes(store)  # every model's copy
    assert content_hash("user: the weather is nice") in cached_hashes(store)  # `same` has it
    # the file still has the column until the refresh, but search never returns it
    hits = vector_search(store, home, secret_vector, 10)
    assert key(secret) not in {h[0] for h in hits} and key(weather) not in {h[0] for h in hits}
    assert key(same) in {h[0] for h in hits}

    refresh_vectors(store)
    columns = file_columns(home)
    assert not holds(columns, secret_vector)
    assert holds(columns, word_vector("user: the weather is nice"))
    codes = {tuple(row) for row in file_codes(home)}  # its sign code left with it
    assert tuple(vector_matrix.sign_codes(secret_vector.reshape(1, -1))[0]) not in codes
    slots = {row[0] for row in store.db.execute("SELECT key FROM vector_slots")}
    assert key(secret) not in slots and key(weather) not in slots


def test_hits_are_checked_against_the_items_only_while_the_file_is_behind(
        store: ProjectionStore, log: EventLog, home: Home) -> None:
    """At the file's generation every slot is a live item (each change bumps the generation
    in its own transaction and a refresh frees the slots of items gone): search then reads
    the slots' keys only. Behind it, each hit is checked against ``vector_items``."""
    events = [say(log, text) for text in TEXTS]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store))
    statements: list[str] = []
    store.db.set_trace_callback(statements.append)
    query = word_vector("puppy beach")
    try:
        assert same(vector_search(store, home, query, 2), exact(store, query, 2))
        filtered = vector_search(store, home, query, 5, keys_filter=[key(events[3])])
        assert [h[0] for h in filtered] == [key(events[3])]
        assert not [s for s in statements if "FROM vector_items WHERE" in s]
        forget(log, events[3])
        store.catch_up_all()  # not refreshed: the file still holds the forgotten item
        statements.clear()
        hits = vector_search(store, home, query, 2)
        assert key(events[3]) not in {h[0] for h in hits}
        assert same(hits, exact(store, query, 2))
        assert vector_search(store, home, query, 5, keys_filter=[key(events[3])]) == []
        assert len([s for s in statements if "FROM vector_items WHERE" in s]) >= 2
    finally:
        store.db.set_trace_callback(None)


def test_a_text_forgotten_while_it_was_being_embedded_is_not_stored(store: ProjectionStore,
                                                                    log: EventLog) -> None:
    secret = say(log, "my diary code is tulip seven")
    kept = say(log, "the weather is nice")
    choose(log)
    store.catch_up_all()

    class ForgetsMidway(FakeEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            out = super().embed(texts)
            forget(log, secret)
            store.catch_up_all()  # the forget lands between embedding and writing
            return out

    assert embed_pending(store, ForgetsMidway(active_model(store).key)) == 2
    assert cached_hashes(store) == {content_hash("user: the weather is nice")}
    assert vector_matrix.matrix_state(store.db).count == 1
    del kept


def test_compaction_rewrites_a_file_full_of_dead_columns(store: ProjectionStore, log: EventLog,
                                                         home: Home,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_matrix, "BLOCK", 8)
    monkeypatch.setattr(vector_matrix, "MIN_DEAD_TO_COMPACT", 2)
    events = [say(log, f"note number {i} about topic {i % 5}") for i in range(30)]
    choose(log)
    store.catch_up_all()
    embed_pending(store, fake(store), batch_size=7)
    old = {p.name for p in vectors_dir(home).glob("*.f32")}
    forget(log, *events[:12])
    store.catch_up_all()
    refresh_vectors(store)
    new = {p.name for p in vectors_dir(home).glob("*.f32")}
    assert len(new) == 1 and new != old  # rewritten under a new name, the old one deleted
    state = vector_matrix.matrix_state(store.db)
    assert (state.count, state.dead) == (18, 0)
    q = word_vector("note topic 3")
    assert same(vector_search(store, home, q, 5), exact(store, q, 5))
    for e in events[:12]:
        assert not holds(file_columns(home), word_vector("user: " + e.payload["text"]))


# --- the model ----------------------------------------------------------------------------------


def test_a_new_model_choice_embeds_everything_again_under_its_key(store: ProjectionStore,
                                                                  log: EventLog,
                                                                  home: Home) -> None:
    for text in TEXTS:
        say(log, text)
    choose(log)
    store.catch_up_all()
    first = active_model(store)
    embed_pending(store, fake(store))
    choose(log, checksum="cd" * 32)  # the same model id, other files
    store.catch_up_all()
    second = active_model(store)
    assert second.key != first.key and pending_count(store) == len(TEXTS)
    assert vector_search(store, home, word_vector("puppy"), 3) == []  # nothing under the new key
    with pytest.raises(ValueError, match="active model"):
        embed_pending(store, FakeEmbedder(first.key))
    assert embed_pending(store, fake(store)) == len(TEXTS)
    assert vector_search(store, home, word_vector("puppy"), 1)
    models_cached = {row[0] for row in store.db.execute("SELECT DISTINCT model FROM embeddings")}
    assert models_cached == {first.key, second.key}  # switching back would re-embed nothing
    assert [p.name.split(".")[0] for p in vectors_dir(home).glob("*.f32")] == [second.key]


# --- wiring: diarist sync and the worker ----------------------------------------------------------


def test_sync_exports_nothing_twice_and_embeds_new_turns(model_home: Home, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from cli.main import cli

    def refuse(target: Path) -> dict:
        raise AssertionError("the files were there: no export expected")

    monkeypatch.setattr(models, "export_model", refuse)
    monkeypatch.delenv("DIARIST_NO_EMBED")
    runner = CliRunner()
    transcript = write_transcript(tmp_path / "t.jsonl", make_turns(12))
    assert runner.invoke(cli, ["import", str(transcript)]).exit_code == 0

    skipped = runner.invoke(cli, ["sync", "--no-embed"])
    assert skipped.exit_code == 0 and "embeddings:" not in skipped.output
    first = runner.invoke(cli, ["sync"])
    assert first.exit_code == 0, first.output
    assert "embeddings: 12 embedded with all-MiniLM-L6-v2-fp32, 0 pending" in first.output
    second = runner.invoke(cli, ["sync"])
    assert "embeddings: 0 embedded" in second.output
    with EventLog(model_home.events_db) as log:
        assert len(log.read(types=["EmbeddingModelChosen"])) == 1


def test_the_worker_task_embeds_after_the_projections(model_home: Home, log: EventLog) -> None:
    from projections import open_store
    from projections.embedding import active_embedder
    from workers.app import configure
    from workers.tasks import EMBED_TASK, enqueue_catch_up

    models.ensure_model(model_home, log)
    puppy = say(log, "we adopted a puppy named Biscuit")
    say(log, "the quarterly tax report is due on Friday")
    configure(model_home, immediate=True)
    assert enqueue_catch_up()[-1] == EMBED_TASK  # runs inline, after every projection
    with open_store(model_home, log) as store:
        assert pending_count(store) == 0
        embedder = active_embedder(model_home, store)
        hits = vector_search(store, model_home, embedder.embed_one("our new dog"), 1)
        assert hits[0][0] == key(puppy)
