"""Write a report folder all at once: into a temporary sibling, then renamed into place."""

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(folder, files: dict[str, str | bytes | Callable[[Path], None]]) -> Path:
    """Write `files` (relative name → text, bytes, or a function that writes the given path) as the whole content of `folder`.

    Everything is written to a temporary folder beside `folder` first; only when all files are
    written is it renamed into place. A failure leaves the previous report untouched and no
    temporary folder behind.
    """
    folder = Path(folder)
    if folder.exists() and not _replaceable(folder):
        raise ValueError(f"{folder} exists and is not a bayeskern report (no summary.json): refusing to replace it")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; a report is for reading
        for name, content in files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                target.write_text(content, encoding="utf-8")
            elif isinstance(content, bytes):
                target.write_bytes(content)
            else:
                content(target)
        old = None
        if folder.exists():
            old = folder.with_name(f".{folder.name}-old-{os.getpid()}")
            folder.rename(old)
        try:
            tmp.rename(folder)
        except BaseException:
            if old is not None:
                old.rename(folder)  # put the previous report back
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def _replaceable(folder: Path) -> bool:
    """Only an empty folder or an earlier report (it has summary.json) may be replaced."""
    return folder.is_dir() and (not any(folder.iterdir()) or (folder / "summary.json").is_file())
