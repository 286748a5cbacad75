"""Explorer updates: the time one slider move costs in the kernel, for each explorer.

``mha_helpers.widgets.update_timings(name)`` builds the explorer, then for each slider setting
of ``default_states(name)`` (up to d_model = 1024 and h = 32 for the shape explorer, including
settings that only produce an explanation, such as h not dividing d_model) times one update:
compute the view and replace the HTML. It runs inside a fresh Jupyter kernel driven by
nbclient, so each update also pays for sending the new HTML to the front end over the widget
comm, as in JupyterLab. The browser's own drawing is not included.
"""

from __future__ import annotations

import json
import statistics
import tempfile

import nbformat
from common import MISSED, Row, fmt_time, judged, kernel_stderr_to
from nbclient import NotebookClient

SECTION = "explorers"
TARGET_MEDIAN_S = 0.050
EXPLORERS = ("shape", "kv_cache", "cost")

_CELL = """\
import json
from mha_helpers import widgets
timings = {{name: widgets.update_timings(name, repeat={repeat}) for name in {names!r}}}
states = {{name: len(widgets.default_states(name)) for name in {names!r}}}
print(json.dumps({{"timings": timings, "states": states}}))
"""


def measure_in_kernel(repeat: int) -> dict:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(_CELL.format(repeat=repeat, names=EXPLORERS)))
    client = NotebookClient(nb, timeout=300, kernel_name="python3")
    with tempfile.TemporaryFile(mode="w+") as log, kernel_stderr_to(log):
        client.execute()
    text = "".join(
        o.get("text", "")
        for o in nb.cells[0].outputs
        if o.output_type == "stream" and o.name == "stdout"
    )
    return json.loads(text)


def run(args, blas) -> list[Row]:
    repeat = 1 if args.quick else 3
    try:
        result = measure_in_kernel(repeat)
    except Exception as exc:
        return [
            Row(
                SECTION,
                "explorer updates",
                f"failed: {type(exc).__name__}: {str(exc)[:200]}",
                f"median < {TARGET_MEDIAN_S * 1e3:.0f} ms",
                MISSED,
            )
        ]
    rows = []
    for name in EXPLORERS:
        times = result["timings"][name]
        med, worst = statistics.median(times), max(times)
        rows.append(
            Row(
                SECTION,
                f"{name}_explorer update ({result['states'][name]} settings x {repeat})",
                f"median {fmt_time(med)}, worst {fmt_time(worst)}",
                f"median < {TARGET_MEDIAN_S * 1e3:.0f} ms",
                judged(med < TARGET_MEDIAN_S),
                {
                    "median_s": med,
                    "worst_s": worst,
                    "updates": len(times),
                    "p90_s": statistics.quantiles(times, n=10)[-1] if len(times) >= 10 else worst,
                },
            )
        )
    return rows
