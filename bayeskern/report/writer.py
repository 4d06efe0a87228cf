"""Write a report folder all at once: into a temporary sibling, then renamed into place."""

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(folder, files: dict[str, str]) -> Path:
    """Write `files` (relative name → text) as the whole content of `folder`.

    Everything is written to a temporary folder beside `folder` first; only when all files are
    written is it renamed into place. A failure leaves the previous report untouched.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; a report is for reading
        for name, text in files.items():
            target = tmp / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        old = None
        if folder.exists():
            old = folder.with_name(f".{folder.name}-old-{os.getpid()}")
            folder.rename(old)
        tmp.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
