"""The charts of `diarist eval --report`: evidence recall against the token budget (diarist
beside the BM25 baseline) and, with ``--answer``, answer F1 with and without memory — PNG
files drawn with matplotlib, which is optional (``pip install 'diarist[charts]'``) and
imported only here."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from events import DiaristError


class ChartsUnavailable(DiaristError):
    hint = ("Install the charts extra: pip install 'diarist[charts]' (matplotlib), or leave "
            "out --report.")


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend; a clear error when it is missing."""
    try:
        import matplotlib
    except ImportError:
        raise ChartsUnavailable("drawing charts needs matplotlib, which is not installed") \
            from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _errors(values: list[dict[str, Any] | None]) -> tuple[list[float], list[list[float]]]:
    means = [v["mean"] if v else 0.0 for v in values]
    spread = [[v["mean"] - v["low"] if v else 0.0 for v in values],
              [v["high"] - v["mean"] if v else 0.0 for v in values]]
    return means, spread


def recall_chart(data: dict[str, Any], path: Path) -> Path:
    plt = pyplot()
    overall = data["summary"]["overall"]
    budgets = data["options"]["budgets"]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for system, label, marker in (("diarist", "diarist recall", "o"),
                                  ("bm25", "BM25 over turns", "s")):
        means, spread = _errors([overall[system][f"budget{b}"] for b in budgets])
        ax.errorbar(budgets, means, yerr=spread, marker=marker, capsize=4, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_ylim(0, 1)
    ax.set_xlabel("memory budget (tokens)")
    ax.set_ylabel("evidence recall (95% CI)")
    ax.set_title(f"{data['dataset']}: recall within a budget "
                 f"(n={data['summary']['questions']})")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def answers_chart(data: dict[str, Any], path: Path) -> Path:
    plt = pyplot()
    answers = data["summary"]["overall"]["answers"]
    modes = [("memory", "diarist memory"), ("evidence", "evidence (ceiling)"),
             ("none", "no memory"), ("recent", "recent history")]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    width = 0.38
    for offset, (score, label) in ((-width / 2, ("f1", "token F1")),
                                   (width / 2, ("contains", "contains the answer"))):
        means, spread = _errors([answers[score][m] for m, _ in modes])
        ax.bar([i + offset for i in range(len(modes))], means, width, yerr=spread, capsize=4,
               label=label)
    ax.set_xticks(range(len(modes)), [label for _, label in modes])
    ax.set_ylim(0, 1)
    ax.set_ylabel("score (95% CI)")
    ax.set_title(f"{data['dataset']}: answers by {data['options'].get('model')} "
                 f"(n={data['summary']['questions']})")
    ax.grid(axis="y", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def draw_charts(data: dict[str, Any], directory: Path) -> list[Path]:
    """The charts that apply to this run, written into ``directory``."""
    if not data["summary"]["questions"]:
        return []
    out = [recall_chart(data, directory / "recall-vs-budget.png")]
    if data["summary"]["overall"].get("answers"):
        out.append(answers_chart(data, directory / "answers.png"))
    return out
