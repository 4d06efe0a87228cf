"""The fan-out of cross-validation fits (issue 18): `bayeskern run benchmarks/cv_400.toml` in-process, --workers 1, --workers 2.

4 candidate kernels × 5 folds on 400 points = 20 EB fits (3 starts each). Each variant is a whole process (import,
the 4 full-data fits, the 20 cross-validation fits, the report), timed from outside, variants alternated in each
round; medians reported, with the ratio in-process / --workers 2 pair by pair, the per-task overhead
((--workers 1) − in-process) / (number of fold fits), and a check that every variant's cross-validation table in summary.json is identical.

    .venv/bin/python benchmarks/bench_batch.py --rounds 3

With `--specs N`, N copies of that spec (their own names and seeds) in one `bayeskern run`: on a cluster each spec is one
task, whose fold fits are tasks of their own; the tables are then compared spec by spec.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = Path(__file__).resolve().with_name("cv_400.toml")
VARIANTS = {"in-process": [], "--workers 1": ["--workers", "1"], "--workers 2": ["--workers", "2"]}


def timed(flags: list, out: Path, specs: list[Path]) -> tuple[float, list]:
    """One whole `bayeskern run` of `specs`; (seconds, the cross-validation table of each spec)."""
    out.mkdir()
    command = [str(Path(sys.executable).with_name("bayeskern")), "run", *map(str, specs), *flags]
    started = time.perf_counter()
    subprocess.run(command, check=True, stderr=subprocess.DEVNULL, cwd=out)  # reports go to out/reports/<name>/
    wall = time.perf_counter() - started
    return wall, [json.loads((out / "reports" / spec.stem / "summary.json").read_text())["cross_validation"] for spec in specs]


def copies(n: int, folder: Path) -> list[Path]:
    """The benchmark spec itself, or n copies of it under their own names and seeds."""
    if n == 1:
        return [SPEC]
    text = SPEC.read_text()
    paths = [folder / f"cv_400_{k}.toml" for k in range(n)]
    for k, path in enumerate(paths):
        path.write_text(text.replace('name = "cv_400"', f'name = "cv_400_{k}"').replace("seed = 0", f"seed = {k}", 1))
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--specs", type=int, default=1, help="how many copies of the spec one run gets")
    args = parser.parse_args()
    seconds = {name: [] for name in VARIANTS}
    tables = []
    with tempfile.TemporaryDirectory() as tmp:
        specs = copies(args.specs, Path(tmp))
        for r in range(args.rounds):
            for name, flags in VARIANTS.items():
                wall, table = timed(flags, Path(tmp) / f"{r}-{name.strip('-').replace(' ', '')}", specs)
                seconds[name].append(wall)
                tables.append(table)
                print(f"round {r + 1}: {name:12s} {wall:6.1f} s", flush=True)
    median = {name: statistics.median(v) for name, v in seconds.items()}
    ratios = [a / b for a, b in zip(seconds["in-process"], seconds["--workers 2"])]
    n_tasks = 20 * args.specs
    print(f"{args.specs} spec(s), {n_tasks} fold fits; median whole-process seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in median.items()))
    print(f"speed-up of --workers 2 over in-process, pair by pair: median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); goal ≥ 1.6")
    extra = median["--workers 1"] - median["in-process"]
    if args.specs == 1:
        print(f"per-task overhead of the cluster (--workers 1 minus in-process, over {n_tasks} fold fits): {extra / n_tasks:.2f} s")
    else:  # one worker runs a spec task and its fold fits in turn: the fits no longer overlap the spec's own work
        print(f"--workers 1 minus in-process: {extra:.1f} s (cluster overhead and, with several specs on one worker, lost overlap)")
    print(f"cross-validation tables identical in all {len(tables)} runs: {all(t == tables[0] for t in tables)}")


if __name__ == "__main__":
    main()
