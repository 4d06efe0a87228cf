"""The report writer under kills and interrupts: real processes killed at chosen moments, then the next write sweeps up."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bayeskern.report import writer
from bayeskern.report.writer import Interrupted, check_target, write_atomically

WRITER = Path(writer.__file__)

# A writer process that pauses at a chosen moment and says so on stdout, so that the test can signal it
# exactly there: "writing" (the new report half written), "aside" (the previous report just set aside, the
# new one not yet in place). It loads writer.py alone (no PyMC import), so it starts in a fraction of a second.
DRIVER = r'''
import importlib.util, os, sys, time

spec = importlib.util.spec_from_file_location("writer", sys.argv[1])
writer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(writer)
folder, pause_at, seconds, version = sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]


def pause(moment):
    if moment == pause_at:
        print(moment, flush=True)
        time.sleep(seconds)


rename = os.rename


def renaming(src, dst):
    rename(src, dst)
    if ".bayeskern-old-" in os.fspath(dst):
        pause("aside")


os.rename = renaming


def results(path):
    path.write_bytes(b"\0" * 100_000)
    pause("writing")


files = {"summary.json": '{"version": "%s"}' % version, "results.nc": results, "figures/fit.png": b"png " + version.encode()}
try:
    writer.write_atomically(folder, files)
except writer.Interrupted as err:
    print(f"bayeskern: {err}", file=sys.stderr, flush=True)
    sys.exit(130)
print("done", flush=True)
'''


@pytest.fixture
def driver(tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    return script


def _start(driver, folder, pause_at="never", seconds=60.0, version="new"):
    # Ctrl-C reaches a command started from a terminal with SIGINT's default disposition; a test run
    # started in the background of a non-interactive shell (as a CI harness may) ignores SIGINT, an
    # ignored signal is inherited across exec, and Python then installs no KeyboardInterrupt handler:
    # the child is given back the default, as a terminal would
    return subprocess.Popen([sys.executable, str(driver), str(WRITER), str(folder), pause_at, str(seconds), version],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _stop_at(process, moment: str, signum: int):
    """Wait until the writer says it reached `moment`, send `signum`, and wait for it to end: (exit code, stderr)."""
    assert process.stdout.readline().strip() == moment
    process.send_signal(signum)
    _, err = process.communicate(timeout=30)
    return process.returncode, err


def _write_previous(folder: Path) -> None:
    write_atomically(folder, {"summary.json": '{"version": "old"}', "results.nc": b"old", "figures/fit.png": b"png old"})


def _version(folder: Path) -> str:
    """Which report `folder` holds, checking that it is complete (every file of the driver's reports present)."""
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == ["figures/fit.png", "results.nc", "summary.json"]
    version = json.loads((folder / "summary.json").read_text())["version"]
    assert (folder / "figures" / "fit.png").read_bytes() == b"png " + version.encode()
    return version


def _beside(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name != "driver.py")


def _run_to_the_end(driver, folder, version="third"):
    process = _start(driver, folder, version=version)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and out.strip() == "done", err


def test_sigkill_while_the_new_report_is_written_leaves_the_old_one_and_the_next_run_sweeps(driver, tmp_path):
    folder = tmp_path / "r"
    _write_previous(folder)
    code, _ = _stop_at(_start(driver, folder, "writing"), "writing", signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert _version(folder) == "old"
    left = [name for name in _beside(folder) if name != "r"]
    assert len(left) == 1 and left[0].startswith(".r.bayeskern-new-")  # the half-written report
    _run_to_the_end(driver, folder)
    assert _beside(folder) == ["r"] and _version(folder) == "third"


def test_sigkill_after_the_old_report_is_set_aside_is_restored_and_swept(driver, tmp_path):
    folder = tmp_path / "r"
    _write_previous(folder)
    code, _ = _stop_at(_start(driver, folder, "aside"), "aside", signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert not folder.exists()  # killed between the two renames
    assert sorted(name.split("-")[1] for name in _beside(folder)) == ["new", "old"]
    said = []
    assert check_target(folder, say=said.append) == folder  # what `bayeskern run` does before fitting
    assert _beside(folder) == ["r"] and _version(folder) == "old"  # the previous report is back
    assert len(said) == 2 and "restored" in said[0] and "removed" in said[1]
    _run_to_the_end(driver, folder)
    assert _beside(folder) == ["r"] and _version(folder) == "third"


def test_the_next_run_itself_restores_a_report_left_set_aside(driver, tmp_path):
    folder = tmp_path / "r"
    _write_previous(folder)
    _stop_at(_start(driver, folder, "aside"), "aside", signal.SIGKILL)
    _run_to_the_end(driver, folder)
    assert _beside(folder) == ["r"] and _version(folder) == "third"


def test_sigint_while_writing_says_the_previous_report_is_untouched_and_it_is(driver, tmp_path):
    folder = tmp_path / "r"
    _write_previous(folder)
    code, err = _stop_at(_start(driver, folder, "writing"), "writing", signal.SIGINT)
    assert code == 130
    assert err.strip() == f"bayeskern: interrupted; the previous report in {folder}/ is untouched"
    assert _beside(folder) == ["r"] and _version(folder) == "old"


def test_sigint_when_the_old_report_is_set_aside_says_the_new_one_is_in_place_and_it_is(driver, tmp_path):
    """Ctrl-C is held back for the two renames of the swap, so it never finds the folder missing."""
    folder = tmp_path / "r"
    _write_previous(folder)
    code, err = _stop_at(_start(driver, folder, "aside", seconds=1.0), "aside", signal.SIGINT)
    assert code == 130
    assert err.strip() == f"bayeskern: interrupted; the new report was already complete and is in {folder}/"
    assert _beside(folder) == ["r"] and _version(folder) == "new"


def test_sigint_without_a_previous_report_says_none_was_written(driver, tmp_path):
    folder = tmp_path / "r"
    code, err = _stop_at(_start(driver, folder, "writing"), "writing", signal.SIGINT)
    assert code == 130
    assert err.strip() == f"bayeskern: interrupted; no report was written to {folder}/"
    assert _beside(folder) == []


def test_only_stale_folders_of_this_target_are_swept(tmp_path):
    """Swept: ours, for this name, of a process that is gone. Kept: a live process's, another report's, the user's."""
    folder = tmp_path / "r"
    _write_previous(folder)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            f".r.bayeskern-new-{gone.pid}-abc123": False,
            f".r.bayeskern-old-{gone.pid}-def456": False,
            f".r.bayeskern-new-{os.getpid()}-ghi789": False,  # this process's, from a write no longer in progress
            f".r.bayeskern-new-{live.pid}-abc123": True,  # a run still writing
            f".r2.bayeskern-new-{gone.pid}-abc123": True,  # another report's
            f".r.bayeskern-new-{gone.pid}": True,  # not our pattern
            ".r-old": True,
            f"r.bayeskern-new-{gone.pid}-abc123": True,  # not hidden: not ours
        }
        for name in names:
            (tmp_path / name).mkdir()
            (tmp_path / name / "f").write_text("x")
        (tmp_path / f".r.bayeskern-new-{gone.pid}-zzz").write_text("a file, not a folder of ours")
        check_target(folder)
        kept = {name for name, keep in names.items() if keep} | {"r", f".r.bayeskern-new-{gone.pid}-zzz"}
        assert set(_beside(folder)) == kept
        assert _version(folder) == "old"  # the target was in place: nothing restored over it
    finally:
        live.kill()
        live.wait()


def test_a_write_in_progress_in_this_process_is_not_swept(tmp_path):
    """Within one process, the write in progress is not stale: a check of the same target from inside it keeps it."""
    folder = tmp_path / "r"
    seen = []

    def look(path):
        check_target(folder)  # e.g. another thread of this process checking the same target
        seen.append(sorted(p.name.split("-")[1] for p in tmp_path.iterdir() if p.name.startswith(".r.")))
        path.write_text("{}")

    write_atomically(folder, {"summary.json": look})
    assert seen == [["new"]] and _beside(folder) == ["r"]


def _under_a_file(t):
    (t / "file").write_text("x")
    return t / "file" / "out"


def _a_file(t):
    (t / "out").write_text("x")
    return t / "out"


def _somebody_s_work(t):
    (t / "work").mkdir()
    (t / "work" / "thesis.tex").write_text("years of work")
    return t / "work"


@pytest.mark.parametrize("make, reason", [
    (_under_a_file, "is not a folder"),
    (_a_file, "exists and is not a folder"),
    (_somebody_s_work, "is not a bayeskern report"),
    (lambda t: Path("/proc/bayeskern-out"), "cannot be written"),  # /proc refuses new folders, even to root
    (lambda t: t / "..", "does not name a folder"),
])
def test_check_target_refuses_what_cannot_take_a_report(tmp_path, make, reason):
    target = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ValueError, match=reason):
        check_target(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing made, nothing removed


def test_check_target_accepts_new_names_empty_folders_and_reports(tmp_path):
    assert check_target(tmp_path / "a" / "b" / "new") == tmp_path / "a" / "b" / "new"
    assert not (tmp_path / "a").exists()  # checked, not made
    (tmp_path / "empty").mkdir()
    check_target(tmp_path / "empty")
    _write_previous(tmp_path / "report")
    check_target(tmp_path / "report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "report"]


def test_a_report_holding_files_it_did_not_write_is_not_replaced(tmp_path):
    """A user's notes in an earlier report's folder (files its summary.json does not list) were deleted with it by the
    next run: the folder is refused, naming them, and nothing is touched. A report holding only its own files is replaced."""
    folder = tmp_path / "r"
    write_atomically(folder, {"summary.json": json.dumps({"files": ["report.md", "figures/fit.png"]}),
                              "report.md": "old", "figures/fit.png": b"png"})
    check_target(folder)  # only what it wrote: replaceable
    (folder / "my_notes.txt").write_text("mine")
    (folder / "sub").mkdir()
    (folder / "sub" / "draft.md").write_text("mine too")
    (folder / "empty").mkdir()
    (folder / "link").symlink_to(tmp_path)
    (folder / ".DS_Store").write_bytes(b"finder")  # hidden: not a user's work
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "x.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"holds files its report did not write \(empty, link, my_notes.txt, …\): refusing"):
        write_atomically(folder, {"summary.json": "{}"})
    assert (folder / "my_notes.txt").read_text() == "mine" and (folder / "report.md").read_text() == "old"
    for name in ("my_notes.txt", "sub", "empty", "link"):
        (folder / name).unlink() if (folder / name).is_symlink() or (folder / name).is_file() else shutil.rmtree(folder / name)
    write_atomically(folder, {"summary.json": "{}"})  # its own files and hidden ones only: replaced
    assert sorted(p.name for p in folder.iterdir()) == ["summary.json"]


def test_a_failed_write_leaves_the_previous_report_and_nothing_else(tmp_path):
    folder = tmp_path / "r"
    _write_previous(folder)

    def disk_full(path):
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(folder, {"summary.json": "{}", "results.nc": disk_full})
    assert _beside(folder) == ["r"] and _version(folder) == "old"


def test_interrupted_says_which_report_is_in_place(tmp_path):
    assert str(Interrupted(tmp_path, "old")) == f"interrupted; the previous report in {tmp_path}/ is untouched"
    assert Interrupted.before_writing(tmp_path / "none").holds == "none"
    _write_previous(tmp_path / "r")
    assert Interrupted.before_writing(tmp_path / "r").holds == "old"
    assert isinstance(Interrupted(tmp_path, "new"), KeyboardInterrupt)  # code that catches Ctrl-C still does


def test_a_ctrl_c_python_swallowed_still_keeps_the_previous_report(tmp_path):
    """A review's run went on after a Ctrl-C whose KeyboardInterrupt was raised inside a weakref callback ("Exception
    ignored in … KeyboardInterrupt") and replaced the previous report. Within `ctrl_c_remembered` (every `bayeskern run`),
    a SIGINT raised inside a `__del__` — where Python prints and drops it — still stops the write before the swap."""
    from bayeskern._ctrl_c import ctrl_c_remembered

    folder = tmp_path / "r"
    _write_previous(folder)

    class SignalledOnDeletion:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # Python's handler raises KeyboardInterrupt here, inside __del__: dropped

    # Python's own Ctrl-C handler, whatever this process inherited (a shell starts background jobs with SIGINT ignored)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with ctrl_c_remembered():
            SignalledOnDeletion()  # deleted at once; the interrupt is swallowed and the code goes on
            with pytest.raises(Interrupted, match="previous report .* is untouched"):
                write_atomically(folder, {"summary.json": '{"version": "new"}', "results.nc": b"new", "figures/fit.png": b"png new"})
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert _beside(folder) == ["r"] and _version(folder) == "old"
