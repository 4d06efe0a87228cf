"""Empirical Bayes through `HSGP()` from a vague length-scale prior: its first fit runs on the prior's capped basis
(m = 600), where most spectral variances underflow — the case where BLAS once multiplied subnormal numbers.

Smooth data (sin(0.3x) + N(0, 0.1²), n = 2000 on [0, 10]), η ~ HalfNormal(3), ℓ ~ HalfNormal(10), σ ~ HalfNormal(1),
`empirical_bayes(restarts=2, seed=0)`. Each fit is timed in a child process (its first fit includes the basis, the
graph and, on a cold cache, the rewrites; the second is the same model built again in that process). With `--against
DIR` (another checkout of bayeskern, e.g. a `git worktree` of an older commit), the children alternate between this
checkout and DIR, and the ratio DIR / this is printed pair by pair.

    .venv/bin/python benchmarks/bench_hsgp_vague_prior.py --rounds 2 [--against /tmp/old]
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

FIT = """
import json, time, numpy as np, pymc as pm, bayeskern as bk
rng = np.random.default_rng(7)
u = np.sort(rng.uniform(0, 10, 2000)); y = np.sin(0.3 * u) + 0.1 * rng.standard_normal(2000)
out = []
for _ in range(2):
    with pm.Model() as model:
        eta, ell, s = pm.HalfNormal("eta", 3.0), pm.HalfNormal("ell", 10.0), pm.HalfNormal("s", 1.0)
        bk.gp.marginal_likelihood("y", u[:, None], y, eta * bk.kernels.RBF(ell), s, approx=bk.approx.HSGP())
    start = time.perf_counter(); eb = bk.fit.empirical_bayes(model, restarts=2, seed=0)
    out.append([time.perf_counter() - start, eb.n_evaluations, eb.log_marginal_likelihood])
print(json.dumps(out + [bk.__file__]))
"""


def fits(checkout: Path) -> list:
    """[seconds, evaluations, log p] of the two fits of one child process importing bayeskern from `checkout`."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}  # (and run there: `python -c` puts its working folder first)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", FIT], env=env, cwd=checkout, capture_output=True, text=True, check=True)
    *result, imported = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(imported).resolve().is_relative_to(checkout):
        raise RuntimeError(f"the child imported bayeskern from {imported}, not from {checkout}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", type=Path, default=None, help="another bayeskern checkout, timed alternately")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    sides = {"this": here} | ({"against": args.against.resolve()} if args.against else {})
    times = {name: [] for name in sides}
    for r in range(args.rounds):
        for name, checkout in sides.items():
            result = fits(checkout)
            times[name].append(result[1][0])  # the second fit: the model built again in a warm process
            print(f"round {r} {name:8s} first {result[0][0]:.2f} s, second {result[1][0]:.2f} s, {result[1][1]} evaluations, "
                  f"log p {result[1][2]:.6f}")
    for name, values in times.items():
        print(f"{name}: median of the second fits {np.median(values):.2f} s ({min(values):.2f}–{max(values):.2f})")
    if args.against:
        ratios = np.array(times["against"]) / np.array(times["this"])
        print(f"against / this, pair by pair: {np.median(ratios):.1f} ({ratios.min():.1f}–{ratios.max():.1f})")


if __name__ == "__main__":
    main()
