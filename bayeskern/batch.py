"""Many fits at once: specs and their cross-validation fits as tasks, in this process or on a Dask cluster.

With several specs and a cluster, each spec's analysis is one task, which sends its own cross-validation fits to the
cluster as tasks of their own; its report's files come back here and are written here, each as its task finishes. A
spec's full-data fits then run with one BLAS thread, as its fold fits always do: a refitting cross-validation is the same
to the last bit as in this process, while the full-data optimum — and with it the folds of `refit = false`, which start
from it — may move in its last digits, more for a hyperparameter at the edge of a flat evidence (OpenBLAS's results
depend on its thread count; measured on a 30-point fit: parameters 5e-9 apart, log p equal to 1e-15).
Each (candidate, fold) fit is one task (with refit = false, one task per candidate: its folds cost one factorisation
each). A task receives the spec, the data arrays and the fold's rows — never a compiled function (Numba's do not
pickle) — and compiles on its worker, which keeps the compiled graph for the next fold of the same structure. Its
seed derives from the run's seed and the task's key alone (`bayeskern.cv.task_seed`), and every task runs with one
BLAS thread wherever it runs, so the numbers do not depend on the number of workers, their order or a restart.
Dask reschedules the tasks of a worker that dies; a task that raises is reported in its candidate's row.
"""

import contextlib
import logging
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from threadpoolctl import threadpool_limits

from bayeskern._ctrl_c import ctrl_c_remembered, raise_a_lost_ctrl_c

__all__ = ["WORKER_CONFIG", "WORKER_PRELOAD", "connect", "local_cluster", "run", "run_tasks", "submit_tasks"]

