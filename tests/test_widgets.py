"""The explorers, headless: set sliders from code and check what a learner would see.

Each explorer is a pure "slider values -> what to show" function (tested first, directly) and a
thin ipywidgets layer (tested by setting ``slider.value`` and reading the HTML it displays).
The browser test (tests/test_browser.py) checks the same behaviour in JupyterLab.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from mha_helpers import (
    MODEL_CONFIGS,
    attention_flops,
    attention_params,
    format_bytes,
    kv_cache_bytes,
)
from mha_helpers import widgets as W
from mha_helpers.explorers import shape as shape_module
from mha_helpers.widgets import (
    compared_text,
    cost_explorer,
    cost_view,
    default_states,
    kv_cache_explorer,
    kv_cache_view,
    matching_models,
    menu_choice,
    render_shape_html,
    shape_explorer,
    shape_view,
    update_timings,
)

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def text(html: str) -> str:
    """What a reader sees of an HTML fragment: tags removed, entities kept simple."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&quot;", '"').strip()


def heads_drawn(html: str) -> list[str]:
    """The heatmap titles ("head 0", "head 1", ...) in the explorer's heatmap grid."""
    return re.findall(r"head \d+", text(html))


# ---------------------------------------------------------------------------------------------
# Shape explorer: the pure function
# ---------------------------------------------------------------------------------------------


def test_shape_view_lists_every_shape_for_the_course_example():
    v = shape_view(8, 2, 3)
    assert v.ok and v.message == ""
    assert v.d_head == 4 and v.d_head_text == "d_head = 4"
    shapes = {s.step.split(":")[0]: s.shape for s in v.steps}
    assert shapes["input"] == (3, 8)
    assert shapes["project"] == (3, 8)
    assert shapes["split into heads (Q, K, V each)"] == (2, 3, 4)
    assert shapes["scores per head"] == (2, 3, 3)
    assert shapes["weights per head"] == (2, 3, 3)
    assert shapes["outputs per head"] == (2, 3, 4)
    assert shapes["concatenate the heads"] == (3, 8)
    assert shapes["output projection"] == (3, 8)
    assert [s.symbolic for s in v.steps][-1] == "(n, d_model)"


def test_the_explorer_starts_with_distinct_sizes():
    """n, d_head, h and d_model all differ, so (h, n, d_head) cannot be mistaken for (h, n, n)."""
    ex = shape_explorer()
    v = ex.view
    assert len({v.n, v.d_head, v.h, v.d_model}) == 4
    by_symbol = {s.symbolic: s.shape for s in v.steps}
    assert by_symbol["(h, n, d_head)"] != by_symbol["(h, n, n)"]


def test_the_input_is_written_x_as_in_the_lessons():
    v = shape_view(8, 2, 3)
    assert "project: Q = x W_Q (same for K, V)" in [s.step for s in v.steps]
    assert v.steps[0].code == "x"
    for html in (render_shape_html(v), shape_explorer()._repr_mimebundle_()["text/html"]):
        assert not re.search(r"\bX\b", text(html)), "the input is x (lowercase) in the lessons"


@pytest.mark.parametrize(
    "d_model,h,n", [(8, 1, 2), (8, 8, 3), (12, 3, 5), (768, 12, 8), (1024, 32, 8)]
)
def test_shape_view_shapes_follow_d_head(d_model, h, n):
    v = shape_view(d_model, h, n)
    d_head = d_model // h
    assert v.d_head_text == f"d_head = {d_head}"
    by_symbol = {s.symbolic: s.shape for s in v.steps}
    assert by_symbol["(h, n, d_head)"] == (h, n, d_head)
    assert by_symbol["(h, n, n)"] == (h, n, n)
    assert by_symbol["(n, h * d_head)"] == (n, d_model)


def test_parameters_do_not_change_with_h_but_d_head_does():
    views = [shape_view(64, h, 4) for h in (1, 2, 4, 8, 16, 32)]
    assert {v.params for v in views} == {attention_params(64, 1)} == {4 * 64**2 + 4 * 64}
    assert [v.d_head for v in views] == [64, 32, 16, 8, 4, 2]


def test_flops_are_split_into_projections_and_attention():
    v = shape_view(768, 12, 8)
    f = attention_flops(8, 768, 12)
    assert v.flops["projections"] == f["projections"] + f["output_projection"] == 8 * 8 * 768**2
    assert v.flops["attention"] == f["scores"] + f["weighted_sum"] == 4 * 8**2 * 768
    assert v.flops["total"] == f["total"]


def test_the_example_and_the_code_are_lesson_02s():
    """The heatmaps label the lesson's own sentence, and the code column writes the scaling."""
    nb = nbformat.read(ROOT / "notebooks" / "02_heads.ipynb", as_version=4)
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    words = re.search(r"^tokens = \[([^\]]*)\]", source, flags=re.M)
    assert words, "lesson 02 no longer defines its example tokens on one line"
    lesson_tokens = tuple(re.findall(r'"([^"]+)"', words.group(1)))
    assert W.TOKENS[: len(lesson_tokens)] == lesson_tokens
    codes = {s.step.split(":")[0]: s.code for s in shape_view(8, 2, 3).steps}
    assert codes["scores per head"] == "qh @ kh.swapaxes(-1, -2) / np.sqrt(d_head)"


