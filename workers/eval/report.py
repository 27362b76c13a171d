"""What `diarist eval` shows: the table on the terminal and the Markdown report (``--report
DIR``: ``report.md``, ``report.json`` and the charts of :mod:`.charts`). Both render the
report's JSON form, so a saved ``report.json`` can be rendered again."""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROWS = (
    ("top5", "evidence recall, top-5"),
    ("top10", "evidence recall, top-10"),
    ("budget256", "evidence recall, 256 tokens"),
    ("budget512", "evidence recall, 512 tokens"),
    ("budget1024", "evidence recall, 1024 tokens"),
    ("session_top10", "session recall, top-10"),
    ("session_budget512", "session recall, 512 tokens"),
    ("recency", "recency: newest above stale"),
    ("relevancy", "relevancy: mean cosine"),
)
MODES = (("memory", "with diarist's memory"),
         ("evidence", "the evidence turns, same budget (ceiling)"), ("none", "no memory"),
         ("recent", "recent history, same window"))


def _ci(value: dict[str, Any] | None, signed: bool = False) -> str:
    if not value:
        return "—"
    sign = "+" if signed else ""
    return f"{value['mean']:{sign}.3f} [{value['low']:{sign}.3f}, {value['high']:{sign}.3f}]"


def _n(value: dict[str, Any] | None) -> str:
    return f"n={value['n']}" if value else ""


def headline(data: dict[str, Any]) -> str:
    o = data["options"]
    skipped = ", ".join(f"{v} {k}" for k, v in data["skipped"].items())
    parts = [f"{data['dataset']} ({data['format']}): {data['summary']['questions']} questions"
             + (f" ({skipped})" if skipped else ""),
             f"vectors {'on' if o['embed'] else 'off'}, window {o['window']} tokens "
             f"(memory budget {o['memory_budget']}, top_k {o['top_k']})"]
    if o.get("sample") is not None:
        parts.append(f"stratified sample of {o['sample']}, seed {o['seed']}")
    if o.get("model"):
        parts.append(f"model {o['model']}")
    if o.get("temperature"):
        parts.append(f"temperature {o['temperature']}")
    return "; ".join(parts)


def _recall_rows(block: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for key, label in ROWS:
        ours, theirs, diff = (block["diarist"][key], block["bm25"][key],
                              block["difference"][key])
        if ours is None and theirs is None:
            continue
        label = f"{label} ({_n(ours or theirs)})" if key == "recency" else label
        rows.append((label, _ci(ours), _ci(theirs), _ci(diff, signed=True)))
    return rows


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [header, *rows]]


def _efficiency(block: dict[str, Any]) -> str:
    e = block["efficiency"]
    if not e["memory_tokens"]:
        return ""
    return (f"memory tokens a question {e['memory_tokens']['mean']:.0f}, prompt tokens "
            f"{e['prompt_tokens']['mean']:.0f} (memory share {_ci(e['memory_share'])}), tokens "
            f"a question with the reply {e['tokens_per_question']['mean']:.0f}")


def _answer_lines(block: dict[str, Any]) -> list[str]:
    answers = block.get("answers")
    if not answers:
        return []
    rows = [(label, _ci(answers["f1"][mode]), _ci(answers["contains"][mode]))
            for mode, label in MODES]
    rows += [(f"gain over {label}", _ci(answers["f1"][f"memory-{mode}"], signed=True),
              _ci(answers["contains"][f"memory-{mode}"], signed=True))
             for mode, label in MODES[1:]]
    return [*_table(rows, ("answers", "F1 [95% CI]", "contains answer [95% CI]")),
            _ceiling_line(answers)]


def _ceiling_line(answers: dict[str, Any]) -> str:
    share = answers.get("of_ceiling") or {}
    shown = [f"{s['mean']:.2f}× [{s['low']:.2f}, {s['high']:.2f}]" if (s := share.get(k))
             else "—" for k in ("f1", "contains")]
    return f"memory / evidence: F1 {shown[0]}, contains {shown[1]}"


def _by_category(data: dict[str, Any]) -> list[str]:
    rows: list[tuple[str, ...]] = []
    for name, block in data["summary"]["categories"].items():
        def mean(system: str, key: str, b: dict[str, Any] = block) -> str:
            v = b[system][key]
            return f"{v['mean']:.3f}" if v else "—"
        row: tuple[str, ...] = (f"{name} (n={block['questions']})",
               f"{mean('diarist', 'top10')} / {mean('diarist', 'budget512')}",
               f"{mean('bm25', 'top10')} / {mean('bm25', 'budget512')}")
        if block.get("answers"):
            f1 = block["answers"]["f1"]
            row += (" / ".join(f"{f1[m]['mean']:.3f}" if f1[m] else "—" for m, _ in MODES),)
        rows.append(row)
    if not rows:
        return []
    header: tuple[str, ...] = ("by category", "diarist top-10 / 512", "BM25 top-10 / 512")
    if len(rows[0]) == 4:
        header += ("F1 memory / evidence / none / recent",)
    return _table(rows, header)