#: Dask settings for bayeskern's workers, each measured on one cross-validation fit of benchmarks/cv_400.toml (1.1 s in a
#: plain process): the statistical profiler samples the task's deep PyTensor stacks every 10 ms (2.0–4.5 s with it on);
#: the Nanny's default MALLOC_TRIM_THRESHOLD_=65536 makes glibc hand memory back at once, and every numpy array of the
#: fit is then page-faulted anew (1.8–2.2 s with it); one BLAS thread per worker process, set before it starts
WORKER_CONFIG = {"distributed.worker.profile.enabled": False,
                 "distributed.nanny.pre-spawn-environ": {"OMP_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1, "MKL_NUM_THREADS": 1}}

#: the preload that gives each Dask worker process its own PyTensor compile directory (see `bayeskern._dask_worker`)
WORKER_PRELOAD = str(Path(__file__).with_name("_dask_worker.py"))


def _one_blas_thread(fn: Callable, *args):
    with threadpool_limits(limits=1):
        return fn(*args)


def run_tasks(fn: Callable, tasks: list[tuple], client=None, say: Callable[[str], None] | None = None) -> list:
    """[fn(*args) for args in tasks], each a result or the exception it raised, computed here or on `client`'s workers.

    Progress goes to `say`: tasks done of the total and, while some run on a cluster, the longest-running one.
    """
    return submit_tasks(fn, tasks, client, say)()


def submit_tasks(fn: Callable, tasks: list[tuple], client=None, say: Callable[[str], None] | None = None) -> Callable[[], list]:
    """`run_tasks` in two steps: the tasks go to `client`'s workers now, and the function returned waits for their results,
    so this process can do other work meanwhile. Without a client the tasks run here, when that function is called."""
    say = say or (lambda message: None)
    if client is None:
        return lambda: _here(fn, tasks, say)
    from distributed import as_completed

    run_id = uuid.uuid4().hex[:8]
    keys = [f"bayeskern-{run_id}-{i}" for i in range(len(tasks))]
    futures = [client.submit(_one_blas_thread, fn, *args, key=key, pure=False) for key, args in zip(keys, tasks)]
    started = time.monotonic()

    def collect() -> list:
        with _seceded():
            for done, _ in enumerate(as_completed(futures), start=1):
                raise_a_lost_ctrl_c()
                running = [k for k, f in zip(keys, futures) if not f.done()]
                say(f"  tasks done: {done}/{len(tasks)}" + (f"; running for {time.monotonic() - started:.0f} s: {running[0]}" if running else ""))
        return [_result(f) for f in futures]
    return collect


@contextlib.contextmanager
def _seceded() -> Iterator:
    """Inside a task on a worker (a spec's analysis waiting for its fold fits): the task's thread leaves the worker's
    pool while it waits, so that the worker can run the fits it waits for, and rejoins it after; elsewhere nothing."""
    from distributed import get_worker, rejoin, secede

    try:
        get_worker()
    except ValueError:  # not in a task
        yield
        return
    secede()
    try:
        yield
    finally:
        rejoin()


def _here(fn: Callable, tasks: list[tuple], say: Callable) -> list:
    out = []
    for i, args in enumerate(tasks):
        try:
            out.append(_one_blas_thread(fn, *args))
        except Exception as err:  # noqa: BLE001 — a failing task is a result: its row reports it
            out.append(err)
        say(f"  tasks done: {i + 1}/{len(tasks)}")
    return out


def _result(future):
    try:
        return future.result()
    except Exception as err:  # noqa: BLE001 — the task's error (or KilledWorker after repeated deaths) for its row
        return err


@contextlib.contextmanager
def local_cluster(workers: int) -> Iterator:
    """A Dask cluster of `workers` local processes, one thread each, each with its own PyTensor compile directory: a slot
    claimed here for the cluster's life (see `bayeskern._dask_worker`) and set in the worker's environment, which a
    restarted worker keeps. A context manager: the cluster is closed and the slots freed on the way out."""
    import dask
    from distributed import Nanny, Scheduler, SpecCluster

    dask.config.set(WORKER_CONFIG)  # the Nannies read it before spawning; the workers receive it
    worker = _worker_module()
    slots, locks = worker.claim_slots(workers)
    try:
        # the workers log only what is CRITICAL: the run reports every task's error itself (in its row, or on stderr), and
        # at ERROR a worker also prints shutdown races as tracebacks (a heartbeat to the scheduler a Ctrl-C just closed)
        spec = {f"bayeskern-{i}": {"cls": Nanny, "options": {"nthreads": 1, "host": "127.0.0.1", "silence_logs": logging.CRITICAL,
                                                             "preload": [WORKER_PRELOAD], "env": {
            "BAYESKERN_WORKER_SLOT": str(slot), "PYTENSOR_FLAGS": worker.pytensor_flags(slot)}}} for i, slot in enumerate(slots)}
        with SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": None}},
                         silence_logs=40, name="bayeskern") as cluster:
            yield cluster
    finally:
        for lock in locks:
            lock.close()  # closing the file drops its lock


def _worker_module():
    import bayeskern._dask_worker as worker

    return worker


@contextlib.contextmanager
def connect(workers: int | None = None, scheduler: str | None = None, say: Callable[[str], None] | None = None) -> Iterator:
    """A `dask.distributed.Client` of a local cluster of `workers` processes started here, or of the cluster at `scheduler`;
    None (everything in this process) without either. What is started here is closed on the way out, Ctrl-C included."""
    if workers is None and scheduler is None:
        yield None
        return
    from distributed import Client

    with contextlib.ExitStack() as stack:
        stack.enter_context(ctrl_c_remembered())
        cluster = stack.enter_context(local_cluster(workers)) if workers is not None else scheduler
        client = stack.enter_context(Client(cluster))
        if say is not None:
            say(f"Dask: {len(client.scheduler_info()['workers'])} worker(s) at {client.scheduler.address}")
        yield client


def run(specs: list, client=None, seed: int | None = None, out=None, where: dict | None = None) -> list[Path]:
    """`bayeskern run SPEC...` from Python: each spec's analysis and report, its cross-validation fits on `client`'s
    workers (a `dask.distributed.Client`) or here without one; with several specs and a client, each spec is a task too.
    `specs`: paths of spec files. `out`: the report folder of a single spec (else reports/<name>/). Returns the report
    folders; if some candidate's cross-validation failed, `bayeskern.cv.CrossValidationFailed` names every such
    candidate after all the specs ran.
    """
    if out is not None and len(specs) > 1:
        raise ValueError("out names the report folder of one spec; with several, each report goes to reports/<name>/")
    if len(specs) > 1:
        check_specs(specs)
    return run_checked(specs, client, seed, out, where)


def run_checked(specs: list, client=None, seed: int | None = None, out=None, where: dict | None = None) -> list[Path]:
    """`run` of specs already put through `check_specs` (several) — what the command line calls once it has checked
    them before starting a cluster."""
    from bayeskern import cli
    from bayeskern.cv import CrossValidationFailed

    if len(specs) > 1:
        prepared = [cli.prepare(path, None, seed) for path in specs]  # each one's report folder and the seed
        if client is not None:
            return _specs_as_tasks(prepared, client, seed, where)
    tasks = None if client is None else (lambda fn, args: submit_tasks(fn, args, client, cli._say))
    folders, errors, failed = [], [], []
    for path in specs:
        try:
            # with a cluster, this process fits while its tasks run: one BLAS thread, not a second pool competing for the
            # cores (a limit per spec: threadpool_limits applies when made and restores on exit, once)
            with threadpool_limits(limits=1) if client is not None else contextlib.nullcontext():
                folders.append(cli.run(path, out, seed, where, tasks))
            _written(where, folders[-1])
        except CrossValidationFailed as err:  # (its report is written, the error in its row)
            failed.append(str(err))
            _written(where, where["folder"] if where and "folder" in where else None)
            if len(specs) > 1:
                cli._say(str(err))
        except Exception as err:  # noqa: BLE001 — one spec's failure does not stop the others, as on a cluster
            if len(specs) == 1:
                raise
            cli._say(f"{path}: failed: {cli._one_line(err)}")
            errors.append(_named(path, err))
    if errors:
        raise errors[0]  # the first failed spec in the order given, named
    if failed:
        raise CrossValidationFailed("; ".join(failed))
    return folders


def check_specs(paths: list) -> None:
    """Every spec checked as `bayeskern check` does (its data, its models) and named apart, before anything runs; one
    SpecError naming every bad spec (the first's key and reason, then each other's)."""
    from bayeskern import cli
    from bayeskern.spec import SpecError

    checked, bad = [], []
    for path in paths:
        try:
            checked.append(cli.check(path))
        except SpecError as err:
            bad.append(err)
    if bad:
        first, others = bad[0], "; ".join(str(err) for err in bad[1:])
        raise SpecError(first.path, first.key, first.reason + (f" (also: {others})" if others else ""))
    _distinct_names(checked)


def _named(what, err: Exception) -> RuntimeError:
    """A spec's runtime failure, its one line prefixed by the spec (the error a multi-spec run ends with)."""
    from bayeskern import cli

    kind = "out of memory: " if isinstance(err, MemoryError) else "" if isinstance(err, ValueError | RuntimeError | OSError) else f"{type(err).__name__}: "
    named = RuntimeError(f"{what}: {kind}{cli._one_line(err)}")
    named.__cause__ = err
    return named


def _written(where: dict | None, folder) -> None:
    """Remember a report written by a multi-spec run (what a Ctrl-C message lists)."""
    if where is not None and folder is not None:
        where.setdefault("written", []).append(str(folder))


def _specs_as_tasks(prepared: list, client, seed: int | None, where: dict | None = None) -> list[Path]:
    """Every spec's analysis as one task on `client`'s workers; each report written here as soon as its task is done.
    `prepared`: (spec, report folder) of each, checked (`cli.prepare`) before anything is sent. A spec whose task raised
    does not stop the others, and the first such error is raised once all are done (a failed cross-validation, after
    every error of its kind)."""
    from distributed import as_completed

    from bayeskern import cli
    from bayeskern.cv import CrossValidationFailed
    from bayeskern.report import write_atomically

    run_id = uuid.uuid4().hex[:8]
    futures = {client.submit(_one_blas_thread, _analyse_spec, spec, spec.load_data(), seed, key=f"bayeskern-{run_id}-spec-{i}",
                             pure=False): i for i, (spec, _) in enumerate(prepared)}
    cli._say(f"{len(prepared)} specs sent to the cluster, one task each")
    started = time.monotonic()
    folders, errors, failed = [None] * len(prepared), {}, []
    for done, future in enumerate(as_completed(futures), start=1):
        raise_a_lost_ctrl_c()
        i = futures[future]
        spec, folder = prepared[i]
        try:
            files, cv_failure = future.result()
        except Exception as err:  # noqa: BLE001 — one spec's failure does not stop the others
            cli._say(f"{spec.name}: failed: {cli._one_line(err)}")
            errors[i] = _named(spec.path, err)
            continue
        folders[i] = write_atomically(folder, files)
        _written(where, folder)
        running = [prepared[j][0].name for f, j in futures.items() if not f.done()]
        cli._say(f"specs done: {done}/{len(prepared)}; wrote {folder}/"
                 + (f"; running for {time.monotonic() - started:.0f} s: {running[0]}" if running else ""))
        if cv_failure is not None:
            failed.append(cv_failure)
            cli._say(str(cv_failure))
    if errors:
        raise errors[min(errors)]  # the first failed spec in the order given
    if failed:
        raise CrossValidationFailed("; ".join(failed))
    return folders


def _distinct_names(specs: list) -> None:
    """A SpecError (a bad spec: exit 2 on the command line) if two specs share a name: both reports would go to reports/<name>/."""
    from bayeskern.spec import SpecError

    seen = {}
    for spec in specs:
        if spec.name in seen:
            if Path(seen[spec.name]).resolve() == Path(spec.path).resolve():
                raise SpecError(spec.path, "(file)", "given twice on the command line")
            raise SpecError(spec.path, "name", f"{seen[spec.name]} and {spec.path} are both named {spec.name!r} (a spec without "
                            f"name is named after its file): their reports would both go to reports/{spec.name}/; give one another name")
        seen[spec.name] = spec.path


#: one spec's analysis at a time in a worker process: it records warnings and limits BLAS for the whole process, and
#: while it waits for its fold fits (out of the worker's thread pool) the worker may start another spec's task
_ONE_SPEC_AT_A_TIME = threading.Lock()


def _analyse_spec(spec, data, seed: int | None) -> tuple[dict, str | None]:
    """One spec's task on a worker: its analysis, its fold fits sent to the same cluster; (the report's files as bytes,
    the message of its failed cross-validation or None)."""
    from distributed import get_client

    from bayeskern.analysis import run_analysis
    from bayeskern.cv import CrossValidationFailed, check_cv
    from bayeskern.report import report_files

    with _seceded():  # waiting for this worker's previous spec holds no thread its fold fits need
        _ONE_SPEC_AT_A_TIME.acquire()
    try:
        client = get_client()
        analysis = run_analysis(spec, seed, tasks=lambda fn, args: submit_tasks(fn, args, client), data=data)
        try:
            check_cv(analysis)
            failure = None
        except CrossValidationFailed as err:
            failure = str(err)
        return _as_bytes(report_files(analysis)), failure
    finally:
        _ONE_SPEC_AT_A_TIME.release()


def _as_bytes(files: dict) -> dict:
    """`files` (name → text, bytes or a function that writes the given path) with every function's file read back as
    bytes: what a task on another machine can send back."""
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, content in files.items():
            if callable(content):
                path = Path(scratch) / Path(name).name
                content(path)
                content = path.read_bytes()
            out[name] = content
    return out