def test_heatmap_example_is_seeded_labelled_and_row_stochastic():
    a, b = shape_view(8, 2, 3), shape_view(8, 2, 3)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.weights.shape == (2, 3, 3)
    np.testing.assert_allclose(a.weights.sum(axis=-1), 1.0)
    assert a.tokens == ("cats", "chase", "mice")
    assert not np.allclose(a.weights[0], a.weights[1]), "two heads should attend differently"


def test_at_most_eight_heads_are_drawn_with_a_note():
    v = shape_view(1024, 32, 8)
    assert v.weights.shape == (8, 8, 8)
    assert v.heads_note == "showing heads 0-7 of 32"
    assert shape_view(8, 2, 4).heads_note == ""


@pytest.mark.parametrize("d_model,h", [(8, 3), (12, 5), (1024, 7), (4, 32)])
def test_not_divisible_gives_a_plain_message_and_what_to_change(d_model, h):
    v = shape_view(d_model, h, 4)
    assert not v.ok
    assert "not divisible" in v.message
    assert f"d_model = {d_model}" in v.message and f"h = {h}" in v.message
    assert f"set h to a divisor of {d_model}" in v.message
    assert v.d_head_text == f"d_head = {d_model} / {h} is not a whole number"
    assert v.steps == () and v.weights is None
    assert "Traceback" not in render_shape_html(v)


def test_the_suggestions_in_the_message_are_valid():
    v = shape_view(8, 3, 4)
    assert "(1, 2, 4 or 8)" in v.message
    assert "multiple of 3 such as 12" in v.message  # the slider's nearest stop
    assert shape_view(12, 3, 4).ok
    # Every suggestion is a stop of the d_model slider that h divides.
    from mha_helpers.explorers.shape import D_MODEL_CHOICES

    for d_model, h in [(8, 3), (20, 8), (1024, 3), (100, 7)]:
        message = shape_view(d_model, h, 4).message
        if "such as" in message:
            suggested = [int(w) for w in re.findall(r"\d+", message.split("such as")[1])]
            assert suggested and all(m in D_MODEL_CHOICES and m % h == 0 for m in suggested)


# ---------------------------------------------------------------------------------------------
# Shape explorer: the widget
# ---------------------------------------------------------------------------------------------


def test_shape_explorer_sliders_and_defaults():
    ex = shape_explorer()
    descriptions = [c.description for c in ex.controls.values()]
    assert descriptions == ["d_model", "h", "n"]
    assert ex.values() == {"d_model": 8, "h": 2, "n": 3}
    assert "d_head = 4" in text(ex.d_head_label.value)
    assert ex.message.value == ""
    body = text(ex.body.value)
    assert "(3, 8)" in body and "(2, 3, 4)" in body and "(2, 3, 3)" in body
    assert "(2, 4, 4)" not in body
    assert "288" in text(ex.counts.value)  # 4 * 8^2 + 4 * 8 parameters
    assert heads_drawn(ex.heatmaps.value) == ["head 0", "head 1"]


def test_moving_sliders_updates_what_is_shown_and_recovers():
    ex = shape_explorer()
    ex.controls["h"].value = 3
    assert "d_head = 8 / 3 is not a whole number" in text(ex.d_head_label.value)
    assert "not divisible" in text(ex.message.value)
    assert ex.body.value == "" and ex.heatmaps.value == ""

    ex.controls["d_model"].value = 12  # 12 / 3 = 4: valid again
    assert "d_head = 4" in text(ex.d_head_label.value)
    assert ex.message.value == ""
    assert "(3, 3, 4)" in text(ex.body.value)
    assert heads_drawn(ex.heatmaps.value) == ["head 0", "head 1", "head 2"]

    ex.controls["n"].value = 6
    body = text(ex.body.value)
    assert "(3, 6, 6)" in body and "(6, 12)" in body
    assert '"cats chase mice that steal the"' in text(ex.heatmaps.value)


def test_redraws_replace_rather_than_pile_up():
    ex = shape_explorer()
    children = list(ex.children)
    for h in (1, 2, 3, 4, 8, 2):
        ex.controls["h"].value = h
    assert list(ex.children) == children
    assert heads_drawn(ex.heatmaps.value) == ["head 0", "head 1"]
    assert ex.view.h == 2


def test_set_values_redraws_once_and_rejects_unknown_names():
    ex = shape_explorer()
    before = ex.update_count
    ex.set_values(d_model=1024, h=32, n=8)
    assert ex.update_count == before + 1
    assert "d_head = 32" in text(ex.d_head_label.value)
    assert "showing heads 0-7 of 32" in text(ex.heatmaps.value)
    assert len(heads_drawn(ex.heatmaps.value)) == 8
    with pytest.raises(ValueError, match="unknown control"):
        ex.set_values(heads=4)


