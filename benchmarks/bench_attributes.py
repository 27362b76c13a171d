"""The attribute classifier on an assistant chat's statements, against labels.

    python benchmarks/bench_attributes.py [--labels benchmarks/attribute_labels.jsonl]

``attribute_labels.jsonl``: 1,557 statements mining drew from the user's turns of the
LongMemEval dev homes (``recall_dev.py … longmemeval_s_dev.json --night``), each labelled
with the attribute it states of the user as a current fact (home, job, pet …) or "none", by
readers who saw the statement only. They are the 1,257 that a classifier of the time gave
an attribute a probability of 0.3 or more, and 300 drawn at random from the 3,051 others,
each of which stands for 10.17 (``weight``). The classifier was trained on none of them
(its registry and LoCoMo: ``scripts/train_attributes.py``).

For each statement: the attribute mining gives it (:func:`with_attributes`, speaker
"user") and whether it says a current value MEMORY.md would show
(:func:`workers.mining.values.states_a_value`). Printed: precision and recall (weighted;
a hobby and a sport count as one), and per attribute the labelled, found and wrongly given.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from projections.embedding import OnnxEmbedder  # noqa: E402
from projections.memories import Memory  # noqa: E402
from workers.mining.attributes import Classifier, attribute_of, with_attributes  # noqa: E402
from workers.mining.candidates import Candidate  # noqa: E402
from workers.mining.values import states_a_value  # noqa: E402
from workers.models.embedding import export_model  # noqa: E402

SAME = {"sport": "hobby"}     # readers and registry draw this line differently
NAMES = frozenset({"the", "user"})


def given(classifier: Classifier, statements: list[str]) -> list[tuple[str, bool]]:
    """For each statement: its attribute ("" for none) and whether it states a value."""
    candidates = [Candidate("user_preference", s, turns=[1]) for s in statements]
    out = with_attributes(candidates, ["user"] * len(candidates), classifier)
    result = []
    for statement, c in zip(statements, out, strict=True):
        if not c.subject:
            result.append(("", False))
            continue
        memory = Memory("m", "user_preference", statement, "fact", "", 0.7, 1.0, [], "active",
                        [], "", "", "s", ["r"], "heuristic", "", c.subject)
        result.append((attribute_of(c.subject.rpartition("|")[2]),
                       states_a_value(memory, NAMES)))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, default=REPO / "benchmarks" /
                        "attribute_labels.jsonl")
    parser.add_argument("--models", type=Path, default=Path("/tmp/diarist-bench-minilm"))
    args = parser.parse_args()
    if not (args.models / "model-fp32.onnx").exists():
        export_model(args.models)
    classifier = Classifier(OnnxEmbedder(args.models / "model-fp32.onnx",
                                         args.models / "tokenizer.json"))
    rows = [json.loads(line) for line in args.labels.read_text().splitlines()]
    found = given(classifier, [r["statement"] for r in rows])
    for name, gated in (("given an attribute", False), ("… and states a value", True)):
        right = tagged = hit = positives = 0.0
        per: dict[str, Counter[str]] = {}
        for r, (key, value) in zip(rows, found, strict=True):
            key = key if value or not gated else ""
            gold, w = SAME.get(r["label"], r["label"]), r["weight"]
            key = SAME.get(key, key)
            tagged += w * bool(key)
            right += w * bool(key and key == gold)
            if gold != "none":
                positives += w
                hit += w * (key == gold)
                per.setdefault(gold, Counter())["labelled"] += 1
                per[gold]["found"] += key == gold
            if key and key != gold:
                per.setdefault(key, Counter())["wrong"] += 1
        print(f"{name}: {tagged:.0f} (weighted), precision {right / max(tagged, 1):.3f}, "
              f"recall {hit / positives:.3f} of {positives:.0f}")
        print("  " + ", ".join(f"{k} {c['found']}/{c['labelled']} (+{c['wrong']} wrong)"
                               for k, c in sorted(per.items())))


if __name__ == "__main__":
    main()
