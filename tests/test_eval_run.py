"""`diarist eval` end to end on tiny data: its recall figures agree with an independent
computation from `diarist recall --queries --json`, the model is exported once for all
homes, selection (--category, --sample, --limit), the table, --json and --report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from events import Home
from workers.eval.changed_facts import generate
from workers.eval.dataset import write_layout
from workers.eval.runner import EvalOptions, select_questions, stratified_sample

from .conftest import run

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def _recall_cli(home: Path, queries: Path, k: int, budget: int) -> dict[str, list[str]]:
    """Question id → the refs of the items `diarist recall --queries --json` returned."""
    out = run("--home", str(home), "recall", "--queries", str(queries), "--json",
              "--k", str(k), "--budget", str(budget)).output
    return {r["id"]: [ref for item in r["items"] for ref in item["refs"]]
            for r in map(json.loads, out.splitlines())}


def _share(evidence: list[str], refs: list[str]) -> float:
    return sum(e in refs for e in set(evidence)) / len(set(evidence))


def _agreement(dataset_dir: Path, homes: Path, report: dict) -> None:
    by_id = {r["id"]: r for r in report["questions"]}
    checked = 0
    for questions_file in sorted(dataset_dir.glob("*.questions.jsonl")):
        conv = questions_file.name.split(".")[0]
        questions = [json.loads(x) for x in questions_file.read_text().splitlines()]
        questions = [q for q in questions if q["id"] in by_id]
        queries = homes / f"{conv}.queries.jsonl"
        queries.write_text("".join(json.dumps({"id": q["id"], "query": q["query"]}) + "\n"
                                   for q in questions))
        cuts = {"top5": (5, 0), "top10": (10, 0), "budget256": (1000, 256),
                "budget512": (1000, 512), "budget1024": (1000, 1024)}
        for metric, (k, budget) in cuts.items():
            recalled = _recall_cli(homes / conv, queries, k, budget)
            for q in questions:
                expected = _share(q["evidence"], recalled[q["id"]])
                assert by_id[q["id"]]["systems"]["diarist"][metric] == pytest.approx(expected), \
                    (q["id"], metric)
                checked += 1
    assert checked == 5 * len(by_id) > 0
    # the summary's means are the means of those per-question figures
    for metric in ("top5", "top10", "budget512"):
        values = [r["systems"]["diarist"][metric] for r in report["questions"]]
        assert report["summary"]["overall"]["diarist"][metric]["mean"] == pytest.approx(
            sum(values) / len(values), abs=1e-4)


def test_recall_figures_agree_with_recall_queries_json(tmp_path: Path, model_home: Home,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With vectors: the homes get the workspace's exported model by hard link (no export),
    and every recall figure equals one computed independently from the CLI's JSON."""
    monkeypatch.delenv("DIARIST_NO_EMBED")
    data = tmp_path / "data"
    write_layout(generate(5, people=2, sessions=4, changing=2, once=2), data)
    homes = tmp_path / "homes"
    result = run("--home", str(model_home.root), "eval", str(data), "--json",
                 "--keep-homes", str(homes))
    report = json.loads(result.output)
    assert report["options"]["embed"] is True
    _agreement(data, homes, report)
    source = model_home.models_dir / "all-MiniLM-L6-v2" / "model-fp32.onnx"
    for conv in ("cf5-1", "cf5-2"):
        linked = homes / conv / "models" / "all-MiniLM-L6-v2" / "model-fp32.onnx"
        assert linked.stat().st_ino == source.stat().st_ino  # the same file, not an export
    relevancy = report["summary"]["overall"]["diarist"]["relevancy"]
    assert relevancy is not None and 0 < relevancy["mean"] <= 1


def test_lexical_only_run_on_the_layout_fixture(tmp_path: Path) -> None:
    homes = tmp_path / "homes"
    report = json.loads(run("eval", str(FIXTURES / "layout"), "--json",
                            "--keep-homes", str(homes)).output)
    assert report["options"]["embed"] is False
    assert report["skipped"] == {"not answerable": 1}
    assert [q["id"] for q in report["questions"]] == ["a:q1", "a:q2"]
    _agreement(FIXTURES / "layout", homes, report)
    first = report["questions"][0]
    assert first["systems"]["diarist"]["relevancy"] is None
    assert first["systems"]["diarist"]["recency"] in (0.0, 1.0)       # a:q1 has a stale ref
    assert report["questions"][1]["systems"]["diarist"]["recency"] is None
    assert first["memory_tokens"] > 0 and 0 < first["memory_share"] < 1
    # the baseline in the same run: BM25 over single turns
    assert first["systems"]["bm25"]["top10"] is not None
    # a second run on the kept homes imports nothing again and gives the same figures
    transcript = homes / "chat-a" / "transcript.jsonl"
    before = transcript.stat().st_ino
    again = json.loads(run("eval", str(FIXTURES / "layout"), "--json",
                           "--keep-homes", str(homes)).output)
    assert again["questions"] == report["questions"]
    # its transcript was replaced whole, not rewritten in place where a run at the same
    # time could read it half-written
    assert transcript.stat().st_ino != before


def test_the_table_shows_every_figure_beside_the_baseline() -> None:
    out = run("eval", "changed-facts", "--seed", "1").output
    assert "diarist [95% CI]" in out and "BM25 over turns" in out and "difference" in out
    for label in ("top-5", "top-10", "256 tokens", "512 tokens", "1024 tokens",
                  "session recall", "recency", "memory tokens a question", "by category",
                  "changed-fact", "past-event", "single-fact"):
        assert label in out, label