def test_a_failing_update_shows_a_message_not_a_traceback(monkeypatch):
    ex = shape_explorer()

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(shape_module, "shape_view", broken)  # the view its widget calls
    ex.controls["h"].value = 4
    assert "Could not update: boom" in text(ex.message.value)


def test_static_rendering_for_viewers_without_widgets():
    (picture, _), (view, view_metadata) = shape_explorer().output_bundles()
    assert WIDGET_VIEW not in picture and WIDGET_VIEW in view  # two outputs: picture, then widget
    html = picture["text/html"]
    assert "d_head = 4" in text(html) and "(2, 3, 4)" in text(html) and "head 1" in text(html)
    assert '"cats chase mice"' in text(html)
    assert "Run this cell to make its sliders live again" in text(html)
    assert not re.search(r"0x[0-9a-f]+|IPY_MODEL|[0-9a-f]{32}", html)
    assert picture["text/plain"].startswith("Shape explorer at d_model = 8, h = 2, n = 3.")
    assert view["text/plain"] == "" and view_metadata == {"mha_course": {"offline_html": ""}}
    # Deterministic for nbval: a fresh kernel numbers its first displayed shape explorer 1.
    assert 'data-mha-display="mha-shape-' in html
    fresh = shape_explorer()
    assert fresh.picture_bundle()["text/html"] == re.sub(r' data-mha-display="[^"]+"', "", html)


def test_explorers_use_a_fixed_model_id_and_a_new_one_retires_the_old():
    ids = {kind: W.stable_model_id(kind) for kind in ("shape", "kv_cache", "cost")}
    assert len(set(ids.values())) == 3 and all(
        re.fullmatch(r"[0-9a-f]{32}", i) for i in ids.values()
    )
    first = shape_explorer()
    assert first.model_id == ids["shape"]
    assert (
        kv_cache_explorer().model_id == ids["kv_cache"] and cost_explorer().model_id == ids["cost"]
    )
    second = shape_explorer(d_model=16)
    assert second.model_id == ids["shape"]
    assert first.comm is None and all(c.comm is None for c in first.controls.values())
    assert second.comm is not None
    # The benchmarks' timing explorers never retire the one a notebook shows.
    update_timings("shape", [{"h": 4}])
    assert second.comm is not None


def test_displaying_an_explorer_writes_the_picture_then_the_widget(monkeypatch):
    import IPython.display

    shown, updated = [], []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append((obj, kw)))
    monkeypatch.setattr(
        IPython.display, "update_display", lambda obj, **kw: updated.append((obj, kw))
    )
    ex = shape_explorer()
    ex._ipython_display_()
    (picture, picture_kw), (view, view_kw) = shown
    display_id = picture_kw["display_id"]
    assert picture_kw["raw"] and "mha-static-explorer" in picture["text/html"]
    assert view[WIDGET_VIEW]["model_id"] == W.stable_model_id("shape")
    assert view_kw["metadata"] == {"mha_course": {"offline_html": ""}}
    # While the live widget is shown, its style rule hides the picture (and only this one).
    assert f'[data-mha-display="{display_id}"]{{display:none}}' in ex._picture_style.value
    assert ex._picture_style in ex.children and ex._picture_style.layout.display == "none"
    # Moving a slider redraws the picture output too: it always shows the last state.
    ex.controls["h"].value = 4
    ((latest, latest_kw),) = updated
    assert latest_kw == {"raw": True, "display_id": display_id}
    assert "d_head = 2" in text(latest["text/html"]) and "h = 4" in latest["text/plain"]


def test_importing_the_module_does_not_start_ipywidgets():
    code = "import sys, mha_helpers.widgets; print('ipywidgets' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------
# KV-cache explorer
# ---------------------------------------------------------------------------------------------


def test_kv_cache_view_llama_2_70b_matches_the_fact_sheet():
    v = kv_cache_view(80, 64, 8, 128, 4096, 2)
    assert v.ok and v.kind == "GQA"
    assert (v.per_token_text, v.per_sequence_text) == ("320 KiB", "1.25 GiB")
    assert format_bytes(v.mha_per_sequence) == "10 GiB"
    assert "327,680 bytes per token" in v.formula_text


@pytest.mark.parametrize("g,kind", [(64, "MHA"), (8, "GQA"), (2, "GQA"), (1, "MQA")])
def test_kv_cache_kind_and_size_scale_with_kv_heads(g, kind):
    v = kv_cache_view(80, 64, g, 128, 4096, 2)
    assert v.kind == kind
    assert v.per_sequence == kv_cache_bytes(80, g, 128, 4096, 2)


