"""The references of `train federate` and of the federated rounds' privacy accounting.

usage:
  federate_reference.py aggregate GLOBAL OUT CLIP W1,W2,.. LOCAL...
      ->  {"max_abs_diff": d, "elements": n}: OUT against DP-FedAvg's mean with the noise off,
          computed here in float64 with numpy from the adapters' safetensors
  federate_reference.py residual GLOBAL OUT NOISY CLIP W1,.. LOCAL...
      ->  {"std": s, "mean": m, "elements": n}: NOISY − (the noise-off reference), whose
          standard deviation must be σ = z·C·max w / Σ w
  federate_reference.py epsilon Z ROUNDS DELTA
      ->  {"epsilon": e}: dp-accounting's RdpAccountant (default orders) for ROUNDS rounds of
          the Gaussian mechanism with noise multiplier Z (Poisson sampling with q = 1)
"""
import json
import sys

import numpy as np


def flat(directory):
    from safetensors.numpy import load_file

    tensors = load_file(f"{directory}/adapter_model.safetensors")
    return np.concatenate([tensors[k].astype(np.float64).ravel() for k in sorted(tensors)])


def reference(global_dir, clip, weights, locals_):
    g = flat(global_dir)
    w = np.array([float(x) for x in weights.split(",")])
    total = np.zeros_like(g)
    for wi, local in zip(w, locals_):
        u = flat(local) - g
        norm = np.linalg.norm(u)
        total += wi * u * min(1.0, clip / norm if norm > 0 else 1.0)
    return g + total / w.sum()


def main():
    cmd = sys.argv[1]
    if cmd == "aggregate":
        global_dir, out, clip, weights, *locals_ = sys.argv[2:]
        want = reference(global_dir, float(clip), weights, locals_)
        got = flat(out)
        print(json.dumps({"max_abs_diff": float(np.max(np.abs(got - want))), "elements": int(got.size)}))
    elif cmd == "residual":
        global_dir, out, noisy, clip, weights, *locals_ = sys.argv[2:]
        want = reference(global_dir, float(clip), weights, locals_)
        r = flat(noisy) - want
        print(json.dumps({"std": float(r.std()), "mean": float(r.mean()), "elements": int(r.size)}))
    elif cmd == "epsilon":
        import dp_accounting

        z, rounds, delta = float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        accountant = dp_accounting.rdp.RdpAccountant()
        event = dp_accounting.PoissonSampledDpEvent(1.0, dp_accounting.GaussianDpEvent(z))
        accountant.compose(event, rounds)
        print(json.dumps({"epsilon": accountant.get_epsilon(delta)}))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
