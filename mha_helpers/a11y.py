"""Names for the explorers' controls that a screen reader can announce.

ipywidgets 8 draws a slider's visible label (``description``) beside a ``role="slider"`` handle
that has no accessible name of its own: a screen reader announces "slider, 8" without saying
which one, and axe-core reports it (``aria-input-field-name``, serious). Dropdowns and text
boxes are fine (their ``<label>`` points at them). Python cannot reach the handle, so each
explorer carries one invisible :class:`anywidget.AnyWidget` whose few lines of JavaScript give
every slider handle of that explorer its visible label as ``aria-label`` (and the editable value
box beside it a name too), again whenever the explorer redraws a control.

Without anywidget installed (it is one of the course's dependencies) the explorers work as
before, unlabelled; :func:`control_labeller` then returns ``None``.
"""

from __future__ import annotations

from functools import lru_cache

# Runs in the browser. `el` is this widget's own (hidden) element inside the explorer; the
# explorer's root carries the class `mha-explorer`. Views attach to the page after render(), so
# it waits until `el` is connected, then labels and watches for redraws.
_ESM = r"""
function labelControls(root) {
  for (const box of root.querySelectorAll(".widget-slider")) {
    const label = box.querySelector(".widget-label");
    const name = label ? label.textContent.trim() : "";
    if (!name) continue;
    const handle = box.querySelector('[role="slider"]');
    if (handle && handle.getAttribute("aria-label") !== name) {
      handle.setAttribute("aria-label", name);
    }
    const readout = box.querySelector(".widget-readout");
    if (readout && readout.getAttribute("aria-label") !== name + " value") {
      readout.setAttribute("aria-label", name + " value");
    }
  }
}

function render({ el }) {
  let observer = null;
  let tries = 0;
  const start = () => {
    const root = el.closest(".mha-explorer");
    if (!root) {
      if (tries++ < 200) setTimeout(start, 50);
      return;
    }
    labelControls(root);
    observer = new MutationObserver(() => labelControls(root));
    observer.observe(root, { childList: true, subtree: true });
  };
  start();
  return () => { if (observer) observer.disconnect(); };
}

export default { render };
"""


@lru_cache(maxsize=1)
def _labeller_class():
    try:
        import anywidget
    except ImportError:
        return None

    class ControlLabeller(anywidget.AnyWidget):
        """Invisible: names the slider handles of the explorer it sits in."""

        _esm = _ESM

    return ControlLabeller


def control_labeller():
    """A hidden widget to put among an explorer's children (``None`` without anywidget)."""
    cls = _labeller_class()
    if cls is None:
        return None
    import ipywidgets

    return cls(layout=ipywidgets.Layout(display="none"))