def test_kv_cache_models_are_the_fact_sheet_models_that_generate():
    v = kv_cache_view(seq_len=4096, bytes_per_element=2)
    rows = {r.name: r for r in v.models}
    encoder_only = {"BERT-base", "BERT-large", "ViT-B/16"}
    assert {n for n, c in MODEL_CONFIGS.items() if c.encoder_only} == encoder_only
    assert set(rows) == set(MODEL_CONFIGS) - encoder_only
    # Encoder-decoder models are listed by their decoder, which holds the cache.
    assert rows["T5-base"].label == "T5-base decoder" and rows["T5-base"].num_layers == 12
    assert rows["Transformer base"].label == "Transformer base decoder"
    assert rows["GPT-2 small"].label == "GPT-2 small"
    expected = {
        "Llama 2 70B": ("320 KiB", "1.25 GiB"),
        "Llama 3 8B": ("128 KiB", "512 MiB"),
        "Llama 2 7B": ("512 KiB", "2 GiB"),
        "Falcon-7B": ("8 KiB", "32 MiB"),
        "Gemma 2B": ("18 KiB", "72 MiB"),
        "GPT-3 175B": ("4.5 MiB", "18 GiB"),
        "Mistral 7B": ("128 KiB", "512 MiB"),
    }
    for name, (per_token, per_seq) in expected.items():
        assert (format_bytes(rows[name].per_token), format_bytes(rows[name].per_sequence)) == (
            per_token,
            per_seq,
        )


def test_encoder_only_models_are_not_in_the_table_and_the_note_says_why():
    ex = kv_cache_explorer()
    ex.all_models.value = True  # every model, as in the picture
    shown = text(ex.models_table.value)
    table = shown.split("Configurations from")[0]
    for name in ("BERT-base", "BERT-large", "ViT-B/16"):
        assert name not in table
    assert "T5-base decoder" in table and "Transformer big decoder" in table
    note = shown.split("Configurations from")[1]
    assert "encoder-only models (BERT-base, BERT-large and ViT-B/16)" in note
    assert "keep no cache" in note and "the decoder's" in note
    labels = [label for label, _ in ex.preset.options]
    assert not any(name in label for label in labels for name in ("BERT", "ViT"))
    assert "T5-base decoder (MHA)" in labels and "DeepSeek-V2 (MLA)" in labels


@pytest.mark.parametrize(
    "theirs,yours,expected",
    [
        (12, 320, "26.7\u00d7 smaller"),
        (4608, 320, "14.4\u00d7 larger"),
        (320, 320, "same"),
        (8, 320, "40\u00d7 smaller"),
        (640, 320, "2\u00d7 larger"),
        (4_718_592, 32, "147,456\u00d7 larger"),
        (32, 4_718_592, "147,456\u00d7 smaller"),
        (0.5, 1, "2\u00d7 smaller"),
    ],
)
def test_compared_with_yours_uses_one_format(theirs, yours, expected):
    assert compared_text(theirs, yours) == expected


def test_compared_column_in_the_table():
    v = kv_cache_view(80, 64, 8, 128, 4096, 2)  # 320 KiB per token
    rows = {r.name: r.compared for r in v.models}
    assert rows["Llama 3 70B"] == "same"
    assert rows["GPT-3 175B"] == "14.4\u00d7 larger"  # 4.5 MiB / 320 KiB
    assert rows["Falcon-7B"] == "40\u00d7 smaller"  # 8 KiB
    assert rows["Transformer base"] == "26.7\u00d7 smaller"  # 12 KiB
    for r in v.models:
        assert re.fullmatch(r"same|[\d,.]+\u00d7 (larger|smaller)", r.compared), r
    html = W.render_kv_cache_html(v)
    assert "14.4\u00d7 larger" in html and not re.search(r">1/[\d.]+<", html)
    assert all(r.compared == "" for r in kv_cache_view(80, 64, 6, 128, 4096, 2).models)


def test_kv_cache_invalid_combination_gets_a_plain_message():
    v = kv_cache_view(80, 64, 6, 128, 4096, 2)
    assert not v.ok and v.per_token is None
    assert "not divisible" in v.message and "(1, 2, 4, 8, 16, 32 or 64)" in v.message
    assert "not divisible" in text(W.render_kv_cache_html(v))


def test_kv_cache_explorer_widget():
    ex = kv_cache_explorer()
    assert "320 KiB per token, 1.25 GiB per sequence" in text(ex.summary.value)
    assert ex.kind_buttons.value == "GQA"
    ex.controls["num_kv_heads"].value = 5  # a stop of the slider that does not divide 64
    assert "not divisible" in text(ex.summary.value) and ex.kind_buttons.value is None
    ex.controls["num_kv_heads"].value = 64
    assert "2.5 MiB per token, 10 GiB per sequence" in text(ex.summary.value)
    assert ex.kind_buttons.value == "MHA"
    ex.kind_buttons.value = "MQA"
    assert ex.controls["num_kv_heads"].value == 1
    ex.kind_buttons.value = "GQA"
    assert ex.controls["num_kv_heads"].value == 8
    ex.controls["bytes_per_element"].value = 4
    ex.controls["seq_len"].value = 8192
    assert "640 KiB per token, 5 GiB per sequence of 8,192 tokens" in text(ex.summary.value)


