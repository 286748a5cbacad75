"""What every benchmark section shares: timing by interleaved rounds, the BLAS thread count,
the machine description and the result rows that run.py prints and saves.

Shared machines are noisy, so the sections report *ratios taken in the same run*: in each
round every contender is timed once, in an order shuffled from round to round, and the
ratio of two contenders is the median over rounds of their per-round ratio. Slow drift (another
process starting, the CPU clocking down) then affects both sides of each ratio alike.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np

# --- result rows -----------------------------------------------------------------------------

MET, MISSED, INFO, SKIPPED = "met", "missed", "info", "skipped"


@dataclass
class Row:
    """One line of the table: what was measured, the number, the target and whether it was met."""

    section: str
    name: str
    measured: str
    target: str = ""
    status: str = INFO  # met / missed / info / skipped
    values: dict = field(default_factory=dict)  # raw numbers for the JSON file
    note: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def judged(ok: bool) -> str:
    return MET if ok else MISSED


# --- timing ----------------------------------------------------------------------------------


def _time_once(fn, inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def interleaved(
    contenders: dict,
    rounds: int = 15,
    warmup: int = 2,
    batch_time: float = 2e-4,
    round_time: float = 0.15,
    max_best_of: int = 5,
) -> dict:
    """Time each ``name -> zero-argument callable`` once per round, in a shuffled order.

    A shared machine preempts a process for whole scheduler slices (milliseconds), so one sample
    is the best of up to ``max_best_of`` short timings (each a batch of at least ``batch_time``
    seconds, about ``round_time`` seconds in all): a timing that another process interrupted is
    discarded instead of averaged in. Returns ``{name: [seconds per call, one per round]}``.
    """
    names = list(contenders)
    inner, best_of = {}, {}
    for name in names:
        for _ in range(warmup):
            contenders[name]()
        t = min(_time_once(contenders[name], 1) for _ in range(3))
        inner[name] = max(1, int(batch_time / max(t, 1e-9)))
        best_of[name] = max(1, min(max_best_of, int(round_time / max(t * inner[name], 1e-9))))
    samples = {name: [] for name in names}
    shuffler = random.Random(0)
    for _ in range(rounds):
        # A new order every round: a fixed rotation would keep the same neighbours, so any
        # after-effect of one contender (caches, threads) would always fall on the same other.
        order = shuffler.sample(names, len(names))
        for name in order:
            fn, k = contenders[name], inner[name]
            samples[name].append(min(_time_once(fn, k) for _ in range(best_of[name])))
    return samples


def median(xs) -> float:
    return float(statistics.median(xs))


def paired_ratio(samples: dict, a: str, b: str) -> float:
    """Median over rounds of time(a) / time(b): how many times slower a is than b."""
    return median([ta / tb for ta, tb in zip(samples[a], samples[b])])


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
    return f"{seconds:.1f} s"


# --- notebook kernels -----------------------------------------------------------------------


@contextlib.contextmanager
def kernel_stderr_to(file):
    """Send what kernels print on stderr (start-up warnings) to ``file``, not into the table."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


# --- BLAS threads ----------------------------------------------------------------------------
# threadpoolctl is not a dependency, so ask the OpenBLAS that NumPy loaded directly. NumPy's
# wheels ship OpenBLAS with a "scipy_" prefix and a "64_" suffix on its symbols.

_GET_THREADS = (
    "scipy_openblas_get_num_threads64_",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)
_SET_THREADS = (
    "scipy_openblas_set_num_threads64_",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_CORENAME = ("scipy_openblas_get_corename64_", "openblas_get_corename64_", "openblas_get_corename")


def _openblas():
    np.ones((2, 2)) @ np.ones((2, 2))  # make sure the library is loaded
    try:
        with open("/proc/self/maps") as maps:
            paths = {
                line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line
            }
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if any(hasattr(lib, name) for name in _GET_THREADS):
            return lib
    return None


def _symbol(lib, names):
    for name in names:
        if lib is not None and hasattr(lib, name):
            return getattr(lib, name)
    return None


def blas_info() -> dict:
    """NumPy's BLAS: library name, version, the kernel it runs and its thread count (or None)."""
    info = {"name": None, "version": None, "threads": None, "core": None}
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        info["name"], info["version"] = blas.get("name"), blas.get("version")
    except Exception:  # older NumPy: no dict mode
        pass
    lib = _openblas()
    get = _symbol(lib, _GET_THREADS)
    if get is not None:
        info["threads"] = int(get())
    core = _symbol(lib, _CORENAME)
    if core is not None:
        core.restype = ctypes.c_char_p
        info["core"] = core().decode()
    return info


def set_blas_threads(n: int) -> bool:
    """Set OpenBLAS's thread count for this process; False when it cannot be done."""
    setter = _symbol(_openblas(), _SET_THREADS)
    if setter is None:
        return False
    setter(ctypes.c_int(n))
    return True


def machine_info() -> dict:
    cpu = platform.processor() or platform.machine()
    virtual = False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    virtual = " hypervisor" in line
                    break
    except OSError:
        pass
    if virtual:
        cpu += " (virtual machine)"
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        mem_gib = None
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": None if mem_gib is None else round(mem_gib, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average_at_start": None if load is None else [round(x, 2) for x in load],
        "openblas_env": {
            k: os.environ[k]
            for k in (
                "OPENBLAS_CORETYPE",
                "OPENBLAS_L2_SIZE",
                "OPENBLAS_NUM_THREADS",
                "OMP_NUM_THREADS",
            )
            if k in os.environ
        },
    }
