"""Write a report folder all at once: into a temporary sibling, renamed into place; the leftovers of killed runs are swept."""

import json
import os
import re
import secrets
import shutil
import signal
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from bayeskern._ctrl_c import raise_a_lost_ctrl_c

__all__ = ["Interrupted", "check_target", "is_report", "write_atomically"]

# While a report NAME is written, two hidden folders may sit beside it, both tied to NAME and to the
# writing process: .NAME.bayeskern-new-PID-XXXX (the new report, being written) and
# .NAME.bayeskern-old-PID-XXXX (the previous report, set aside for the moment of the swap).
_LEFTOVER = re.compile(r"\.(?P<target>.+)\.bayeskern-(?P<kind>new|old)-(?P<pid>\d+)-[a-z0-9_]+")

_writing: Counter = Counter()  # targets this process is writing now (threads may write concurrently)
_writing_lock = threading.Lock()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a write; `holds` says which report `folder` holds now: "old" (the previous one), "new" or "none"."""

    _SAY = {"old": "the previous report in {}/ is untouched", "new": "the new report was already complete and is in {}/",
            "none": "no report was written to {}/"}

    def __init__(self, folder, holds: str):
        self.folder, self.holds = Path(folder), holds
        super().__init__(f"interrupted; {self._SAY[holds].format(self.folder)}")

    @classmethod
    def before_writing(cls, folder) -> "Interrupted":
        """The interrupt of a run stopped before it wrote anything: `folder` holds whatever it held."""
        return cls(folder, "old" if is_report(folder) else "none")


def is_report(folder) -> bool:
    """Whether `folder` holds a bayeskern report (it has summary.json)."""
    return (Path(folder) / "summary.json").is_file()


def _replaceable(folder: Path) -> bool:
    """Only an empty folder or an earlier report (it has summary.json) may be replaced."""
    return folder.is_dir() and (not any(folder.iterdir()) or is_report(folder))


def _not_written_by_it(folder: Path) -> list[str]:
    """What an earlier report's folder holds besides the files its summary.json lists and their folders (a user's notes,
    an empty folder of theirs, a link): replacing the folder would delete it. Hidden names (.DS_Store,
    .ipynb_checkpoints/) do not count. Nothing for a summary without the list, or one that cannot be read."""
    try:
        listed = set(json.loads((folder / "summary.json").read_text(encoding="utf-8"))["files"]) | {"summary.json"}
    except (OSError, ValueError, KeyError, TypeError):
        return []
    parents = {str(p) for name in listed for p in Path(name).parents}
    found = []
    for path in folder.rglob("*"):
        name = path.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in path.relative_to(folder).parts) or name in listed:
            continue
        if path.is_symlink() or not path.is_dir() or name not in parents:
            found.append(name)
    return sorted(found)


def _alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (one that we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except (OverflowError, ValueError):  # not a possible process id
        return False
    return True


def _stale_leftovers(folder: Path) -> list[tuple[Path, str]]:
    """The folders beside `folder` that a write of `folder` left and no live run owns: (path, "new" | "old")."""
    if not folder.parent.is_dir():
        return []
    with _writing_lock:
        ours_busy = _writing[folder.resolve()] > 0
    stale = []
    for entry in folder.parent.iterdir():
        match = _LEFTOVER.fullmatch(entry.name)
        if match is None or match["target"] != folder.name or entry.is_symlink() or not entry.is_dir():
            continue
        pid = int(match["pid"])
        if (ours_busy if pid == os.getpid() else _alive(pid)):
            continue
        stale.append((entry, match["kind"]))
    return stale


def _sweep(folder: Path, say: Callable[[str], None]) -> None:
    """Remove the leftovers of killed writes of `folder`; if a kill left `folder` missing and the previous report set aside, put it back."""
    stale = _stale_leftovers(folder)
    set_aside = sorted((p for p, kind in stale if kind == "old"), key=lambda p: p.stat().st_ctime)  # renaming sets ctime
    if set_aside and not folder.exists() and not folder.is_symlink():
        try:
            os.rename(set_aside[-1], folder)  # the newest: the report that was in place when the run was killed
            say(f"restored {folder}/, the previous report that a killed run had set aside")
        except OSError:  # another run restored it first
            pass
    for path, _ in stale:
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
            say(f"removed {path.name}, left beside {folder.name} by a killed run")


def check_target(folder, say: Callable[[str], None] = lambda message: None) -> Path:
    """Check, before any work, that a report can be written to `folder`; a ValueError says what is wrong.

    First sweeps what killed writes of `folder` left beside it (putting the previous report back
    if a kill left it set aside). Then `folder` must be an empty folder, an earlier report (it has
    summary.json) or a new name, in a place where folders can be made.
    """
    folder = Path(folder)
    if folder.name in ("", ".", ".."):
        raise ValueError(f"{folder} does not name a folder")
    _sweep(folder, say)
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            raise ValueError(f"{folder} exists and is not a folder")
        if not _replaceable(folder):
            raise ValueError(f"{folder} exists and is not a bayeskern report (no summary.json): refusing to replace it")
        if foreign := _not_written_by_it(folder):
            raise ValueError(f"{folder} holds files its report did not write ({', '.join(foreign[:3])}"
                             f"{', …' if len(foreign) > 3 else ''}): refusing to replace it; move them, or give another --out")
    existing = next(p for p in (folder.parent, *folder.parent.parents) if p.exists() or p.is_symlink())
    if not existing.is_dir():
        raise ValueError(f"{folder} cannot be made: {existing} is not a folder")
    try:  # the only reliable test of "may I make a folder here": make one (with the temporary folder's name length)
        os.rmdir(tempfile.mkdtemp(prefix=f".{folder.name}.bayeskern-new-{os.getpid()}-", dir=existing))
    except OSError as err:
        raise ValueError(f"{folder} cannot be written: {err.strerror} in {existing}") from None
    return folder


@contextmanager
def _interrupts_held():
    """Hold Ctrl-C back for the moment of the swap; yields a list that records one held back.

    Only where Python's own handler turns Ctrl-C into KeyboardInterrupt (the main thread, no handler
    of the program's own, SIGINT not ignored): elsewhere the program's choice is left alone.
    """
    held: list = []
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield held
        return
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextmanager
def _writing_to(folder: Path):
    """Mark `folder` as being written by this process, so that its own sweeps leave its folders alone."""
    key = folder.resolve()
    with _writing_lock:
        _writing[key] += 1
    try:
        yield
    finally:
        with _writing_lock:
            _writing[key] -= 1


def _write_files(root: Path, files: dict) -> None:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            content(target)


def _swap(new: Path, folder: Path) -> Path | None:
    """Set the previous report aside and rename `new` into place; the set-aside copy (None if there was none)."""
    old = None
    if folder.exists():
        old = folder.with_name(f".{folder.name}.bayeskern-old-{os.getpid()}-{secrets.token_hex(6)}")
        if old.exists():  # a rename onto an empty folder would succeed; 48 random bits make this a formality
            raise FileExistsError(f"{old} exists")
        os.rename(folder, old)
    try:
        os.rename(new, folder)
    except BaseException:
        if old is not None:
            os.rename(old, folder)  # put the previous report back
        raise
    return old


def write_atomically(folder, files: dict[str, str | bytes | Callable[[Path], None]]) -> Path:
    """Write `files` (relative name → text, bytes, or a function that writes the given path) as the whole content of `folder`.

    Everything is written to a hidden folder beside `folder` first; only when all files are written
    is the previous report set aside, the new one renamed into place and the old one deleted. An
    error leaves the previous report as it was; a Ctrl-C raises `Interrupted`, which says which
    report is in place. What a kill leaves (the hidden folders, or the previous report set aside) is
    swept by the next write or `check_target` of the same folder; a folder of a live run is left alone.
    """
    folder = check_target(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    had_report = is_report(folder)
    with _writing_to(folder):
        new = Path(tempfile.mkdtemp(prefix=f".{folder.name}.bayeskern-new-{os.getpid()}-", dir=folder.parent))
        try:
            new.chmod(0o755)  # mkdtemp makes it private; a report is for reading
            _write_files(new, files)
            raise_a_lost_ctrl_c()  # a Ctrl-C Python swallowed while this run went on: the previous report stays
            with _interrupts_held() as held:
                old = _swap(new, folder)
        except KeyboardInterrupt:
            shutil.rmtree(new, ignore_errors=True)
            raise Interrupted(folder, "old" if had_report else "none") from None
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
        try:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except KeyboardInterrupt:  # the rest of the old copy is swept by the next write
            raise Interrupted(folder, "new") from None
    if held:
        raise Interrupted(folder, "new")
    return folder
