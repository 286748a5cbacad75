"""How long one update of an explorer takes: what a slider move costs in the kernel.

``benchmarks/bench_explorers.py`` times each explorer over :func:`default_states` (the largest
sizes and settings that are only explained as invalid included) with :func:`update_timings`.
"""

from __future__ import annotations

import time

from .cost import cost_explorer
from .kv_cache import kv_cache_explorer
from .live import random_model_ids
from .shape import shape_explorer

__all__ = ["default_states", "update_timings"]

_FACTORIES = {"shape": shape_explorer, "kv_cache": kv_cache_explorer, "cost": cost_explorer}


def default_states(explorer_name: str) -> list[dict]:
    """A sweep of slider settings for benchmarks, including the largest sizes and invalid ones."""
    if explorer_name == "shape":
        return [
            {"d_model": d, "h": h, "n": n}
            for d in (8, 64, 256, 512, 768, 1024)
            for h in (1, 2, 3, 8, 16, 32)
            for n in (4, 8)
        ]
    if explorer_name == "kv_cache":
        return [
            {"num_layers": L, "num_heads": h, "num_kv_heads": g, "seq_len": s}
            for L in (12, 80)
            for h in (32, 64)
            for g in (1, 6, 8, 32)
            for s in (4096, 131072)
        ]
    if explorer_name == "cost":
        return [
            {"d_model": d, "h": h, "n": n}
            for d in (64, 768, 4096)
            for h in (1, 5, 12, 64)
            for n in (128, 1024, 32768)
        ]
    raise ValueError(f"unknown explorer {explorer_name!r}; choose from {sorted(_FACTORIES)}")


def update_timings(explorer_name: str, states=None, repeat: int = 1) -> list[float]:
    """Seconds taken by each update of an explorer, one per state (a dict of control values).

    Each update is what a slider move costs in the kernel: compute the view and replace the
    HTML. ``explorer_name`` is ``"shape"``, ``"kv_cache"`` or ``"cost"``; ``states`` defaults to
    :func:`default_states`. The explorer (and the seeded example) is built before timing starts.

    >>> t = update_timings("shape", [{"d_model": 16, "h": 4}])
    >>> len(t)
    1
    """
    states = default_states(explorer_name) if states is None else list(states)
    with random_model_ids():  # never retire an explorer the notebook is showing
        explorer = _FACTORIES[explorer_name]()
    out = []
    try:
        for _ in range(repeat):
            for state in states:
                t0 = time.perf_counter()
                explorer.set_values(**state)
                out.append(time.perf_counter() - t0)
    finally:
        explorer.close()
    return out
