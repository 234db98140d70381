"""The GRPO policy loss of TRL / verl / DAPO in numpy, and its gradient by central finite
differences in float64: the golden values the trainer's loss is checked against.

Input (stdin, JSON): {"cases": [{"logp", "old", "adv", "weights", "is_weights", "ref"?, "beta",
"eps_low", "eps_high", "dual"}]}; output: [{"loss", "grad"}] per case.
"""
import json
import sys

import numpy as np


def loss(logp, c):
    old, adv = np.array(c["old"]), np.array(c["adv"])
    ratio = np.exp(np.clip(logp - old, -20.0, 20.0))
    pg1 = -adv * ratio
    pg2 = -adv * np.clip(ratio, 1.0 - c["eps_low"], 1.0 + c["eps_high"])
    clipped = np.maximum(pg1, pg2)
    dual = np.minimum(-adv * c["dual"], clipped)
    pg = np.where(adv < 0, dual, clipped) * np.array(c["is_weights"])
    if c.get("ref") is not None:
        d = np.array(c["ref"]) - logp
        pg = pg + c["beta"] * (np.exp(d) - d - 1.0)
    return float((pg * np.array(c["weights"])).sum())


def main():
    out = []
    for c in json.load(sys.stdin)["cases"]:
        logp = np.array(c["logp"], dtype=np.float64)
        h = 1e-6
        grad = []
        for i in range(len(logp)):
            up, down = logp.copy(), logp.copy()
            up[i] += h
            down[i] -= h
            grad.append((loss(up, c) - loss(down, c)) / (2 * h))
        out.append({"loss": loss(logp, c), "grad": grad})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