def test_kv_cache_explorer_loads_a_real_model():
    ex = kv_cache_explorer()
    ex.preset.value = "Falcon-7B"
    assert ex.values()["num_heads"] == 71 and ex.values()["num_kv_heads"] == 1
    assert ex.kind_buttons.value == "MQA"
    assert "8 KiB per token, 32 MiB per sequence" in text(ex.summary.value)
    ex.controls["num_layers"].value = 36  # a stop, and no longer Falcon-7B: the menu says so
    assert ex.preset.value == "" and ex.preset.label == "(set by hand)"
    ex.kind_buttons.value = "GQA"  # 71 is prime: no GQA grouping exists
    assert "has none" in text(ex.summary.value)
    assert ex.controls["num_kv_heads"].value == 1


def test_kv_cache_explorer_controls_that_do_not_apply_are_disabled_and_numbers_agree():
    """Issue 35: under MLA the KV-heads slider does nothing, so it is disabled (and enabled again
    for MHA/GQA/MQA); the context is written 16,384 as every other number; the loaded model's
    row comes first in the real models' table."""
    ex = kv_cache_explorer()
    assert not ex.controls["num_kv_heads"].disabled
    ex.preset.value = "DeepSeek-V2"
    assert ex.kind_buttons.value == "MLA" and ex.controls["num_kv_heads"].disabled
    # The loaded model's row first, in bold, right under "your settings" (in view even where
    # the table scrolls).
    rows = re.findall(r"<tr[^>]*>.*?</tr>", ex.models_table.value, re.S)
    assert "your settings" in text(rows[1]) and "DeepSeek-V2" in text(rows[2]), text(rows[2])
    assert "font-weight:bold" in rows[2] and "font-weight:bold" not in rows[3]
    ex.kind_buttons.value = "GQA"
    assert not ex.controls["num_kv_heads"].disabled
    ex.controls["num_kv_heads"].value = 64  # MHA: the menu's models with these settings...
    ex.preset.value = "Falcon-7B"  # ...then another model: its row is shown, first, in bold
    rows = re.findall(r"<tr[^>]*>.*?</tr>", ex.models_table.value, re.S)
    assert "Falcon-7B" in text(rows[2]) and "font-weight:bold" in rows[2]
    labels = [label for label, _ in ex.controls["seq_len"].options]
    assert "16,384" in labels and "16384" not in labels and ex.controls["seq_len"].value == 4096
    assert ex.controls["seq_len"].label == "4,096"


def test_the_live_models_table_lists_a_few_models_the_nearest_first_or_all_on_request():
    """Issue 35: nothing scrolls inside the explorer, so the live table lists KV_TABLE_ROWS
    models (the loaded one first, then the caches per token nearest yours) and says how many it
    leaves out; "show every model" lists them all, as the picture does."""
    from mha_helpers.explorers.kv_cache import KV_TABLE_ROWS, cache_models

    ex = kv_cache_explorer()  # Llama 2 70B
    body = ex.models_table.value.split("<tbody>")[1]
    rows = [text(r) for r in re.findall(r"<tr[^>]*>.*?</tr>", body, re.S)]
    assert len(rows) == 1 + KV_TABLE_ROWS and rows[0].startswith("your settings")
    assert rows[1].startswith("Llama 2 70B") and rows[2].startswith("Llama 3 70B")
    left_out = len(cache_models()) - KV_TABLE_ROWS
    assert f"{left_out} more models" in text(ex.models_table.value)
    # The others shown are the nearest caches: none left out is nearer than one shown.
    view = ex.view
    ratio = {r.label: abs(np.log(r.per_token / view.per_token)) for r in view.models}
    shown = set(re.findall(r"<tr[^>]*><td [^>]*>([^<]*)</td>", body)[1:])
    assert len(shown) == KV_TABLE_ROWS and shown <= set(ratio)
    near = [v for k, v in ratio.items() if k in shown]
    far = [v for k, v in ratio.items() if k not in shown]
    assert max(near) <= min(far)
    ex.all_models.value = True
    body = ex.models_table.value.split("<tbody>")[1]
    assert len(re.findall(r"<tr[^>]*>", body)) == 1 + len(cache_models())
    assert "more models" not in ex.models_table.value
    static = ex.output_bundles()[0][0]["text/html"]  # the picture lists every model
    assert all(c.name in static for c in cache_models())


def test_cost_explorer_headers_never_run_into_each_other():
    """In its 5.5em column, "projections" ran into the next header ("projectionsattention"):
    every header word of more than 10 letters (over about 5.5 em) has a soft hyphen where it may break."""
    html = cost_explorer().output_bundles()[0][0]["text/html"]
    headers = re.findall(r"<th [^>]*>([^<]*)</th>", html)
    words = [w for h in headers for w in h.split()]
    assert "projec\u00adtions" in words, headers
    assert all(len(w.replace("\u00ad", "")) <= 10 or "\u00ad" in w for w in words), words


