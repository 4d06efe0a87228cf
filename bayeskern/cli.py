"""The `bayeskern` command: run, check and list the model specs of models/."""

import argparse
import sys
import time
from pathlib import Path

__all__ = ["main"]


class UsageError(Exception):
    """A bad command-line value (exit 2, like a bad spec)."""


def _say(message: str) -> None:
    print(f"[bayeskern] {message}", file=sys.stderr, flush=True)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _out(text: str) -> str:
    """--out: a folder's path, not empty (an empty one would silently mean the default, reports/<name>/)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must be a folder's path, got an empty one (leave --out out for reports/<name>/)")
    return text


def _seed(text: str) -> int:
    """--seed: a whole number in [0, MAX_SEED]."""
    from bayeskern import spec as specs

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 0 <= value <= specs.MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**63 - 1], got {text}")
    return value


def _workers(text: str) -> int:
    """--workers: a whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def report_folder(spec, out=None) -> Path:
    """Where `run` writes the report of `spec`: `out`, or reports/<name>/."""
    return Path(out) if out else Path("reports") / spec.name


def prepare(path, out=None, seed=None) -> tuple:
    """(spec, report folder) of the spec at `path`, both checked as far as they can be before fitting: the spec (as
    `check` does, when the models are built), the seed and the report folder (a UsageError naming the bad value)."""
    from bayeskern import spec as specs
    from bayeskern.report.writer import check_target

    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= specs.MAX_SEED):
        raise UsageError(f"--seed must be a whole number in [0, 2**63 - 1], got {seed!r}")
    spec = specs.load(path)
    folder = report_folder(spec, out)
    try:
        check_target(folder, say=_say)
    except ValueError as err:
        reason = _one_line(err).removeprefix(f"{folder} ")
        hint = "" if out else " (the default report folder; choose another with --out)"
        raise UsageError(f"{'--out ' if out else ''}{folder}: {reason}{hint}") from None
    return spec, folder


def run(path, out=None, seed=None, where: dict | None = None, tasks=None) -> Path:
    """Run one spec and write its report folder (reports/<name>/ unless `out` is given).

    Everything that can be checked before fitting is (`prepare`). `where` receives the report folder once it is known.
    `tasks`: how the cross-validation fits run (`bayeskern.batch.run_tasks` on a cluster; here if None).
    A cross-validation with a failed candidate raises `bayeskern.cv.CrossValidationFailed` after the report is written.
    """
    from bayeskern.analysis import run_analysis  # the heavy imports only for the command that needs them
    from bayeskern.report import write_report
    from bayeskern.cv import check_cv

    started = time.perf_counter()
    spec, folder = prepare(path, out, seed)
    if where is not None:
        where["folder"] = folder
    analysis = run_analysis(spec, seed=seed, say=_say, progressbar=sys.stderr.isatty(), tasks=tasks)
    folder = write_report(analysis, folder, say=_say)
    _say(f"wrote {folder}/ (index.html, report.md, figures/, results.nc, summary.json) in {time.perf_counter() - started:.0f} s")
    check_cv(analysis)  # the report is written, with the error in its row; the exit code says the run is not complete
    return folder


def run_all(paths: list, out, seed, where: dict, workers: int | None = None, scheduler: str | None = None) -> None:
    """`bayeskern run SPEC...`: `bayeskern.batch.run` with the cross-validation fits on a local cluster of `workers`
    processes, on the cluster at `scheduler`, or here; a cluster started here is stopped however the run ends."""
    from bayeskern import batch
    from bayeskern._ctrl_c import ctrl_c_remembered

    if out and len(paths) > 1:
        raise UsageError("--out names the report folder of one spec; with several, each report goes to reports/<name>/")
    if len(paths) > 1:
        batch.check_specs(paths)  # every bad spec named before a cluster is started
    with ctrl_c_remembered(), batch.connect(workers, scheduler, say=_say) as client:  # a Ctrl-C Python swallows still stops it
        batch.run_checked(paths, client, seed, out, where)


def check(path):
    """Validate a spec without fitting: the file, the data, and every candidate's PyMC model (shapes included)."""
    from bayeskern import spec as specs

    spec = specs.load(path)
    data = spec.load_data()
    for text in spec.candidates:
        spec.model(text, data)
    return spec


