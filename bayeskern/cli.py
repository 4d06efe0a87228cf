"""The `bayeskern` command: run, check and list the model specs of models/."""

import argparse
import sys
from pathlib import Path

from bayeskern import gp, spec as specs
from bayeskern.report import gp_fit_files, write_atomically

__all__ = ["main"]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(path, out=None, seed=None) -> Path:
    """Run one spec and write its report folder (reports/<name>/ unless `out` is given)."""
    spec = specs.load(path)
    X, t = spec.load_data(seed)
    _say(f"[bayeskern] {spec.name}: {len(t)} observations, {len(spec.kernels)} candidate kernel(s)")
    candidates, posteriors = [], []
    for text in spec.kernels:  # one factorisation per candidate; the grid prediction is cheap beside it
        post = gp.posterior(specs.parse_kernel(text), X, t, sigma=spec.sigma, Xnew=spec.grid[:, None],
                            include_noise=spec.include_noise)
        candidates.append({"kernel": text, "log_marginal_likelihood": post.log_marginal_likelihood})
        posteriors.append(post)
        _say(f"[bayeskern]   log p(t|X) = {post.log_marginal_likelihood:10.4f}   {text}")
    i_best = max(range(len(candidates)), key=lambda i: candidates[i]["log_marginal_likelihood"])
    best, post = candidates[i_best], posteriors[i_best]
    folder = write_atomically(out or Path("reports") / spec.name, gp_fit_files(spec, X, t, candidates, best, post))
    _say(f"[bayeskern] wrote {folder}/ (summary.json, report.md, predictions.csv)")
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bayeskern", description="Bayesian kernel methods on PyMC.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a model spec and write its report")
    p_run.add_argument("spec", help="path to a models/*.toml spec")
    p_run.add_argument("--out", help="report folder (default: reports/<name>/)")
    p_run.add_argument("--seed", type=int, help="override the data seed")
    p_check = sub.add_parser("check", help="validate a model spec without running it")
    p_check.add_argument("spec")
    p_list = sub.add_parser("list", help="list the specs in a folder")
    p_list.add_argument("folder", nargs="?", default="models")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            run(args.spec, args.out, args.seed)
        elif args.command == "check":
            s = specs.load(args.spec)
            print(f"{args.spec}: ok ({s.name}, {len(s.kernels)} kernel(s))")
        else:
            for path in sorted(Path(args.folder).glob("*.toml")):
                try:
                    s = specs.load(path)
                    print(f"{path}\t{s.name}\t{s.description}")
                except specs.SpecError as err:
                    print(f"{path}\tINVALID\t{err.reason}")
    except specs.SpecError as err:
        print(f"bayeskern: error: {err}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as err:
        print(f"bayeskern: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