def test_kv_cache_static_rendering():
    (picture, _), (view, _) = kv_cache_explorer().output_bundles()
    assert WIDGET_VIEW in view and WIDGET_VIEW not in picture
    html = picture["text/html"]
    assert "1.25 GiB" in text(html) and "Falcon-7B" in text(html)
    assert "These are the layers and heads of Llama 2 70B and Llama 3 70B" in text(html)
    assert kv_cache_explorer().picture_bundle() == kv_cache_explorer().picture_bundle()  # for nbval
    assert not re.search(r"0x[0-9a-f]+|IPY_MODEL|[0-9a-f]{32}", html)


def test_matching_models_and_menu_choice_are_pure():
    assert matching_models(80, 64, 8, 128) == ("Llama 2 70B", "Llama 3 70B")
    assert matching_models(12, 12, 12, 64) == ("GPT-2 small", "T5-base")  # not BERT-base, ViT
    assert matching_models(80, 64, 6, 128) == ()
    assert menu_choice(("Llama 2 70B", "Llama 3 70B"), "") == "Llama 2 70B"
    assert menu_choice(("Llama 2 70B", "Llama 3 70B"), "Llama 3 70B") == "Llama 3 70B"
    assert menu_choice(("Llama 2 70B",), "Falcon-7B") == "Llama 2 70B"
    assert menu_choice((), "Falcon-7B") == ""


def test_the_model_menu_names_the_model_the_settings_match():
    ex = kv_cache_explorer()  # starts at Llama 2 70B's settings
    assert ex.preset.value == "Llama 2 70B" and ex.preset.label == "Llama 2 70B (GQA)"
    ex.preset.value = "Llama 3 70B"  # same layers and heads: the choice is kept
    assert ex.preset.value == "Llama 3 70B"
    ex.controls["num_kv_heads"].value = 4  # matches no model
    assert ex.preset.value == "" and ex.preset.label == "(set by hand)"
    ex.controls["num_kv_heads"].value = 8  # back to Llama 2 70B's settings
    assert ex.preset.value == "Llama 2 70B"
    ex.preset.value = ""  # "(set by hand)" while the settings match a model: the menu says which
    assert ex.preset.value == "Llama 2 70B"
    ex.set_values(num_layers=32, num_heads=71, num_kv_heads=1, d_head=64)  # moved by hand
    assert ex.preset.value == "Falcon-7B"
    assert kv_cache_explorer(32, 32, 8, 128).preset.value == "Llama 3 8B"
    assert kv_cache_explorer(10, 10, 10, 64).preset.label == "(set by hand)"


def test_kv_cache_view_mla_and_sliding_window():
    """Lesson 08: an MLA latent replaces the K/V heads; a sliding window caps the positions."""
    ds = MODEL_CONFIGS["DeepSeek-V2"]
    v = kv_cache_view(60, 128, 128, 128, 4096, 2, latent_dim=576)
    assert v.ok and v.kind == "MLA" and v.per_token == ds.kv_cache_bytes_per_token() == 576 * 60 * 2
    assert v.per_sequence == ds.cache_bytes(4096) and v.matches == ("DeepSeek-V2",)
    assert v.mha_per_sequence == kv_cache_bytes(60, 128, 128, 4096, 2)
    assert "56.9\u00d7 smaller" in text(W.render_kv_cache_summary_html(v))  # 1 / 1.76 %
    # MLA ignores the KV heads, so a count that does not divide h is no error there.
    assert kv_cache_view(60, 128, 6, 128, 4096, 2, latent_dim=576).ok
    mistral = MODEL_CONFIGS["Mistral 7B"]
    w = kv_cache_view(32, 32, 8, 128, 32768, 2, window=4096)
    assert w.per_sequence == mistral.cache_bytes(32768) == w.per_token * 4096
    assert w.matches == ("Mistral 7B",) and "8\u00d7 less" in w.window_text
    assert kv_cache_view(32, 32, 8, 128, 32768, 2).matches == ("Llama 3 8B",)  # no window
    short = kv_cache_view(32, 32, 8, 128, 2048, 2, window=4096)
    assert (
        short.per_sequence == short.per_token * 2048 and "nothing is dropped" in short.window_text
    )
    assert not kv_cache_view(32, 32, 8, 128, 2048, 2, window=-1).ok
    html = W.render_kv_cache_html(
        kv_cache_view(60, 128, 128, 128, 4096, 2, latent_dim=576, window=1024)
    )
    assert "an MLA latent of 576, a sliding window of 1,024" in text(html)
    # Without a latent or a window the picture is what it was (lesson 05's stored output).
    assert "latent" not in text(W.render_kv_cache_html(kv_cache_view())).split("Real models")[0]