def list_specs(folder) -> None:
    """One line per *.toml in `folder`: path, name and description, or path, INVALID and the reason."""
    from bayeskern import spec as specs

    folder = Path(folder)
    if not folder.is_dir():
        raise specs.SpecError(folder, "(folder)", "no such folder")
    for path in sorted(folder.glob("*.toml")):
        try:
            s = specs.load(path)
            print(f"{path}\t{s.name}\t{s.description}", flush=True)
        except specs.SpecError as err:
            print(f"{path}\tINVALID\t{err.key}: {err.reason}", flush=True)
        except Exception as err:  # noqa: BLE001 — whatever is wrong with one file, the others are still listed
            print(f"{path}\tINVALID\t(file): {type(err).__name__}: {_one_line(err)}", flush=True)


def _parser() -> argparse.ArgumentParser:
    from bayeskern import __version__

    parser = argparse.ArgumentParser(prog="bayeskern", description="Bayesian kernel methods on PyMC: run the analyses of models/*.toml.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a model spec and write its report", description="Fit the spec's models and write the report folder.")
    p_run.add_argument("spec", nargs="+", help="path(s) to models/*.toml specs: run one after another, or each as a task on a cluster")
    p_run.add_argument("--out", type=_out, help="report folder of a single spec (default: reports/<name>/): a new name, an empty folder or an earlier report")
    where = p_run.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_workers, help="run the cross-validation fits on a local Dask cluster of N worker processes")
    where.add_argument("--scheduler", metavar="ADDRESS", help="run them on an existing Dask cluster (e.g. tcp://host:8786); its workers "
                                                           "need --preload bayeskern/_dask_worker.py (see the README)")
    p_run.add_argument("--seed", type=_seed, help="seed of the fits and draws, 0 ≤ N < 2**63 (default: the spec's seed)")
    p_check = sub.add_parser("check", help="validate a model spec without running it", description="Validate a spec: its keys, data and models.")
    p_check.add_argument("spec", help="path to a models/*.toml spec")
    p_list = sub.add_parser("list", help="list the specs in a folder", description="List the specs in a folder with their descriptions.")
    p_list.add_argument("folder", nargs="?", default="models", help="folder of specs (default: models)")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    where: dict = {}
    try:
        from bayeskern import spec as specs  # here, not at the top: a process that imports this module stays light
    except KeyboardInterrupt:  # Ctrl-C in the first second of a run lands here
        print("bayeskern: interrupted", file=sys.stderr)
        return 130
    try:
        if args.command == "run":
            run_all(args.spec, args.out, args.seed, where, args.workers, args.scheduler)
        elif args.command == "check":
            s = check(args.spec)
            print(f"{args.spec}: ok ({s.name}: {s.kind}, {len(s.candidates)} candidate(s))")
        else:
            list_specs(args.folder)
    except specs.SpecError as err:
        print(f"bayeskern: error: {err}", file=sys.stderr)
        return 2
    except UsageError as err:
        print(f"bayeskern: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except (ValueError, OSError, RuntimeError, MemoryError, ImportError) as err:
        print(f"bayeskern: error: {'out of memory: ' if isinstance(err, MemoryError) else ''}{_one_line(err)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:
        from bayeskern.report.writer import Interrupted  # standard library only

        if not isinstance(err, Interrupted) and args.command == "run" and len(args.spec) > 1 and "folder" not in where:
            written = f"reports written: {', '.join(where['written'])}; " if where.get("written") else "no report written; "
            print(f"bayeskern: interrupted; {written}every other spec's report folder holds what it held before", file=sys.stderr)
            return 130  # (several specs on a cluster, each written whole as its task ends)
        if not isinstance(err, Interrupted) and "folder" in where:  # stopped before the report was being written
            err = Interrupted.before_writing(where["folder"])
        # a run that knows its report folder (or was writing one) says which report is in it, and those written before it
        earlier = [f for f in where.get("written", []) if str(f) != str(where.get("folder"))]
        before = f"; reports written before it: {', '.join(earlier)}" if earlier else ""
        print(f"bayeskern: {err}{before}" if isinstance(err, Interrupted) else "bayeskern: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
