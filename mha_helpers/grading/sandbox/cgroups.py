"""The sandbox's cgroup: memory and processes counted by the kernel, and an end the inside
cannot prevent.

Where the machine lets the grader make one (cgroup v2 with the memory and pids controllers
delegated, or the v1 memory and pids controllers), each sandbox runs in a cgroup of its own:
``memory.max`` (or ``memory.limit_in_bytes``) counts every page the sandbox uses, shared memory
and tmpfs included, with no swap; ``pids.max`` bounds its processes and threads; and
``cgroup.kill`` (or a SIGKILL to every process in it) ends all of it at once. Cgroups left
behind by a run whose processes were still exiting, or by a grader killed with SIGKILL, are
swept away later (:func:`sweep`). :func:`accounting` says which kind this machine gives.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path

from .limits import Limits

__all__ = ["Cgroup", "cgroup_parents", "make_cgroup", "sweep", "accounting", "ENTER"]


def _mounts_of(fstype: str) -> list[tuple[str, set]]:
    """(mount point, super options) of every mount of ``fstype`` (``cgroup`` or ``cgroup2``)."""
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                parts, rparts = left.split(), right.split()
                if len(parts) > 4 and len(rparts) > 2 and rparts[0] == fstype:
                    out.append((parts[4].replace("\\040", " "), set(rparts[2].split(","))))
    except OSError:
        pass
    return out


def _own_cgroups() -> dict:
    """{controller or "" for v2: path} from /proc/self/cgroup."""
    out = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


class Cgroup:
    """One sandbox's cgroup (v2: one folder; v1: one folder per controller)."""

    def __init__(self, kind: str, folders: list[Path]):
        self.kind, self.folders = kind, folders

    def procs_files(self) -> list[str]:
        return [str(f / "cgroup.procs") for f in self.folders]

    def kill(self) -> None:
        first = self.folders[0]
        if self.kind == "v2" and (first / "cgroup.kill").exists():
            try:
                _write(first / "cgroup.kill", "1")
                return
            except OSError:
                pass
        for _ in range(50):  # nothing inside can create processes, so this converges
            pids = set()
            for f in self.procs_files():
                try:
                    pids |= {int(x) for x in Path(f).read_text().split()}
                except (OSError, ValueError):
                    pass
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.01)

    def remove(self, tries: int = 20) -> bool:
        """Remove the folders (once their processes are gone); False when one is still busy,
        in which case it is kept for a later sweep (:func:`sweep`)."""
        left = []
        for folder in self.folders:
            for attempt in range(tries):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if attempt + 1 == tries:
                        left.append(folder)
                    else:
                        time.sleep(0.01)
        if left:
            with _STALE_LOCK:
                _STALE.append(Cgroup(self.kind, left))
        return not left


_STALE: list = []  # cgroups whose processes were still exiting when their run ended
_STALE_LOCK = threading.Lock()


def sweep(bases=()) -> None:
    """Remove cgroups left behind: this process's (their processes have exited by now) and
    those of graders that are no longer running (a grader killed with SIGKILL)."""
    with _STALE_LOCK:
        stale, _STALE[:] = list(_STALE), []
    for cg in stale:
        cg.kill()
        cg.remove(tries=1)
    for base in bases:
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for e in entries:
            parts = e.name.split("-")
            if len(parts) != 4 or parts[:2] != ["mha", "grade"] or not parts[2].isdigit():
                continue
            pid = int(parts[2])
            if pid == os.getpid() or os.path.exists(f"/proc/{pid}"):
                continue  # ours (handled above) or a grader still running
            try:
                os.rmdir(e.path)
            except OSError:
                pass


_COUNTER = itertools.count()


def _parents() -> tuple[str, list[Path]] | None:
    """Where this process may make cgroups, and of which kind, or None."""
    own = _own_cgroups()
    for mnt, _ in _mounts_of("cgroup2"):
        base = Path(mnt + own.get("", "/").rstrip("/")) if "" in own else None
        if base is None or not base.is_dir():
            continue
        try:
            controllers = set((base / "cgroup.controllers").read_text().split())
            if not {"memory", "pids"} <= controllers:
                continue
            enabled = set((base / "cgroup.subtree_control").read_text().split())
            if not {"memory", "pids"} <= enabled:
                _write(base / "cgroup.subtree_control", "+memory +pids")
            return "v2", [base]
        except OSError:
            continue
    folders = []
    v1 = _mounts_of("cgroup")
    for controller in ("memory", "pids"):
        mnt = next((m for m, opts in v1 if controller in opts), None)
        if mnt is None:
            return None
        path = own.get(controller, "/")
        base = Path(mnt + path.rstrip("/"))
        folders.append(base if base.is_dir() else Path(mnt))
    return "v1", folders


def make_cgroup(parents, limits: Limits) -> Cgroup | None:
    kind, bases = parents
    if _STALE:
        sweep()
    name = f"mha-grade-{os.getpid()}-{next(_COUNTER)}"
    made: list[Path] = []
    try:
        for base in bases:
            folder = base / name
            folder.mkdir()
            made.append(folder)
        memory = str(int(limits.cgroup_memory_bytes or limits.memory_bytes + limits.tmp_bytes))
        if kind == "v2":
            _write(made[0] / "memory.max", memory)
            if (made[0] / "memory.swap.max").exists():
                _write(made[0] / "memory.swap.max", "0")
            _write(made[0] / "pids.max", str(limits.pids))
        else:
            _write(made[0] / "memory.limit_in_bytes", memory)
            try:
                _write(made[0] / "memory.memsw.limit_in_bytes", memory)
            except OSError:
                pass  # no swap accounting on this kernel
            _write(made[1] / "pids.max", str(limits.pids))
    except OSError:
        Cgroup(kind, made).remove()
        return None
    return Cgroup(kind, made)


@lru_cache(maxsize=None)
def cgroup_parents():
    """Detect once whether sandboxes get cgroups here: make one, move a process into it."""
    parents = _parents()
    if parents is None:
        return None
    sweep(parents[1])
    cg = make_cgroup(parents, Limits())
    if cg is None:
        return None
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", ENTER, "sh", *cg.procs_files(), "--", "/bin/true"],
            capture_output=True,
            timeout=10,
        )
        ok = proc.returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    cg.kill()
    cg.remove()
    return parents if ok else None


# Moves the shell into each cgroup given before "--", then becomes the command after it.
ENTER = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


def accounting() -> str:
    """How the sandbox's memory is accounted here: "cgroup v2", "cgroup v1" or "rlimits"."""
    if not sys.platform.startswith("linux"):
        return "rlimits"
    parents = cgroup_parents()
    return f"cgroup {parents[0]}" if parents else "rlimits"
