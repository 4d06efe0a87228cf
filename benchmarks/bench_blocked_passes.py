"""Elementwise passes over the pairs of points, whole arrays against cache-sized blocks: the measure behind a next design.

One evaluation of a multi-component kernel in the numpy mode makes ~55 numpy passes over vectors of the n(n+1)/2 pairs
(1 MB at n = 500, 16 MB at n = 2000), each a stream through memory. The same passes over blocks of the pairs keep
every intermediate in a core's cache. This stand-in for an evaluation — four stationary components, their sum and the
sums Σ W·∂K/∂θ of the gradient, on given r² and W (no kernel graph, no likelihood) — times both in one process, medians
of `--repeats` rounds of 5 calls. The blocked sums add per-block partial sums: the same terms in another order.

"whole" lets numpy allocate every intermediate, a new array of the pairs' length each (its pages faulted in at every
call); "whole, kept" writes them into arrays kept from call to call, as the package's numpy mode does inside
`reused_arrays` (an empirical-Bayes fit), and the blocks write theirs into the same kept arrays. The package's case is
"whole, kept": session 39 compared the blocks with "whole" and overstated their gain (BENCHMARKS.md, session 40).

    .venv/bin/python benchmarks/bench_blocked_passes.py --pairs 125250 2001000 [--blocks 16384 65536 262144]
"""

import argparse
import statistics
import time

import numpy as np

#: (c, a) of four components a·exp(−½·c·r²): a trend, a season, a wiggle, a short one
COMPONENTS = ((0.01, 1.0), (0.5, 2.0), (2.0, 0.5), (8.0, 0.1))


def passes(r2: np.ndarray, W: np.ndarray, out: np.ndarray) -> list:
    """K = Σ a·exp(−½·c·r²) into `out`, and for each component Σ W·e and Σ W·e·(c·r²) (the gradient's contractions)."""
    K, sums = np.zeros_like(r2), []
    for c, a in COMPONENTS:
        t = r2 * c
        e = np.exp(-0.5 * t)
        K += a * e
        we = W * e
        sums += [we.sum(), (we * t).sum()]
    out[:] = K
    return sums


def whole(r2, W):
    return passes(r2, W, np.empty_like(r2))


def passes_into(r2: np.ndarray, W: np.ndarray, out: np.ndarray, kept: list) -> list:
    """`passes`, K accumulated in `out` and every intermediate written into `kept` (three arrays at least as long as r2)."""
    t, e, term = (k[: r2.size] for k in kept)
    out.fill(0.0)
    sums = []
    for c, a in COMPONENTS:
        np.multiply(r2, c, out=t)
        np.multiply(t, -0.5, out=e)
        np.exp(e, out=e)
        np.multiply(e, a, out=term)
        np.add(out, term, out=out)
        np.multiply(W, e, out=term)
        sums.append(term.sum())
        np.multiply(term, t, out=term)
        sums.append(term.sum())
    return sums


def whole_kept(r2, W, kept: list):
    """Whole vectors, written into arrays kept from call to call (`kept`: three of the pairs' length, and K's)."""
    return passes_into(r2, W, kept[3], kept[:3])


def blocked(r2, W, block: int, kept: list):
    """Blocks of `block` pairs, each block's intermediates in the same three arrays of `kept` (K into its slice of kept[3])."""
    total = np.zeros(2 * len(COMPONENTS))
    for start in range(0, r2.size, block):
        stop = start + block
        total += passes_into(r2[start:stop], W[start:stop], kept[3][start:stop], kept[:3])
    return list(total)


def seconds(fn, calls: int = 5) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[125_250, 2_001_000])  # n = 500 and 2000: n(n+1)/2
    parser.add_argument("--blocks", type=int, nargs="+", default=[16_384, 65_536, 262_144])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| pairs | whole (ms) | whole, kept (ms) | " + " | ".join(f"blocks of {b} (ms)" for b in args.blocks)
          + " | whole / best block | whole, kept / best block |")
    print("|---|---|---|" + "---|" * len(args.blocks) + "---|---|")
    for size in args.pairs:
        rng = np.random.default_rng(0)
        r2, W = rng.uniform(0.0, 30.0, size), rng.standard_normal(size)
        kept = [np.empty_like(r2) for _ in range(4)]
        np.testing.assert_allclose(blocked(r2, W, args.blocks[0], kept), whole(r2, W), rtol=1e-10)  # the same sums
        np.testing.assert_allclose(whole_kept(r2, W, kept), whole(r2, W), rtol=1e-10)
        times = {label: [] for label in ["whole", "kept", *args.blocks]}
        for _ in range(args.repeats):  # alternated, round by round
            times["whole"].append(seconds(lambda: whole(r2, W)))
            times["kept"].append(seconds(lambda: whole_kept(r2, W, kept)))
            for b in args.blocks:
                times[b].append(seconds(lambda: blocked(r2, W, b, kept)))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        best = min(med[b] for b in args.blocks)
        print(f"| {size} | {med['whole']:.1f} | {med['kept']:.1f} | " + " | ".join(f"{med[b]:.1f}" for b in args.blocks)
              + f" | {med['whole'] / best:.2f} | {med['kept'] / best:.2f} |")


if __name__ == "__main__":
    main()
