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
        tmp.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder
