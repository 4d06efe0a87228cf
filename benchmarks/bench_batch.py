"""The fan-out of cross-validation fits (issue 18): `bayeskern run benchmarks/cv_400.toml` in-process, --workers 1, --workers 2.

4 candidate kernels × 5 folds on 400 points = 20 EB fits (3 starts each). Each variant is a whole process (import,
the 4 full-data fits, the 20 cross-validation fits, the report), timed from outside, variants alternated in each
round; medians reported, with the ratio in-process / --workers 2 pair by pair, the per-task overhead
((--workers 1) − in-process) / 20, and a check that every variant's cross-validation table in summary.json is identical.

    .venv/bin/python benchmarks/bench_batch.py --rounds 3
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = Path(__file__).with_name("cv_400.toml")
VARIANTS = {"in-process": [], "--workers 1": ["--workers", "1"], "--workers 2": ["--workers", "2"]}


def timed(flags: list, out: Path) -> tuple[float, dict]:
    command = [str(Path(sys.executable).with_name("bayeskern")), "run", str(SPEC), "--out", str(out), *flags]
    started = time.perf_counter()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, json.loads((out / "summary.json").read_text())["cross_validation"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seconds = {name: [] for name in VARIANTS}
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, flags in VARIANTS.items():
                wall, table = timed(flags, Path(tmp) / f"{r}-{name.strip('-').replace(' ', '')}")
                seconds[name].append(wall)
                tables.append(table)
                print(f"round {r + 1}: {name:12s} {wall:6.1f} s", flush=True)
    median = {name: statistics.median(v) for name, v in seconds.items()}
    ratios = [a / b for a, b in zip(seconds["in-process"], seconds["--workers 2"])]
    print("median whole-process seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in median.items()))
    print(f"speed-up of --workers 2 over in-process, pair by pair: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); goal ≥ 1.6")
    print(f"per-task overhead of the cluster (--workers 1 minus in-process, over 20 tasks): "
          f"{(median['--workers 1'] - median['in-process']) / 20:.2f} s")
    print(f"cross-validation tables identical in all {len(tables)} runs: {all(t == tables[0] for t in tables)}")


if __name__ == "__main__":
    main()
