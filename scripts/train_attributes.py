"""Train the attribute classifier (workers/mining/attributes.py) and write its weights.

    python scripts/train_attributes.py [--max-none-rate 0.05] [--with-longmemeval] [--check-only]
        [--out PATH]

Data: the registry's examples (one class per attribute, and one per way of saying it,
``also``) and, as *none*, the clauses of the
statements mining draws from the LoCoMo dev conversations (``../shared/bench/locomo``);
``--with-longmemeval`` adds the user's turns of the LongMemEval dev sample
(``../shared/bench/longmemeval``: an assistant chat's topical statements, "the user is going
to try drinking more water", are no states either), its questions' homes in two halves, each
turn's text in the first only. The installed weights are the default's (why:
docs/experiments.md, "The night's attributes").
Features: MiniLM fp32 vectors. Model: multinomial logistic regression (numpy, L2, classes
weighted to balance). The threshold is chosen by leave-one-group-out (each LoCoMo
conversation, each LongMemEval half if used): the lowest probability at which at most
``--max-none-rate`` of the held-out group's statements get an attribute (the worst fold
decides). Printed, not used for choosing: how many of the
changed-facts generator's changing statements get the right attribute.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo"
LONGMEMEVAL = REPO.parent / "shared" / "bench" / "longmemeval" / "longmemeval_s_dev.json"
sys.path.insert(0, str(REPO))

from projections.embedding import OnnxEmbedder  # noqa: E402
from workers.mining.attributes import (  # noqa: E402
    LABELS,
    NONE,
    WEIGHTS,
    Classifier,
    clauses,
    examples_by_label,
    softmax,
)
from workers.mining.chunks import Turn  # noqa: E402
from workers.mining.statements import statements  # noqa: E402
from workers.models.embedding import export_model  # noqa: E402

L2, STEPS = 1e-4, 2000
CONVS = ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
HALVES = ["longmemeval-a", "longmemeval-b"]
GROUPS = [*CONVS, *HALVES]


def embedder(folder: Path) -> OnnxEmbedder:
    if not (folder / "model-fp32.onnx").exists():
        export_model(folder)
    return OnnxEmbedder(folder / "model-fp32.onnx", folder / "tokenizer.json")


def locomo_statements(conv: str) -> list[tuple[str, str]]:
    turns = [json.loads(line)
             for line in (LOCOMO / f"{conv}.transcript.jsonl").read_text().splitlines()]
    names = {t["name"] for t in turns}     # mining cuts an address to either speaker
    return [said for t in turns for said in _said(t, names)]


def _said(t: dict[str, str], names: set[str]) -> list[tuple[str, str]]:
    """(statement, speaker) for each statement mining draws from transcript turn ``t``."""
    turn = Turn(1, 1, "e", t["ref"], t["role"], t["name"], t["text"], t["at"], True)
    return [(s.text, t["name"]) for s in statements(turn, names)]


def longmemeval_statements() -> dict[str, list[tuple[str, str]]]:
    """The statements mining draws from the user's turns of each half of the LongMemEval
    dev questions' homes (alternate questions; a turn whose text came before is skipped:
    the haystacks share sessions)."""
    from workers.eval.load import load_dataset

    seen: set[str] = set()
    out: dict[str, list[tuple[str, str]]] = {half: [] for half in HALVES}
    for i, conv in enumerate(load_dataset(LONGMEMEVAL).conversations):
        for t in conv.turns:
            if t["role"] != "user" or t["text"] in seen:
                continue
            seen.add(t["text"])
            out[HALVES[i % 2]] += _said(t, {t["name"]})
    return out


def fit(x: np.ndarray, y: np.ndarray, classes: int, l2: float = L2,
        steps: int = STEPS, rate: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(y, minlength=classes).astype(float)
    weight = (len(y) / (classes * np.maximum(counts, 1)))[y]
    onehot = np.eye(classes)[y]
    w = np.zeros((x.shape[1], classes))
    b = np.zeros(classes)
    for _ in range(steps):
        p = softmax(x @ w + b)
        g = (p - onehot) * weight[:, None] / weight.sum()
        w -= rate * (x.T @ g + l2 * w)
        b -= rate * g.sum(axis=0)
    return w, b


class _Fitted(Classifier):
    def __init__(self, embed: OnnxEmbedder, w: np.ndarray, b: np.ndarray,
                 threshold: float) -> None:
        self.embedder, self.w, self.b = embed, w, b
        self.labels, self.threshold = list(LABELS), threshold


def with_output(parser: argparse.ArgumentParser, weights: Path) -> argparse.ArgumentParser:
    """``parser`` with the options every training script takes: where the embedding model
    is exported, and where the weights go (or nowhere)."""
    parser.add_argument("--models", type=Path, default=Path("/tmp/diarist-bench-minilm"),
                        help="where the embedding model is exported (once)")
    parser.add_argument("--check-only", action="store_true", help="write nothing")
    parser.add_argument("--out", type=Path, default=weights,
                        help="where to write the weights (default: the installed ones)")
    return parser


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-none-rate", type=float, default=0.05)
    parser.add_argument("--drop-near", type=float, default=0.55, help="leave out "
                        "clauses this close (cosine) to an attribute's example")
    parser.add_argument("--with-longmemeval", action="store_true",
                        help="LongMemEval dev statements as none too (not the installed weights)")
    args = with_output(parser, WEIGHTS).parse_args()
    embed = embedder(args.models)
    examples = [(e, LABELS.index(label)) for e, label in examples_by_label()]
    x_pos = embed.embed([e for e, _ in examples])
    y_pos = np.array([k for _, k in examples])
    none = LABELS.index(NONE)
    groups = GROUPS if args.with_longmemeval else CONVS
    per_conv = {c: locomo_statements(c) for c in CONVS}
    if args.with_longmemeval:
        per_conv |= longmemeval_statements()
    clause_x = {c: embed.embed([cl for s, who in st for cl in clauses(s, who)])
                for c, st in per_conv.items()}

    # LoCoMo's people do say where they live or work now and then: a clause that close to
    # an example is no sure *none*, so it is left out of the training (not of the check)
    near = {c: (x @ x_pos.T).max(axis=1) >= args.drop_near for c, x in clause_x.items()}
    print("left out as maybe an attribute: "
          f"{sum(int(n.sum()) for n in near.values())} of "
          f"{sum(len(n) for n in near.values())} clauses")

    def train(convs: list[str]) -> tuple[np.ndarray, np.ndarray]:
        negatives = [clause_x[c][~near[c]] for c in convs]
        x = np.vstack([x_pos, *negatives])
        y = np.concatenate([y_pos, np.full(sum(len(n) for n in negatives), none)])
        return fit(x, y, len(LABELS))

    thresholds = np.arange(0.30, 0.96, 0.01)
    worst = np.zeros(len(thresholds))
    held_rates: dict[str, np.ndarray] = {}
    for held in groups:
        w, b = train([c for c in groups if c != held])
        probs = [p for p, _, _ in _Fitted(embed, w, b, 0.0).scored(per_conv[held])]
        rates = np.array([np.mean([p >= t for p in probs]) for t in thresholds])
        worst = np.maximum(worst, rates)
        held_rates[held] = rates
        print(f"held out {held}: {len(probs)} statements; tagged at 0.5: {rates[20]:.3f}")
    ok = [t for t, r in zip(thresholds, worst, strict=True) if r <= args.max_none_rate]
    threshold = float(round(ok[0], 2)) if ok else 0.95
    at = int(np.argmin(np.abs(thresholds - threshold)))
    print(f"held out, tagged at {threshold}: " +
          ", ".join(f"{g} {r[at]:.3f}" for g, r in held_rates.items()))
    w, b = train(groups)
    print(f"threshold {threshold} (worst held-out share of a group's statements given an "
          f"attribute <= {args.max_none_rate})")
    _check_generator(_Fitted(embed, w, b, threshold))
    if not args.check_only:
        np.savez_compressed(args.out, w=w.astype(np.float32), b=b.astype(np.float32),
                            labels=np.array(LABELS), threshold=np.float32(threshold))
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


def _check_generator(classifier: Classifier) -> None:
    from workers.eval.changed_facts import ATTRIBUTES as CHANGING
    from workers.eval.changed_facts import generate

    expected = {"city": "home", "job": "job", "pet": "pet", "pet_name": "pet",
                "drink": "drink", "hobby": "hobby"}
    rows = []
    for seed in (1, 2, 3):
        for conv in generate(seed).conversations:
            names = {t["name"] for t in conv.turns}
            for t in conv.turns:
                if t["role"] != "user":
                    continue
                attr = next((a.key for a in CHANGING if any(v in t["text"] for v in a.values)),
                            None)
                turn = Turn(1, 1, "e", t["ref"], "user", t["name"], t["text"], t["at"], True)
                rows += [(attr, s.text, t["name"]) for s in statements(turn, names)]
    found = classifier.attributes([(s, who) for _, s, who in rows])
    changing = [(a, f) for (a, _, _), f in zip(rows, found, strict=True) if a]
    others = [f for (a, _, _), f in zip(rows, found, strict=True) if not a]
    right = sum(1 for a, f in changing if f == expected[a])
    print(f"changed-facts generator: {right}/{len(changing)} changing statements given the "
          f"right attribute, {sum(1 for f in changing if f[1])} given one; "
          f"{sum(1 for f in others if f)}/{len(others)} other statements given one")


if __name__ == "__main__":
    main()