def test_kv_cache_explorer_mla_button_and_models_with_a_latent_or_a_window():
    ex = kv_cache_explorer()
    ex.preset.value = "DeepSeek-V2"
    assert ex.values()["latent_dim"] == 576 and ex.values()["window"] == 0
    assert ex.kind_buttons.value == "MLA"
    assert "67.5 KiB per token, 270 MiB per sequence" in text(ex.summary.value)
    ex.kind_buttons.value = "MHA"  # back to K and V heads: one per query head
    assert ex.values()["latent_dim"] == 0 and ex.values()["num_kv_heads"] == 128
    ex.kind_buttons.value = "MLA"
    assert ex.values()["latent_dim"] == 576 and ex.preset.value == "DeepSeek-V2"
    ex.preset.value = "Mistral 7B"
    assert ex.values()["window"] == 4096 and ex.values()["latent_dim"] == 0
    ex.controls["seq_len"].value = 32768
    assert "512 MiB per sequence of 32,768 tokens" in text(ex.summary.value)
    ex.controls["window"].value = 0  # no window: no longer Mistral 7B's settings
    assert "4 GiB per sequence" in text(ex.summary.value) and ex.preset.value == "Llama 3 8B"
    assert kv_cache_explorer(latent_dim=300).controls["latent_dim"].value == 300


# ---------------------------------------------------------------------------------------------
# Cost explorer
# ---------------------------------------------------------------------------------------------


def test_cost_view_is_flat_in_h_and_grows_with_n():
    v = cost_view(768, 12, 1024)
    assert v.ok and v.d_head == 64
    assert [r.label for r in v.by_heads][:6] == [1, 2, 3, 4, 6, 8]
    assert len({r.total for r in v.by_heads}) == 1
    assert len({r.params for r in v.by_heads}) == 1
    entries = [r.score_entries for r in v.by_heads]
    assert entries == sorted(entries) and entries[-1] == 64 * 1024**2
    current = next(r for r in v.by_heads if r.label == 12)
    # The fact sheet: GPT-2 small at n = 1024, 4.83 GFLOP projections, 3.22 GFLOP QK^T + AV.
    assert round(current.projections / 1e9, 2) == 4.83 and round(current.attention / 1e9, 2) == 3.22
    assert current.score_entries == 12 * 1024**2
    assert v.crossover_n == 1536
    at = cost_view(768, 12, 1536).by_tokens
    row = next(r for r in at if r.label == 1536)
    assert row.attention == row.projections


def test_cost_view_invalid_and_widget_recovery():
    assert "not divisible" in cost_view(768, 5, 1024).message
    ex = cost_explorer()
    assert "Versus h" in text(ex.summary.value)
    ex.controls["h"].value = 5
    assert "not divisible" in text(ex.summary.value)
    ex.controls["d_model"].value = 640
    assert "not divisible" not in text(ex.summary.value)
    assert "d_model = 640" in text(ex.summary.value)
    assert "d_model = 640" in text(ex.picture_bundle()["text/html"])  # the picture follows


# ---------------------------------------------------------------------------------------------
# The timing hook the benchmarks use (speed itself is measured in benchmarks/, not here)
# ---------------------------------------------------------------------------------------------


def test_update_timings_drives_the_explorer_through_every_state():
    states = [{"d_model": d, "h": h, "n": 3} for d in (8, 1024) for h in (2, 3, 32)]
    times = update_timings("shape", states, repeat=2)
    assert len(times) == 2 * len(states) and all(t > 0 for t in times)
    for name in ("kv_cache", "cost"):
        assert len(update_timings(name)) == len(default_states(name))


# ---------------------------------------------------------------------------------------------
# The lessons embed the explorers, and their stored outputs are never blank without widgets
# ---------------------------------------------------------------------------------------------

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _explorer_cells():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            for name in ("shape_explorer", "kv_cache_explorer", "cost_explorer"):
                if re.search(rf"^{name}\(.*\)\s*$", cell.source, re.MULTILINE):
                    yield path.name, name, cell


def test_each_explorer_is_embedded_in_a_lesson():
    embedded = {name for _, name, _ in _explorer_cells()}
    assert embedded == {"shape_explorer", "kv_cache_explorer", "cost_explorer"}
    assert any(
        nb.startswith("02") and name == "shape_explorer" for nb, name, _ in _explorer_cells()
    )


_KINDS = {"shape_explorer": "shape", "kv_cache_explorer": "kv_cache", "cost_explorer": "cost"}


def test_stored_explorer_outputs_are_a_picture_then_the_widget():
    for notebook, name, cell in _explorer_cells():
        outputs = [o for o in cell.get("outputs", []) if o.get("output_type") == "display_data"]
        assert len(outputs) == 2, f"{notebook}: run mha-course execute (picture + widget expected)"
        picture, view = (o["data"] for o in outputs)
        assert WIDGET_VIEW not in picture and "mha-static-explorer" in picture.get(
            "text/html", ""
        ), f"{notebook}: {name}() has no picture for viewers without widgets"
        assert "Run this cell to make its sliders live again" in text(picture["text/html"])
        assert view[WIDGET_VIEW]["model_id"] == W.stable_model_id(_KINDS[name]), (
            f"{notebook}: {name}() output does not use the explorer's fixed model id"
        )


