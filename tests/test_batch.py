"""The fan-out (bayeskern.batch, `bayeskern run --workers/--scheduler`): the cross-validation results are the same numbers
in this process, on a local Dask cluster, on a cluster started by hand, and when a worker is killed mid-run."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from bayeskern import _ctrl_c, batch, cli, spec

SPEC = """
name = "fanout"
seed = 2
[data]
source = "sinusoid"
n = 30
noise = 0.2
seed = 1
[priors]
ell = "Gamma(alpha=2.0, beta=8.0)"
amp = "HalfNormal(sigma=2.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = ["amp * RBF(lengthscale=ell)", "amp * RBF(lengthscale=ell) + Linear()", "amp * Matern32(lengthscale=ell)"]
sigma = "noise"
[fit.empirical_bayes]
restarts = 2
[cv]
folds = 4
"""


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("fanout") / "fanout.toml"
    path.write_text(SPEC)
    return path


@pytest.fixture(scope="module")
def in_process_folder(spec_path, tmp_path_factory) -> Path:
    """The report folder of the small spec, everything in this process."""
    out = tmp_path_factory.mktemp("here") / "report"
    batch.run([spec_path], out=out)
    return out


@pytest.fixture(scope="module")
def in_process(in_process_folder):
    """The cross-validation of summary.json, everything in this process."""
    return _cv(in_process_folder)


#: issue 18's spec: 4 candidate kernels × 5 folds on 400 points, 20 fits (the slow tests run it on every kind of cluster)
CV_400 = Path(__file__).parent.parent / "benchmarks" / "cv_400.toml"


@pytest.fixture(scope="module")
def in_process_400(tmp_path_factory):
    out = tmp_path_factory.mktemp("here400") / "report"
    batch.run([CV_400], out=out)
    return _cv(out)


def _cv(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())["cross_validation"]


def test_two_local_workers_give_the_same_numbers_as_one_process(spec_path, in_process, tmp_path):
    out = tmp_path / "report"
    assert cli.main(["run", str(spec_path), "--workers", "2", "--out", str(out)]) == 0
    assert _cv(out) == in_process  # to the last bit: same tasks, same seeds, one BLAS thread everywhere
    assert [row["error"] for row in in_process["table"]] == [None, None, None]


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")


def test_this_process_keeps_one_blas_thread_while_a_cluster_runs_its_spec(spec_path, monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "run", lambda path, *args: seen.append(_blas_threads()) or Path(path))
    default = _blas_threads()
    for _ in range(2):  # a limit per call: threadpool_limits applies when made and restores on its first exit only
        batch.run([spec_path], client=object())  # a stand-in client: cli.run never reaches it here
    batch.run([spec_path], client=None)
    assert seen == [1, 1, default] and _blas_threads() == default


def _numbers(folder: Path) -> dict:
    """summary.json without its timings and versions: every number the analysis computed."""
    def drop(x):
        if isinstance(x, dict):
            return {k: drop(v) for k, v in x.items() if "seconds" not in k and k != "versions"}
        return [drop(v) for v in x] if isinstance(x, list) else x
    return drop(json.loads((folder / "summary.json").read_text()))


#: how the optimiser got there, not where: they follow its path, which the last bits of the gradient steer
OPTIMISER_PATH = {"grad_norm", "predicted_gain", "n_evaluations", "iterations"}


def _mismatches(a, b, where="summary") -> list[str]:
    """Where `a` and `b` differ: structure, text and integers exactly; floats beyond rtol 1e-6 + atol 1e-9. The full-data
    fits of a spec's task run with one BLAS thread, here with the default two, and OpenBLAS's last bits depend on that:
    L-BFGS then stops at points ~5e-9 apart (relative) on this spec's flat optima; 1e-6 is 200× that and far below any
    printed digit. The optimiser's path (OPTIMISER_PATH) is left out."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [m for k in a if k not in OPTIMISER_PATH for m in _mismatches(a[k], b[k], f"{where}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: lengths {len(a)} != {len(b)}"]
        return [m for i, (x, y) in enumerate(zip(a, b)) for m in _mismatches(x, y, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if b == pytest.approx(a, rel=1e-6, abs=1e-9) else [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def test_several_specs_on_a_cluster_are_a_task_each_with_the_same_numbers_as_one_process(spec_path, in_process_folder, tmp_path,
                                                                                          monkeypatch, capsys):
    other = tmp_path / "other.toml"  # a second spec: another name, seed, candidate and folds (one candidate, 2 folds: quick)
    other.write_text(SPEC.replace('name = "fanout"', 'name = "fanout_other"').replace("seed = 2", "seed = 7", 1)
                     .replace('"amp * RBF(lengthscale=ell)", "amp * RBF(lengthscale=ell) + Linear()", ', "").replace("folds = 4", "folds = 2"))
    batch.run([other], out=tmp_path / "other_here")
    monkeypatch.chdir(tmp_path)  # the reports of several specs go to reports/<name>/
    capsys.readouterr()
    assert cli.main(["run", str(spec_path), str(other), "--workers", "2"]) == 0
    assert "2 specs sent to the cluster, one task each" in capsys.readouterr().err  # not one after another
    for here, there in [(in_process_folder, tmp_path / "reports" / "fanout"), (tmp_path / "other_here", tmp_path / "reports" / "fanout_other")]:
        assert _cv(there) == _cv(here)  # to the last bit: same tasks, same seeds, one BLAS thread everywhere
        assert _mismatches(_numbers(there), _numbers(here)) == []
        assert sorted(p.name for p in there.rglob("*")) == sorted(p.name for p in here.rglob("*"))  # the whole report came back


def _files(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_ctrl_c_during_the_fan_out_stops_the_cluster_and_keeps_the_previous_report(spec_path, in_process_folder, tmp_path):
    out = tmp_path / "report"
    shutil.copytree(in_process_folder, out)
    before = _files(out)
    command = [str(Path(sys.executable).with_name("bayeskern")), "run", str(spec_path), "--workers", "2", "--out", str(out)]
    # a session of its own, so that SIGINT can go to the whole process group, as a terminal's Ctrl-C does; and SIGINT's
    # default action, as in a terminal: an ignored SIGINT is inherited, and pytest-xdist's workers may ignore it
    run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    said = []
    for line in run.stderr:  # interrupt once the fold fits are on the cluster
        said.append(line)
        if "sent to the cluster" in line:
            break
    assert any("sent to the cluster" in line for line in said), said
    os.killpg(run.pid, signal.SIGINT)
    said += run.stderr.readlines()
    assert run.wait(60) == 130, said
    assert f"interrupted; the previous report in {out}/ is untouched" in said[-1]
    assert not any("Traceback" in line for line in said), "".join(said)  # the workers leave the interrupt to the run
    assert _files(out) == before
    deadline = time.monotonic() + 30  # the cluster's workers and their helpers: all gone (zombies await their reaper)
    while alive := [p for p in psutil.process_iter(["pid", "status"]) if _group(p) == run.pid and p.info["status"] != psutil.STATUS_ZOMBIE]:
        if time.monotonic() > deadline:
            pytest.fail(f"processes of the interrupted run are alive 30 s after it exited: {alive}")
        time.sleep(0.5)


def _group(process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_local_workers_give_the_same_numbers_on_the_400_point_spec(in_process_400, tmp_path):
    assert cli.main(["run", str(CV_400), "--workers", "2", "--out", str(tmp_path / "report")]) == 0
    assert _cv(tmp_path / "report") == in_process_400 and len(in_process_400["table"]) == 4


@pytest.mark.slow
def test_a_cluster_started_by_hand_gives_the_same_numbers(in_process_400, tmp_path):
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "2", "--nthreads", "1",
                               "--preload", batch.WORKER_PRELOAD, "--no-dashboard"], stderr=subprocess.DEVNULL)
    try:
        out = tmp_path / "report"
        assert cli.main(["run", str(CV_400), "--scheduler", address, "--out", str(out)]) == 0
        assert _cv(out) == in_process_400
    finally:
        for p in (worker, scheduler):
            p.terminate()
            p.wait(30)


@pytest.mark.slow
def test_a_worker_killed_mid_run_costs_only_time(in_process_400, tmp_path):
    from distributed import Client

    out = tmp_path / "report"
    with batch.local_cluster(2) as cluster, Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        killed = threading.Event()

        def kill_when_busy():  # SIGKILL one worker process once tasks are running on it
            while not killed.is_set():
                if any(client.processing().values()):
                    time.sleep(2.0)
                    os.kill(pids[0], signal.SIGKILL)
                    killed.set()
                time.sleep(0.2)

        threading.Thread(target=kill_when_busy, daemon=True).start()
        batch.run([CV_400], client=client, out=out)
        assert killed.is_set()
    assert _cv(out) == in_process_400


_FAILURE_SEEN = threading.Event()


def _stand_in_analysis(spec, data, seed):
    """A spec's task for an in-process cluster: the spec "broken" fails; any other finishes once the run has seen that."""
    if spec.name == "broken":
        raise ValueError("the kernel is not positive semi-definite")
    assert _FAILURE_SEEN.wait(30)
    return {"summary.json": "{}\n"}, None


def test_a_spec_that_fails_on_the_cluster_does_not_stop_the_others(spec_path, tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    broken = tmp_path / "broken.toml"
    broken.write_text(SPEC.replace('name = "fanout"', 'name = "broken"'))
    _FAILURE_SEEN.clear()
    said = []

    def say(message):
        said.append(message)
        if message.startswith("broken: failed"):
            _FAILURE_SEEN.set()
    monkeypatch.setattr(cli, "_say", say)
    monkeypatch.setattr(batch, "_analyse_spec", _stand_in_analysis)
    monkeypatch.chdir(tmp_path)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        with pytest.raises(RuntimeError, match=r"broken.toml: the kernel is not positive semi-definite"):  # named
            batch.run([broken, spec_path], client)
    assert (tmp_path / "reports" / "fanout" / "summary.json").read_text() == "{}\n"  # the other spec's report was written
    assert not (tmp_path / "reports" / "broken").exists()
    assert said[1:] == ["broken: failed: the kernel is not positive semi-definite", "specs done: 2/2; wrote reports/fanout/"], said


def test_a_spec_that_fails_in_this_process_does_not_stop_the_others_and_is_named(spec_path, tmp_path, monkeypatch):
    """Several specs without a cluster, as on one (a user trial: the first failure stopped the run, and its one line did
    not say which spec failed): the others run, and the run ends with the first failure, prefixed by its spec."""
    broken = tmp_path / "broken.toml"
    broken.write_text(SPEC.replace('name = "fanout"', 'name = "broken"'))
    ran = []

    def run(path, out, seed, where, tasks):
        ran.append(Path(path).name)
        if Path(path).name == "broken.toml":
            raise ValueError("MCMC chain(s) 1 of 2 never moved")
        return tmp_path / "reports" / Path(path).stem
    monkeypatch.setattr(cli, "run", run)
    monkeypatch.setattr(cli, "_say", lambda message: None)
    with pytest.raises(RuntimeError, match=r"broken.toml: MCMC chain\(s\) 1 of 2 never moved"):
        batch.run([broken, spec_path])
    assert ran == ["broken.toml", spec_path.name]


def test_several_specs_in_this_process_say_every_failure_and_what_was_written(monkeypatch, capsys):
    """A review: a cross-validation failure of one spec was not said when another spec then failed at run time; a
    Ctrl-C did not list the reports written before it; a MemoryError or KeyError lost what it was."""
    from bayeskern.cv import CrossValidationFailed

    def scenario(behaviour):
        def run(path, out, seed, where, tasks):
            where["folder"] = Path("reports") / Path(path).stem
            if isinstance(behaviour[Path(path).stem], BaseException):
                raise behaviour[Path(path).stem]
            return where["folder"]
        monkeypatch.setattr(cli, "run", run)
        code = cli.main(["run", *(f"{k}.toml" for k in behaviour)])
        return code, capsys.readouterr().err
    monkeypatch.setattr(batch, "check_specs", lambda paths: None)
    monkeypatch.setattr(cli, "prepare", lambda path, out, seed: (None, None))
    monkeypatch.setattr(cli, "_say", lambda message: print(f"[say] {message}", file=sys.stderr))
    code, err = scenario({"a": CrossValidationFailed("cross-validation failed for 1 candidate(s): RBF"), "b": ValueError("stuck")})
    assert code == 1 and "[say] cross-validation failed for 1 candidate(s): RBF" in err and "bayeskern: error: b.toml: stuck" in err
    code, err = scenario({"a": None, "b": KeyboardInterrupt()})
    assert code == 130 and err.endswith("no report was written to reports/b/; reports written before it: reports/a\n")
    assert "b.toml: out of memory: MemoryError" in scenario({"a": None, "b": MemoryError()})[1]
    assert "b.toml: KeyError: 'ell'" in scenario({"a": None, "b": KeyError("ell")})[1]


def test_every_bad_spec_is_named_and_no_cluster_is_started_for_them(spec_path, tmp_path, monkeypatch, capsys):
    """Two bad specs among three: one error names both (only the first was said), and `run --workers 2` says so before it
    starts a cluster."""
    bad_a, bad_b = tmp_path / "a.toml", tmp_path / "b.toml"
    bad_a.write_text(SPEC.replace('name = "fanout"', 'name = "a"').replace('"amp * RBF(lengthscale=ell)", ', '"Sigmoid()", '))
    bad_b.write_text(SPEC.replace('name = "fanout"', 'name = "b"').replace("[cv]", "[cv]\nbogus = 1"))
    monkeypatch.setattr(batch, "connect", lambda *a, **k: pytest.fail("a cluster was started for bad specs"))
    assert cli.main(["run", str(bad_a), str(spec_path), str(bad_b), "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("bayeskern: error:") == 1 and "a.toml: model.kernel" in err and "(also: " in err and "b.toml: cv" in err


def test_ctrl_c_of_several_specs_says_which_reports_were_written(monkeypatch, capsys):
    def interrupted(paths, out, seed, where, workers, scheduler):
        where["written"] = ["reports/first"]
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "run_all", interrupted)
    assert cli.main(["run", "first.toml", "second.toml", "--workers", "2"]) == 130
    assert capsys.readouterr().err == ("bayeskern: interrupted; reports written: reports/first; every other spec's report "
                                       "folder holds what it held before\n")


def test_two_specs_of_one_name_are_refused_before_anything_runs(spec_path, tmp_path):
    twin = tmp_path / "twin.toml"
    twin.write_text(SPEC)  # the same name, "fanout"
    for client in (None, object()):  # one after another, or as tasks (a stand-in client: never reached)
        with pytest.raises(ValueError, match="are both named 'fanout'.*reports/fanout/"):
            batch.run([spec_path, twin], client)


def test_a_ctrl_c_whose_keyboard_interrupt_was_swallowed_still_stops_the_run():
    """Python prints and ignores an exception raised in a gc callback or `__del__` (distributed installs gc callbacks):
    a Ctrl-C landing there is lost as KeyboardInterrupt. While a cluster is connected it is remembered all the same."""
    swallowed = []
    with _ctrl_c.ctrl_c_remembered():
        _ctrl_c.raise_a_lost_ctrl_c()  # nothing received: nothing raised
        previous = signal.signal(signal.SIGINT, lambda signum, frame: swallowed.append(signum))  # stands in for the swallower
        try:
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.monotonic() + 5
            while not swallowed and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            signal.signal(signal.SIGINT, previous)
        assert swallowed
        with pytest.raises(KeyboardInterrupt):
            _ctrl_c.raise_a_lost_ctrl_c()
        _ctrl_c.raise_a_lost_ctrl_c()  # once only
    assert signal.set_wakeup_fd(-1) == -1  # the wake-up fd was handed back


def test_a_swallowed_keyboard_interrupt_is_not_printed_and_other_ignored_exceptions_still_are(monkeypatch):
    """The report of an exception Python ignores (`sys.unraisablehook`, a traceback on stderr by default) is left out for a
    KeyboardInterrupt while a cluster is connected (the Ctrl-C is remembered and stops the run), not for anything else;
    the hook in place before is restored after."""

    class RaisesWhenCollected:
        def __init__(self, error):
            self.error = error

        def __del__(self):
            raise self.error

    reported = []

    def report(unraisable):  # stands in for the hook in place (Python's prints a traceback)
        reported.append(type(unraisable.exc_value).__name__)

    monkeypatch.setattr(sys, "unraisablehook", report)
    with _ctrl_c.ctrl_c_remembered():
        RaisesWhenCollected(KeyboardInterrupt())  # collected at once: its __del__'s exception is ignored
        RaisesWhenCollected(ValueError("still reported"))
    assert reported == ["ValueError"]
    assert sys.unraisablehook is report
    RaisesWhenCollected(KeyboardInterrupt())
    assert reported == ["ValueError", "KeyboardInterrupt"]  # outside the block, reported as before


@pytest.mark.parametrize("spoilt, key", [
    (('source = "sinusoid"\nn = 30\nnoise = 0.2\nseed = 1', 'source = "csv"\npath = "nan.csv"\nx = ["x"]\ny = "y"'), "data"),  # the data
    (('"amp * RBF(lengthscale=ell)", ', '"Sigmoid()", '), "model.kernel"),  # a model: not PSD
])
def test_a_bad_later_spec_is_refused_before_the_first_one_runs(tmp_path, monkeypatch, spoilt, key):
    """A review: with several specs, the second spec's bad data or non-PSD kernel stopped the run (exit 2) only after the
    first spec's report was written. Every spec is now checked as `check` does before any fit."""
    (tmp_path / "nan.csv").write_text("x,y\n" + "".join(f"{i / 10},{i % 3}\n" for i in range(20)) + "2.0,nan\n")
    first, second = tmp_path / "first.toml", tmp_path / "second.toml"
    first.write_text(SPEC.replace('name = "fanout"', 'name = "first"'))
    second.write_text(SPEC.replace('name = "fanout"', 'name = "second"').replace(*spoilt))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(spec.SpecError, match=key):
        batch.run([first, second])
    assert not (tmp_path / "reports").exists()
