"""What one run in the sandbox may use: memory, CPU time, files, wall-clock time, the report's
size and processes.

The runner sets the rlimits from these before any student code runs
(:mod:`.inside.runner`); the grader enforces the wall-clock limit and the report's size
(:mod:`.process`) and, where it can make one, a cgroup's memory and process limits
(:mod:`.cgroups`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass
class Limits:
    memory_bytes: int = 2 * 2**30
    cpu_seconds: int = 65
    file_bytes: int = 32 * 2**20  # any one file the program writes
    tmp_bytes: int = 64 * 2**20  # all of /sandbox together
    tmp_inodes: int = 4096  # files, folders and links in /sandbox (each ~1 KiB of kernel memory)
    wall_seconds: float = 60.0
    report_bytes: int = 16 * 2**20
    pids: int = 16  # processes and threads in the cgroup (bwrap, its init, the runner)
    cgroup_memory_bytes: int | None = None  # default: memory_bytes + tmp_bytes