def _widget_outputs(nb):
    return {
        o["data"][WIDGET_VIEW]["model_id"]: o
        for c in nb.cells
        for o in c.get("outputs", [])
        if WIDGET_VIEW in o.get("data", {})
    }


@pytest.mark.parametrize(
    "path",
    sorted(NOTEBOOKS.glob("*.ipynb")) + sorted((NOTEBOOKS.parent / "solutions").glob("*.ipynb")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_stored_widget_state_matches_the_outputs_or_is_absent(path):
    """Every widget output has a placeholder model under its id (none other), so a saved and
    reopened lesson never shows "Error displaying widget: model not found"."""
    nb = nbformat.read(path, as_version=4)
    outputs = _widget_outputs(nb)
    if not outputs:
        assert "widgets" not in nb.metadata, f"{path.name}: widget state but no widget output"
        return
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    roots = {k for k, v in state.items() if v["model_name"] == "HTMLModel"}
    assert roots == set(outputs), (
        f"{path.name}: widget state does not match the outputs (run mha-course execute)"
    )
    for model_id in roots:
        refs = [
            v[len("IPY_MODEL_") :]
            for v in state[model_id]["state"].values()
            if isinstance(v, str) and v.startswith("IPY_MODEL_")
        ]
        assert refs and all(r in state for r in refs)
        layout = next(state[r] for r in refs if state[r]["model_name"] == "LayoutModel")
        hidden = state[model_id]["state"]["value"] == ""
        assert hidden == (layout["state"].get("display") == "none")


# ---------------------------------------------------------------------------------------------
# Shape explorer: the layer's block diagram follows the sliders
# ---------------------------------------------------------------------------------------------


def _diagram_heads(html: str) -> set:
    return {int(i) for i in re.findall(r'data-role="w_q" data-head="(\d+)"', html)}


def test_the_diagram_is_redrawn_as_the_sliders_move():
    ex = shape_explorer()
    assert _diagram_heads(ex.diagram.value) == {0, 1}
    assert "d_model = 8, h = 2, d_head = 4" in text(ex.diagram.value)
    ex.controls["h"].value = 4
    assert _diagram_heads(ex.diagram.value) == {0, 1, 2, 3}
    assert "d_head = 2" in text(ex.diagram.value)
    ex.controls["h"].value = 3  # 8 / 3: no diagram, the message explains instead
    assert ex.diagram.value == "" and "not divisible" in text(ex.message.value)
    ex.set_values(d_model=768, h=12, n=5)
    assert _diagram_heads(ex.diagram.value) == set(range(12))
    assert "(5, 5)" in text(ex.diagram.value)


def test_the_static_rendering_includes_the_diagram():
    html = shape_explorer().picture_bundle()["text/html"]
    assert "mha-layer-diagram" in html and _diagram_heads(html) == {0, 1}


def test_listed_sliders_have_few_stops_and_the_tables_number_format():
    """Issue 35: d_model and h stop at listed values (a 90 px drag moved an IntSlider's d_model
    from 8 to 596; tests/test_browser.py measures the drag), at most 11 each; their labels are
    written as the tables write numbers (1,024 and 16,384)."""
    for ex in (shape_explorer(), cost_explorer()):
        for name in ("d_model", "h"):
            options = ex.controls[name].options
            assert 2 <= len(options) <= 11, (name, options)
            assert all(label == f"{value:,}" for label, value in options), options
    labels = [label for label, _ in cost_explorer().controls["n"].options]
    assert "16,384" in labels and "16384" not in labels
    ex = shape_explorer(d_model=40, h=5)  # a value off the list is added, not refused
    assert ex.controls["d_model"].value == 40 and ex.view.d_head == 8


def test_the_kv_cache_sliders_have_a_few_stops_and_every_model_on_them():
    """Issue 35: layers, query heads and KV heads were IntSliders over 1..128 (48-73 stops in a
    90 px drag). They step over round counts, and every model of the menu (and what the sharing
    buttons set) is a stop, so loading any model or pressing any button lands on one."""
    from mha_helpers.cost import MODEL_CONFIGS

    ex = kv_cache_explorer()
    stops = {
        n: [v for _, v in ex.controls[n].options]
        for n in ("num_layers", "num_heads", "num_kv_heads")
    }
    assert all(len(v) <= 20 for v in stops.values()), {n: len(v) for n, v in stops.items()}
    for name, cfg in MODEL_CONFIGS.items():
        if not cfg.has_kv_cache:
            continue
        options_before = {n: list(ex.controls[n].options) for n in stops}
        ex.preset.value = name
        assert ex.controls["num_layers"].value == cfg.num_layers, name
        assert ex.controls["num_heads"].value == cfg.num_heads, name
        for n in ("num_layers", "num_heads"):  # already stops; KV heads = h may be added
            assert list(ex.controls[n].options) == options_before[n], name
        for kind in ("MHA", "MQA", "GQA"):
            ex.kind_buttons.value = kind  # lands on a stop, or says why not (GQA for a prime h)
