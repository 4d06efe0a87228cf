"""The `bayeskern` command: run, check and list the model specs of models/."""

import argparse
import sys
import time
from pathlib import Path

from bayeskern import spec as specs

__all__ = ["main"]


def _say(message: str) -> None:
    print(f"[bayeskern] {message}", file=sys.stderr, flush=True)


def run(path, out=None, seed=None) -> Path:
    """Run one spec and write its report folder (reports/<name>/ unless `out` is given)."""
    from bayeskern.analysis import run_analysis  # the heavy imports only for the command that needs them
    from bayeskern.report import write_report

    started = time.perf_counter()
    spec = specs.load(path)
    analysis = run_analysis(spec, seed=seed, say=_say, progressbar=sys.stderr.isatty())
    folder = write_report(analysis, Path(out) if out else Path("reports") / spec.name, say=_say)
    _say(f"wrote {folder}/ (index.html, report.md, figures/, results.nc, summary.json) in {time.perf_counter() - started:.0f} s")
    return folder


def check(path) -> specs.Spec:
    """Validate a spec without fitting: the file, the data, and every candidate's PyMC model."""
    spec = specs.load(path)
    data = spec.load_data()
    for text in spec.candidates:
        spec.model(text, data)
    return spec


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bayeskern", description="Bayesian kernel methods on PyMC: run the analyses of models/*.toml.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a model spec and write its report", description="Fit the spec's models and write the report folder.")
    p_run.add_argument("spec", help="path to a models/*.toml spec")
    p_run.add_argument("--out", help="report folder (default: reports/<name>/)")
    p_run.add_argument("--seed", type=int, help="seed of the fits and draws (default: the spec's seed)")
    p_check = sub.add_parser("check", help="validate a model spec without running it", description="Validate a spec: its keys, data and models.")
    p_check.add_argument("spec", help="path to a models/*.toml spec")
    p_list = sub.add_parser("list", help="list the specs in a folder", description="List the specs in a folder with their descriptions.")
    p_list.add_argument("folder", nargs="?", default="models", help="folder of specs (default: models)")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            run(args.spec, args.out, args.seed)
        elif args.command == "check":
            s = check(args.spec)
            print(f"{args.spec}: ok ({s.name}: {s.kind}, {len(s.candidates)} candidate(s))")
        else:
            folder = Path(args.folder)
            if not folder.is_dir():
                raise specs.SpecError(folder, "(folder)", "no such folder")
            for path in sorted(folder.glob("*.toml")):
                try:
                    s = specs.load(path)
                    print(f"{path}\t{s.name}\t{s.description}")
                except specs.SpecError as err:
                    print(f"{path}\tINVALID\t{err.key}: {err.reason}")
    except specs.SpecError as err:
        print(f"bayeskern: error: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError, RuntimeError) as err:
        print(f"bayeskern: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bayeskern: interrupted; the previous report is untouched", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
