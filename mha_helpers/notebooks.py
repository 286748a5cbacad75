"""Execute notebooks in a fresh kernel and store them: the only way outputs in the repo change.

``mha-course execute [PATH ...]`` runs each notebook top to bottom in a new kernel, with the
notebook's folder as working directory (as JupyterLab and nbval do), and writes it back with
its outputs. Student notebooks (``exercises/``) are never executed here: they are stored
without outputs by ``mha-course release``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

__all__ = ["find_notebooks", "execute_notebook"]

COURSE_ROOT = Path(__file__).resolve().parent.parent


def find_notebooks(paths) -> list[Path]:
    """Expand files and folders into a sorted list of notebooks (checkpoints skipped)."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found += [q for q in sorted(p.rglob("*.ipynb")) if ".ipynb_checkpoints" not in q.parts]
        elif p.suffix == ".ipynb":
            found.append(p)
        else:
            raise FileNotFoundError(f"{p} is neither a notebook nor a folder")
    return found


def execute_notebook(path, timeout: int = 600, write: bool = True) -> dict:
    """Execute one notebook in a fresh kernel; store it when ``write``. Return timings (s).

    The kernel gets ``MPLBACKEND=module://matplotlib_inline.backend_inline`` and a fixed
    ``PYTHONHASHSEED`` so outputs are the same from run to run.
    """
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    env_backup = {k: os.environ.get(k) for k in ("PYTHONHASHSEED",)}
    os.environ["PYTHONHASHSEED"] = "0"
    try:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            record_timing=False,
            # No widget state in the stored notebook: its model ids change on every run, and
            # exporters that find it drop the explorers' static HTML in favour of widget
            # scripts fetched from the web. Viewers show the static rendering instead.
            store_widget_state=False,
            resources={"metadata": {"path": str(path.parent.resolve())}},
        )
        t0 = time.perf_counter()
        with client.setup_kernel():
            t1 = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            t2 = time.perf_counter()
    finally:
        for k, v in env_backup.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if write:
        nbformat.write(nb, path)
    return {"kernel_start": t1 - t0, "execute": t2 - t1}