def terminal_table(data: dict[str, Any]) -> str:
    """The report as plain text: recall beside the baseline, efficiency, answers, and the
    figures by category."""
    overall = data["summary"]["overall"]
    lines = [headline(data), ""]
    lines += _table(_recall_rows(overall), ("", "diarist [95% CI]", "BM25 over turns",
                                            "difference (paired)"))
    efficiency = _efficiency(overall)
    if efficiency:
        lines += ["", efficiency]
    answers = _answer_lines(overall)
    if answers:
        lines += ["", *answers]
    category = _by_category(data)
    if category:
        lines += ["", *category]
    lines += ["", f"{data['timings'].get('total_s', 0):.1f} s "
              f"(homes {data['timings'].get('homes_s', 0):.1f} s, questions "
              f"{data['timings'].get('questions_s', 0):.1f} s)"]
    lines += [f"note: {n}" for n in data.get("notes", [])]
    return "\n".join(lines)


def _markdown_table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


CATEGORY_COLUMNS = (("diarist", "top10", "diarist top-10"), ("bm25", "top10", "BM25 top-10"),
                    ("diarist", "budget512", "diarist 512 tokens"),
                    ("bm25", "budget512", "BM25 512 tokens"),
                    ("diarist", "recency", "diarist recency"))


def _category_markdown(data: dict[str, Any]) -> list[str]:
    """The figures by category with their intervals (a column only where some category has
    it: recency needs stale refs, F1 needs --answer)."""
    blocks = data["summary"]["categories"]
    if not blocks:
        return []
    columns: list[tuple[str, Any]] = [
        (label, lambda b, s=system, k=key: b[s][k]) for system, key, label in CATEGORY_COLUMNS]
    columns += [(f"F1 {label}", lambda b, m=mode: (b.get("answers") or {}).get("f1", {}).get(m))
                for mode, label in (("memory", "memory"), ("evidence", "evidence"),
                                    ("none", "no memory"), ("recent", "recent history"))]
    columns = [(label, get) for label, get in columns if any(get(b) for b in blocks.values())]
    rows = [(f"{name} (n={block['questions']})", *(_ci(get(block)) for _, get in columns))
            for name, block in blocks.items()]
    return _markdown_table(rows, ("category", *(label for label, _ in columns)))


def markdown(data: dict[str, Any], charts: list[Path]) -> str:
    overall = data["summary"]["overall"]
    out = ["# diarist eval", "", headline(data), "",
           "Means over questions with 95 % bootstrap intervals; the difference column is the "
           "paired bootstrap of diarist − BM25 on the same questions.", ""]
    out += _markdown_table(_recall_rows(overall), ("", "diarist", "BM25 over turns",
                                                   "difference"))
    efficiency = _efficiency(overall)
    if efficiency:
        out += ["", f"Efficiency: {efficiency}."]
    answers = overall.get("answers")
    if answers:
        rows = [(label, _ci(answers["f1"][m]), _ci(answers["contains"][m])) for m, label in MODES]
        rows += [(f"gain over {label}", _ci(answers["f1"][f"memory-{m}"], signed=True),
                  _ci(answers["contains"][f"memory-{m}"], signed=True))
                 for m, label in MODES[1:]]
        out += ["", "## Answers", ""]
        out += _markdown_table(rows, ("", "F1", "contains the answer"))
        out += ["", f"Of the ceiling ({_ceiling_line(answers)})."]
    category = _category_markdown(data)
    if category:
        out += ["", "## By category", "", "Means with 95 % bootstrap intervals over the "
                "questions of each category.", "", *category]
    if charts:
        out += ["", "## Charts", ""] + [f"![{c.stem}]({c.name})" for c in charts]
    out += ["", f"Run time: {data['timings'].get('total_s', 0):.1f} s."]
    out += [f"Note: {n}" for n in data.get("notes", [])]
    return "\n".join(out) + "\n"


def write_report(data: dict[str, Any], directory: Path) -> list[Path]:
    """``report.md``, ``report.json`` and the charts in ``directory``; returns the files."""
    from .charts import draw_charts

    directory.mkdir(parents=True, exist_ok=True)
    charts = draw_charts(data, directory)
    (directory / "report.json").write_text(json.dumps(data, indent=1, ensure_ascii=False),
                                           encoding="utf-8")
    (directory / "report.md").write_text(markdown(data, charts), encoding="utf-8")
    return [directory / "report.md", directory / "report.json", *charts]