def test_report_writes_markdown_json_and_charts(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run("eval", "changed-facts", "--report", str(tmp_path / "r"), "--limit", "12")
    names = sorted(p.name for p in (tmp_path / "r").iterdir())
    assert names == ["recall-vs-budget.png", "report.json", "report.md"]
    assert (tmp_path / "r" / "recall-vs-budget.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "| evidence recall, top-10 |" in markdown and "![recall-vs-budget]" in markdown
    # by category, with intervals: the same figures as the JSON's per-category summary
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    block = report["summary"]["categories"]["changed-fact"]
    top10 = block["diarist"]["top10"]
    row = next(line for line in markdown.splitlines() if line.startswith("| changed-fact (n="))
    assert f"{top10['mean']:.3f} [{top10['low']:.3f}, {top10['high']:.3f}]" in row
    assert "| category | diarist top-10 | BM25 top-10 |" in markdown
    assert "diarist recency" in markdown and "F1" not in markdown   # no --answer, no F1 column


def test_export_dataset_writes_the_layout(tmp_path: Path) -> None:
    out = run("eval", str(FIXTURES / "locomo10_mini.json"), "--export-dataset",
              str(tmp_path / "out")).output
    assert out.strip() == f"Wrote 4 files to {tmp_path / 'out'}."
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "conv-1.questions.jsonl", "conv-1.transcript.jsonl",
        "conv-2.questions.jsonl", "conv-2.transcript.jsonl"]


def test_bad_dataset_is_a_clear_error() -> None:
    result = run("eval", "no-such-folder", ok=False)
    assert result.exit_code == 1
    assert "Error: no-such-folder: no such file or folder" in result.output
    assert "Hint: Point `diarist eval` at" in result.output


# --- selection -------------------------------------------------------------------------------

def test_category_sample_and_limit() -> None:
    data = generate(0, people=4)
    everything, skipped = select_questions(data, EvalOptions())
    assert skipped == {} and len(everything) == len(data.questions)
    only, skipped = select_questions(data, EvalOptions(categories=("changed-fact",)))
    assert {q.category for _, q in only} == {"changed-fact"}
    assert skipped == {"other categories": len(everything) - len(only)}
    limited, skipped = select_questions(data, EvalOptions(limit=3))
    assert [q.id for _, q in limited] == [q.id for _, q in everything[:3]]
    assert skipped == {"over the limit": len(everything) - 3}


def test_stratified_sample_is_seeded_and_keeps_category_shares() -> None:
    data = generate(0, people=6)
    questions = data.questions
    shares = {c: sum(q.category == c for _, q in questions) / len(questions)
              for c in {q.category for _, q in questions}}
    sample = stratified_sample(questions, 20, seed=4)
    assert len(sample) == 20
    assert [q.id for _, q in sample] == [q.id for _, q in stratified_sample(questions, 20, 4)]
    assert [q.id for _, q in sample] != [q.id for _, q in stratified_sample(questions, 20, 5)]
    for category, part in shares.items():
        got = sum(q.category == category for _, q in sample)
        assert abs(got - 20 * part) < 1, category
    # in dataset order; every category kept even when it is small
    positions = [questions.index(pair) for pair in sample]
    assert positions == sorted(positions)
    assert {q.category for _, q in stratified_sample(questions, len(shares), 0)} == set(shares)
    assert len(stratified_sample(questions, 10_000, 0)) == len(questions)


def test_night_runs_the_default_night_on_each_home(tmp_path: Path) -> None:
    """`--night`: each home gets its night before the questions — the mined statements are
    in its memories and MEMORY.md is written — and the report says so."""
    homes = tmp_path / "homes"
    report = json.loads(run("eval", "changed-facts", "--limit", "2", "--night", "--json",
                            "--keep-homes", str(homes)).output)
    assert report["options"]["night"] is True
    [home] = [p for p in homes.iterdir() if p.is_dir()]
    assert "Memory" in (home / "memory" / "MEMORY.md").read_text()
    assert "user_preference" in run("--home", str(home), "memory", "status").output
    plain = json.loads(run("eval", "changed-facts", "--limit", "2", "--json",
                           "--keep-homes", str(tmp_path / "plain")).output)
    assert plain["options"]["night"] is False
    assert not (tmp_path / "plain" / home.name / "memory" / "MEMORY.md").exists()


def test_set_sweeps_a_recall_weight_for_one_run(tmp_path: Path) -> None:
    """`--set NAME=VALUE` sets one of projections/weights.py for the run (the report names
    it) and puts it back after; a name that is no weight is refused before any work."""
    from projections import weights

    homes = str(tmp_path / "homes")
    plain = json.loads(run("eval", "changed-facts", "--limit", "6", "--json",
                           "--keep-homes", homes).output)
    swept = json.loads(run("eval", "changed-facts", "--limit", "6", "--json",
                           "--keep-homes", homes, "--set", "CANDIDATES=1").output)
    assert "weights" not in plain and swept["weights"] == {"CANDIDATES": 1}
    at_512 = [r["summary"]["overall"]["diarist"]["budget512"]["mean"] for r in (plain, swept)]
    assert at_512[1] < at_512[0]          # one candidate a list: recall finds less
    assert weights.CANDIDATES == 50
    refused = run("eval", "changed-facts", "--keep-homes", str(tmp_path / "other"),
                  "--set", "CANDIDATE=1", ok=False)
    assert refused.exit_code == 1 and "'CANDIDATE=1' is not a recall weight" in refused.output
    assert "COSINE_WEIGHT" in refused.output and not (tmp_path / "other").exists()
    refused = run("eval", "changed-facts", "--set", "COSINE_WEIGHT=high", ok=False)
    assert "COSINE_WEIGHT takes a float, not 'high'" in refused.output
