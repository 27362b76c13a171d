"""Train the chatter model (workers/mining/chatter.py) and write its weights.

    python scripts/train_chatter.py [--max-loss 0.05] [--check-only] [--out PATH]

Data: the statements mining draws from the LoCoMo dev conversations
(``../shared/bench/locomo``), each labelled *kept* when it states one of its session's
observations (MiniLM fp32 cosine at least ``chatter.OBSERVED``), else *chatter*. Features:
``chatter.features`` (the statement's vector and two word counts). Model: logistic
regression (numpy, L2, the classes weighted to balance; ``train_attributes.fit``). The
threshold is chosen by leave-one-conversation-out: the highest probability at which at most
``--max-loss`` of the held-out conversation's kept statements fall under it (the worst
conversation decides). Printed for each conversation held out: the statements left out,
the kept ones among them, and the share of statements stating an observation (precision)
and of observations some statement states (recall), with all statements and without the
ones left out.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from train_attributes import CONVS, LOCOMO, _said, embedder, fit, with_output  # noqa: E402

from workers.mining.chatter import OBSERVED, WEIGHTS, features  # noqa: E402

L2, RATE = 0.001, 0.5


class Conversation:
    """One LoCoMo conversation's statements (with their speakers and sessions), their
    features, labels, and the cosines of each session's observations to its statements."""

    def __init__(self, conv: str, embed) -> None:  # type: ignore[no-untyped-def]
        turns = [json.loads(line) for line in
                 (LOCOMO / f"{conv}.transcript.jsonl").read_text().splitlines()]
        names = {t["name"] for t in turns}
        said = [(s, who, t["session"]) for t in turns for s, who in _said(t, names)]
        self.texts = [s for s, _, _ in said]
        facts: dict[str, list[str]] = defaultdict(list)
        for line in (LOCOMO / f"{conv}.observations.jsonl").read_text().splitlines():
            row = json.loads(line)
            facts[row["session"]].append(row["fact"])
        vectors = np.asarray(embed.embed([s for s, _, _ in said]))
        self.x = features(vectors, [(s, who) for s, who, _ in said])
        self.sessions = np.array([session for _, _, session in said])
        self.cosines: dict[str, np.ndarray] = {}   # session → observations × its statements
        self.y = np.zeros(len(said), dtype=bool)
        for session in dict.fromkeys(self.sessions):
            rows = self.sessions == session
            if not facts.get(session):
                continue
            cos = np.asarray(embed.embed(facts[session])) @ vectors[rows].T
            self.cosines[session] = cos
            self.y[rows] = cos.max(axis=0) >= OBSERVED

    def scores(self, keep: np.ndarray) -> tuple[float, float]:
        """(precision, observation recall) of the statements ``keep`` marks."""
        stated = total = 0
        for session, cos in self.cosines.items():
            kept = keep[self.sessions == session]
            total += cos.shape[0]
            if kept.any():
                stated += int((cos[:, kept].max(axis=1) >= OBSERVED).sum())
        return float(self.y[keep].mean()), stated / max(total, 1)


def logit(w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """A two-class softmax's weights as one logistic regression's (kept over chatter)."""
    return w[:, 1] - w[:, 0], float(b[1] - b[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-loss", type=float, default=0.05,
                        help="the share of a held-out conversation's kept statements the "
                        "threshold may leave out, at most")
    parser.add_argument("--l2", type=float, default=L2, help="the weights' L2 penalty")
    parser.add_argument("--steps", type=int, default=8000, help="gradient descent steps")
    parser.add_argument("--show", action="store_true",
                        help="print each held-out statement left out")
    args = with_output(parser, WEIGHTS).parse_args()
    embed = embedder(args.models)
    convs = {c: Conversation(c, embed) for c in CONVS}

    def train(names: list[str]) -> tuple[np.ndarray, float]:
        x = np.vstack([convs[c].x for c in names])
        y = np.concatenate([convs[c].y for c in names]).astype(int)
        return logit(*fit(x, y, 2, l2=args.l2, steps=args.steps, rate=RATE))

    thresholds = np.round(np.arange(0.05, 0.96, 0.01), 2)
    held: dict[str, np.ndarray] = {}
    worst = np.zeros(len(thresholds))
    for conv, data in convs.items():
        w, b = train([c for c in CONVS if c != conv])
        held[conv] = 1 / (1 + np.exp(-(data.x @ w + b)))
        lost = np.array([np.mean(held[conv][data.y] < t) for t in thresholds])
        worst = np.maximum(worst, lost)
    ok = thresholds[worst <= args.max_loss]
    threshold = float(ok.max()) if len(ok) else float(thresholds[0])
    print(f"threshold {threshold} (worst held-out share of a conversation's kept statements "
          f"left out <= {args.max_loss})")
    print("held out | statements | left out (kept among them) | precision all → without "
          "| observation recall all → without")
    for conv, data in convs.items():
        left = held[conv] < threshold
        everything = np.ones(len(data.y), dtype=bool)
        (p0, r0), (p1, r1) = data.scores(everything), data.scores(~left)
        print(f"{conv} | {len(data.y)} | {int(left.sum())} ({int((left & data.y).sum())}) | "
              f"{p0:.3f} → {p1:.3f} | {r0:.3f} → {r1:.3f}")
        if args.show:
            for i in np.flatnonzero(left):
                print(f"  {held[conv][i]:.2f} {'kept' if data.y[i] else '    '} {data.texts[i]}")
    w, b = train(CONVS)
    if not args.check_only:
        np.savez_compressed(args.out, w=w.astype(np.float32), b=np.float32(b),
                            threshold=np.float32(threshold))
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
