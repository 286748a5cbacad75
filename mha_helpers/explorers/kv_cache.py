"""The KV-cache explorer: layers, query heads, KV heads, d_head, context, bytes -> cache sizes.

:func:`kv_cache_view` computes your cache (with :func:`mha_helpers.cost.kv_cache_bytes`) and
every real model's at the same context length and precision; :func:`render_kv_cache_html`
turns it into HTML: the headline sizes and the formula, then a table of real models. The small
decisions of the live widget are pure functions here too: which models keep a cache
(:func:`cache_models`), which ones the "load model" menu offers (:func:`menu_models`) and names
(:func:`matching_models`, :func:`menu_choice`), how a cache compares with yours
(:func:`compared_text`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from ..cost import MODEL_CONFIGS, format_bytes, kv_cache_bytes
from .common import (
    BOX,
    MUTED,
    SMALL,
    cell,
    divisors,
    esc,
    fmt_int,
    join_and,
    join_or,
    render_message_html,
    settings_line,
    table_style,
)
from .live import (
    CONTROL_WIDTH,
    SLIDER_STYLE,
    Explorer,
    choice_slider,
    column,
    html_box,
    live_class,
    row,
    widgets_module,
    with_value,
)

KV_D_HEADS = (32, 64, 80, 96, 128, 256)
KV_CONTEXTS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 131072)
KV_DTYPES = (
    ("fp32 (4 bytes)", 4),
    ("fp16/bf16 (2 bytes)", 2),
    ("int8/fp8 (1 byte)", 1),
    ("int4 (0.5 bytes)", 0.5),
)
# Multi-head latent attention (lesson 08): numbers cached per token and layer, d_c + d_h^R.
KV_LATENTS = (
    ("none", 0),
    ("256", 256),
    ("576 (DeepSeek-V2)", 576),
    ("1,024", 1024),
)
# A sliding window caps the cached positions (a rolling buffer; Mistral 7B keeps 4,096).
KV_WINDOWS = (("none", 0), ("1,024", 1024), ("2,048", 2048), ("4,096", 4096), ("8,192", 8192))
KV_MAX_HEADS = 128
KV_MAX_LAYERS = 128
# The sliders' stops (issue 35: IntSliders over 1..128 moved 48-73 stops in a 90 px drag): round
# counts, with every menu model's own value and what the sharing buttons set (h, 1 and the GQA
# choice for each query-head stop) added by _stops.
KV_LAYER_STOPS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
KV_HEAD_STOPS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128)
KV_KV_HEAD_STOPS = (1, 2, 4, 8, 16, 32, 64, 128)  # MHA's h is added when its button is pressed
# The live explorer lists this many real models (the loaded one first, then the nearest caches)
# unless "show every model" is on: with nothing scrolled inside it, it fits 1366 x 768.
KV_TABLE_ROWS = 5


@dataclass(frozen=True)
class ModelCacheRow:
    """One real model in the KV-cache table (only models that generate token by token)."""

    name: str  # the key in MODEL_CONFIGS
    label: str  # as shown: "T5-base decoder" for an encoder-decoder model, whose decoder caches
    kind: str
    num_layers: int
    num_heads: int
    num_kv_heads: int | None
    d_head: int
    per_token: int | float
    per_sequence: int | float
    source: str
    context: int | None = None  # the model's maximum context (None: not fixed by the source)
    compared: str = ""  # per token, against your settings: "26.7× smaller", "14.4× larger", "same"


@dataclass(frozen=True)
class KVCacheView:
    """Everything :func:`kv_cache_explorer` shows for one setting of its controls."""

    num_layers: int
    num_heads: int
    num_kv_heads: int
    d_head: int
    seq_len: int
    bytes_per_element: float
    ok: bool
    message: str
    kind: str = ""  # "MHA", "GQA" or "MQA"
    kind_text: str = ""
    per_token: int | float | None = None
    per_sequence: int | float | None = None
    per_token_text: str = ""
    per_sequence_text: str = ""
    formula_text: str = ""
    mha_per_sequence: int | float | None = None  # the same model with one KV head per query head
    models: tuple = ()  # ModelCacheRow for every model of MODEL_CONFIGS that keeps a KV cache
    matches: tuple = ()  # names of the menu's models whose layers and heads equal your settings
    latent_dim: int = 0  # MLA: numbers cached per token and layer (0: K and V heads)
    window: int = 0  # a sliding window of this many positions (0: none)
    window_text: str = ""


def _gqa_kv_heads(num_heads: int) -> int | None:
    """A typical GQA choice: 8 KV heads when possible, else the proper divisor nearest h / 8."""
    proper = [k for k in range(2, num_heads) if num_heads % k == 0]
    if not proper:
        return None
    return 8 if 8 in proper else min(proper, key=lambda k: (abs(k - num_heads / 8), k))


def _stops(name: str) -> list:
    """A slider's stops: its round counts, every menu model's value and, for the KV heads,
    the GQA button's choice for every query-head stop; an MHA model's (or the MHA button's) h
    is added as a stop when it is set (live.set_values)."""
    if name == "num_layers":
        return sorted({*KV_LAYER_STOPS, *(c.num_layers for c in cache_models())})
    heads = {*KV_HEAD_STOPS, *(c.num_heads for c in cache_models())}
    if name == "num_heads":
        return sorted(heads)
    gqa = {_gqa_kv_heads(h) for h in heads} - {None}
    shared = {c.num_kv_heads for c in cache_models() if c.num_kv_heads not in (None, c.num_heads)}
    return sorted({*KV_KV_HEAD_STOPS} | gqa | shared)


def _kind(num_heads: int, num_kv_heads: int) -> str:
    if num_kv_heads == num_heads:
        return "MHA"
    return "MQA" if num_kv_heads == 1 else "GQA"


def _label(cfg) -> str:
    """A model's name as the KV-cache explorer shows it: an encoder-decoder model's cache is its
    decoder's, so it is named that way ("T5-base decoder")."""
    return f"{cfg.name} decoder" if cfg.encoder_decoder else cfg.name


def cache_models() -> tuple:
    """The models of MODEL_CONFIGS that keep a KV cache: those that generate token by token.

    Encoder-only models (BERT, ViT) read the whole input at once and keep none.

    >>> names = [c.name for c in cache_models()]
    >>> "Llama 2 70B" in names, "BERT-base" in names
    (True, False)
    """
    return tuple(c for c in MODEL_CONFIGS.values() if c.has_kv_cache)


def menu_models() -> tuple:
    """The models the "load model" menu offers: every model that keeps a KV cache (with MLA's
    latent and a sliding window set from the model, lesson 08)."""
    return cache_models()


def _matches(num_layers, num_heads, num_kv_heads, d_head, latent_dim, window) -> tuple:
    """The menu's models whose every setting, latent and sliding window included, is yours."""
    if latent_dim:
        return tuple(
            c.name
            for c in menu_models()
            if (c.num_layers, c.num_heads, c.d_head, c.kv_latent_dim)
            == (num_layers, num_heads, d_head, latent_dim)
            and (c.sliding_window or 0) == window
        )
    return tuple(
        name
        for name in matching_models(num_layers, num_heads, num_kv_heads, d_head)
        if (MODEL_CONFIGS[name].sliding_window or 0) == window
    )


def matching_models(num_layers: int, num_heads: int, num_kv_heads: int, d_head: int) -> tuple:
    """Names of the menu's models with exactly these layers, query heads, KV heads and d_head.

    >>> matching_models(80, 64, 8, 128)
    ('Llama 2 70B', 'Llama 3 70B')
    >>> matching_models(80, 64, 4, 128)
    ()
    """
    settings = (num_layers, num_heads, num_kv_heads, d_head)
    return tuple(
        c.name
        for c in menu_models()
        if (c.num_layers, c.num_heads, c.num_kv_heads, c.d_head) == settings
    )


def menu_choice(matches: tuple, current: str = "") -> str:
    """The model the menu should show: the current choice while the settings still match it,
    else the first model they match, else "" ("(set by hand)").

    >>> seventy_b = ("Llama 2 70B", "Llama 3 70B")
    >>> menu_choice(seventy_b), menu_choice(seventy_b, current="Llama 3 70B")
    ('Llama 2 70B', 'Llama 3 70B')
    >>> menu_choice((), "Falcon-7B")
    ''
    """
    if current in matches:
        return current
    return matches[0] if matches else ""


def compared_text(theirs, yours) -> str:
    """How a cache compares with yours, always in one format.

    >>> compared_text(12, 320), compared_text(4608, 320), compared_text(320, 320)
    ('26.7× smaller', '14.4× larger', 'same')
    >>> compared_text(4_718_592, 32)
    '147,456× larger'
    """
    ratio = theirs / yours
    factor = ratio if ratio >= 1 else 1 / ratio
    text = f"{factor:,.0f}" if factor >= 100 else f"{factor:.3g}"
    if text == "1":
        return "same"
    return f"{text}\u00d7 " + ("larger" if ratio > 1 else "smaller")


def _model_rows(seq_len: int, bytes_per_element, yours_per_token=None) -> tuple:
    rows = []
    for cfg in cache_models():
        per_token = cfg.kv_cache_bytes_per_token(bytes_per_element)
        compared = "" if yours_per_token is None else compared_text(per_token, yours_per_token)
        rows.append(
            ModelCacheRow(
                cfg.name,
                _label(cfg),
                cfg.kind,
                cfg.num_layers,
                cfg.num_heads,
                cfg.num_kv_heads,
                cfg.d_head,
                per_token,
                cfg.cache_bytes(seq_len, bytes_per_element),
                cfg.source,
                cfg.context,
                compared,
            )
        )
    return tuple(rows)


def kv_cache_view(
    num_layers: int = 80,
    num_heads: int = 64,
    num_kv_heads: int = 8,
    d_head: int = 128,
    seq_len: int = 4096,
    bytes_per_element: float = 2,
    latent_dim: int = 0,
    window: int = 0,
) -> KVCacheView:
    """What the KV-cache explorer shows (pure). Sizes come from :func:`kv_cache_bytes`.

    >>> v = kv_cache_view(80, 64, 8, 128, 4096, 2)   # Llama 2 70B in fp16
    >>> v.kind, v.per_token_text, v.per_sequence_text
    ('GQA', '320 KiB', '1.25 GiB')
    >>> kv_cache_view(80, 64, 6, 128, 4096, 2).ok
    False
    >>> v = kv_cache_view(60, 128, 128, 128, 4096, 2, latent_dim=576)   # DeepSeek-V2's MLA
    >>> v.kind, v.per_token_text
    ('MLA', '67.5 KiB')
    >>> kv_cache_view(32, 32, 8, 128, 32768, 2, window=4096).per_sequence_text   # Mistral 7B
    '512 MiB'
    """
    args = (
        int(num_layers),
        int(num_heads),
        int(num_kv_heads),
        int(d_head),
        int(seq_len),
        bytes_per_element,
    )
    L, h, g, d_h, n, b = args
    latent, window = int(latent_dim), int(window)
    extra = {"latent_dim": latent, "window": window}
    matches = _matches(L, h, g, d_h, latent, window)
    if min(L, h, g, d_h, n) < 1 or not b > 0 or min(latent, window) < 0:
        message = "Every count must be at least 1 and bytes per element positive."
        return KVCacheView(*args, ok=False, models=(), matches=matches, message=message, **extra)
    if h % g and not latent:
        return KVCacheView(
            *args,
            ok=False,
            models=_model_rows(n, b),
            matches=matches,
            message=_not_divisible_message(h, g),
            **extra,
        )
    kept = min(n, window) if window else n  # a rolling buffer keeps the last `window` positions
    kind, kind_text, per_token, formula = _sharing(L, h, g, d_h, b, latent)
    per_sequence = per_token * kept
    return KVCacheView(
        *args,
        ok=True,
        message="",
        kind=kind,
        kind_text=kind_text,
        per_token=per_token,
        per_sequence=per_sequence,
        per_token_text=format_bytes(per_token),
        per_sequence_text=format_bytes(per_sequence),
        formula_text=formula,
        mha_per_sequence=kv_cache_bytes(L, h, d_h, kept, b),
        models=_model_rows(n, b, per_token),
        matches=matches,
        window_text=_window_text(window, n),
        **extra,
    )


def _not_divisible_message(h: int, g: int) -> str:
    """Why ``h`` query heads cannot share ``g`` KV heads, and the values of ``g`` that work."""
    fits = divisors(h, KV_MAX_HEADS)
    return (
        f"{h} query heads are not divisible by {g} KV heads: each KV head must serve "
        f"a group of the same number of query heads (query heads / KV heads must be a "
        f"whole number). To fix it, set the KV heads to a divisor of {h} "
        f"({join_or(fits)})."
    )


def _sharing(L, h, g, d_h, b, latent) -> tuple:
    """``(kind, kind_text, per_token, formula)``: how the query heads share keys and values
    (MHA, GQA, MQA, or MLA's latent when ``latent``), in words, the bytes cached per token, and
    the formula that gives them."""
    b_text = f"{b:g} byte" + ("" if b == 1 else "s")
    if latent:
        per_token = latent * L * b
        per_token = int(per_token) if float(per_token).is_integer() else per_token
        kind_text = (
            f"MLA: one latent of {latent} numbers per token and layer, from which the keys and "
            f"values of all {h} query heads are rebuilt (the KV-heads setting is not used)"
        )
        formula = (
            f"{latent} (latent d_c + RoPE key d_h^R) \u00d7 {L} layers \u00d7 {b_text} = "
            f"{fmt_int(per_token) if float(per_token).is_integer() else per_token} bytes per token"
        )
        return "MLA", kind_text, per_token, formula
    per_token = kv_cache_bytes(L, g, d_h, 1, b)
    kind = _kind(h, g)
    if kind == "MHA":
        kind_text = f"MHA: every one of the {h} query heads has its own key and value head"
    elif kind == "MQA":
        kind_text = f"MQA: all {h} query heads share a single key and value head"
    else:
        kind_text = f"GQA: {g} KV heads, each shared by a group of {h // g} query heads"
    formula = (
        f"2 (K and V) \u00d7 {L} layers \u00d7 {g} KV heads \u00d7 {d_h} (d_head) \u00d7 "
        f"{b_text} = {fmt_int(per_token) if float(per_token).is_integer() else per_token} "
        f"bytes per token"
    )
    return kind, kind_text, per_token, formula


def _window_text(window: int, n: int) -> str:
    """What a sliding window keeps of ``n`` positions (``""`` without one)."""
    if window and window < n:
        return (
            f"Sliding window of {fmt_int(window)}: a rolling buffer keeps only the last "
            f"{fmt_int(window)} of the {fmt_int(n)} positions, {n / window:.3g}\u00d7 less than "
            f"keeping them all."
        )
    if window:
        return (
            f"Sliding window of {fmt_int(window)}: longer than the {fmt_int(n)} tokens, so "
            f"nothing is dropped yet."
        )
    return ""


def render_kv_cache_summary_html(view: KVCacheView) -> str:
    """The headline: your cache per token and per sequence, what kind of sharing, the formula."""
    if not view.ok:
        return render_message_html(view.message)
    saving = same = ""
    if view.matches:
        labels = [_label(MODEL_CONFIGS[name]) for name in view.matches]
        same = (
            f'<div class="mha-kv-same">These are the layers and heads of '
            f"{esc(join_and(labels))}.</div>"
        )
    if view.kind == "MLA":
        ratio = compared_text(view.per_sequence, view.mha_per_sequence).replace("same", "no")
        saving = (
            f"<div>With a key and a value head per query head (MHA) the cache would be "
            f"{format_bytes(view.mha_per_sequence)}: the latent makes it {ratio}.</div>"
        )
    elif view.kind != "MHA":
        saving = (
            f"<div>With one KV head per query head (MHA) the cache would be "
            f"{format_bytes(view.mha_per_sequence)}: sharing makes it "
            f"{view.num_heads // view.num_kv_heads}\u00d7 smaller.</div>"
        )
    if view.window_text:
        saving += f'<div class="mha-kv-window">{esc(view.window_text)}</div>'

    return (
        f"{BOX}"
        f'<div style="font-size:1.15em;font-weight:bold" class="mha-kv-total">'
        f"KV cache: {esc(view.per_token_text)} per token, {esc(view.per_sequence_text)} per "
        f"sequence of {fmt_int(view.seq_len)} tokens</div>"
        f"<div>{esc(view.kind_text)}.</div>"
        f'<div style="{MUTED};{SMALL}">{esc(view.formula_text)}; multiply by the number of '
        f"tokens and by the batch size.</div>{saving}{same}</div>"
    )


def render_kv_cache_table_html(view: KVCacheView, rows_shown: int | None = None) -> str:
    """Real models at the same context length and bytes per element, with your settings first.
    Narrow enough for a 1280 px page: short headers that wrap, compact cells. With
    ``rows_shown`` (the live explorer, which must fit a 1366 x 768 screen with nothing scrolled
    inside it) only that many models: those your settings match (the model loaded from the
    menu) first, then the models whose cache per token is nearest yours; a line says how many
    are left out. Without it (the picture, the website) every model."""
    td, tl = cell("right", "1px 5px"), cell("left", "1px 5px")
    headers = (
        "model",
        "type",
        "layers",
        "query heads",
        "KV heads",
        "d_head",
        "context",
        "per token",
        f"{fmt_int(view.seq_len)} tokens",
        "per token vs yours",
    )
    header = "".join(
        f'<th scope="col" style="{tl if i < 2 else td};vertical-align:bottom">{t}</th>'
        for i, t in enumerate(headers)
    )
    body = [_your_row_html(view, td, tl)] if view.ok else []
    model_rows, beyond, left_out = _models_rows_html(view, td, tl, rows_shown)
    body += model_rows
    footnote = (
        " * longer than the model's context: it cannot use that many tokens." if beyond else ""
    )
    more = ""
    if left_out:
        more = (
            f'<div style="font-size:12px" class="mha-kv-more">{left_out} more models, further '
            f"from your cache per token: \u201cshow every model\u201d lists them all.</div>"
        )
    enc_dec = [c.name for c in MODEL_CONFIGS.values() if c.encoder_decoder]
    enc_only = [c.name for c in MODEL_CONFIGS.values() if c.encoder_only]
    return (
        f'<div class="mha-kv-models" style="line-height:1.4">'
        f'<div style="font-weight:bold">Real models at the same context length and '
        f"bytes per element</div>"
        f'<table style="{table_style("font-size:12.5px")}"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{more}"
        f'<div style="font-size:11px;{MUTED};max-width:60em">Configurations from '
        f"mha_helpers.MODEL_CONFIGS (hover a name for its primary source). Only models that "
        f"generate token by token keep a KV cache. For the encoder-decoder models "
        f"({esc(join_and(enc_dec))}) the cache and the layers counted are the decoder's; "
        f"encoder-only models ({esc(join_and(enc_only))}) read the whole input at once and keep "
        f"no cache, so they are not listed. DeepSeek-V2 caches a compressed latent instead of K "
        f"and V heads; Mistral 7B's rolling buffer caps its cache at 4,096 positions."
        f"{footnote}</div></div>"
    )


def _your_row_html(view: KVCacheView, td: str, tl: str) -> str:
    """The table's first row, in bold: the settings of the sliders."""
    return (
        f'<tr style="font-weight:bold"><td style="{tl}">your settings</td><td style="{tl}">'
        f'{view.kind}</td><td style="{td}">{view.num_layers}</td><td style="{td}">'
        f'{view.num_heads}</td><td style="{td}">{"latent" if view.latent_dim else view.num_kv_heads}</td><td style="{td}">'
        f'{view.d_head}</td><td style="{td}"></td>'
        f'<td style="{td};white-space:nowrap">{view.per_token_text}</td>'
        f'<td style="{td};white-space:nowrap">{view.per_sequence_text}</td>'
        f'<td style="{td}"></td></tr>'
    )


def _shown_models(view: KVCacheView, rows_shown: int | None) -> tuple:
    """The models the table lists, in order: those your settings match first (stable: else as
    listed); with ``rows_shown``, only that many, the rest chosen by how near their cache per
    token is to yours (by ratio; as listed when yours is unknown)."""
    matches = set(view.matches)
    ordered = sorted(view.models, key=lambda r: r.name not in matches)
    if rows_shown is None or len(ordered) <= rows_shown:
        return tuple(ordered)
    first = [r for r in ordered if r.name in matches][:rows_shown]
    rest = [r for r in ordered if r.name not in matches]
    if view.ok and view.per_token:
        yours = float(view.per_token)
        rest.sort(key=lambda r: abs(math.log(float(r.per_token) / yours)))
    return tuple(first + rest[: rows_shown - len(first)])


def _models_rows_html(
    view: KVCacheView, td: str, tl: str, rows_shown: int | None = None
) -> tuple[list, bool, int]:
    """A row per real model shown, whether any is marked as used beyond its context, and how
    many are left out. The models your settings match (the one loaded from the menu) come
    first, in bold, right under your settings."""
    rows = []
    beyond = False
    nowrap = ";white-space:nowrap"
    matches = set(view.matches)
    shown = _shown_models(view, rows_shown)
    for r in shown:
        kv = "latent" if r.num_kv_heads is None else str(r.num_kv_heads)
        mark = ""
        if r.context is not None and view.seq_len > r.context:
            mark, beyond = " *", True
        bold = ' style="font-weight:bold"' if r.name in matches else ""
        rows.append(
            f'<tr{bold}><td style="{tl};min-width:7em" title="{esc(r.source)}">{esc(r.label)}</td>'
            f'<td style="{tl}">{r.kind}</td>'
            f'<td style="{td}">{r.num_layers}</td><td style="{td}">{r.num_heads}</td>'
            f'<td style="{td}">{kv}</td><td style="{td}">{r.d_head}</td>'
            f'<td style="{td}">{"" if r.context is None else fmt_int(r.context)}</td>'
            f'<td style="{td}{nowrap}">{format_bytes(r.per_token)}</td>'
            f'<td style="{td}{nowrap}">{format_bytes(r.per_sequence)}{mark}</td>'
            f'<td style="{td}{nowrap}">{r.compared}</td></tr>'
        )
    return rows, beyond, len(view.models) - len(shown)


def render_kv_cache_html(view: KVCacheView, include_settings: bool = True) -> str:
    """The KV-cache explorer's output as HTML: your configuration, then the real models."""
    settings = ""
    if include_settings:
        settings = settings_line(
            f"KV-cache explorer at {view.num_layers} layers, {view.num_heads} query heads, "
            f"{view.num_kv_heads} KV heads, d_head = {view.d_head}, {fmt_int(view.seq_len)} "
            f"tokens, {view.bytes_per_element:g} bytes per element"
            + (f", an MLA latent of {view.latent_dim}" if view.latent_dim else "")
            + (f", a sliding window of {fmt_int(view.window)}" if view.window else "")
            + "."
        )
    return (
        f'<div class="mha-kv-picture">{settings}{render_kv_cache_summary_html(view)}'
        f'<div style="height:6px"></div>{render_kv_cache_table_html(view)}</div>'
    )


# ---------------------------------------------------------------------------------------------
# The widget: layers, heads, KV heads, d_head, context, bytes
# ---------------------------------------------------------------------------------------------


def kv_cache_explorer(
    num_layers: int = 80,
    num_heads: int = 64,
    num_kv_heads: int = 8,
    d_head: int = 128,
    seq_len: int = 4096,
    bytes_per_element: float = 2,
    latent_dim: int = 0,
    window: int = 0,
):
    """Controls for layers, query heads, KV heads (MHA / GQA / MQA), d_head, context length and
    bytes per element; shows the cache per token and per sequence, and real models' caches.
    ``latent_dim`` > 0 caches an MLA latent of that many numbers per token and layer instead of
    K and V heads (DeepSeek-V2: 576); ``window`` > 0 keeps only the last ``window`` positions
    (a sliding window's rolling buffer; Mistral 7B: 4096). Both come from lesson 08.

    The defaults are Llama 2 70B in fp16 (1.25 GiB at 4096 tokens).
    """
    return _widget_class()(
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        d_head=d_head,
        seq_len=seq_len,
        bytes_per_element=bytes_per_element,
        latent_dim=latent_dim,
        window=window,
    )


@lru_cache(maxsize=None)
def _widget_class():
    """The widget class (made on first use: importing this module does not import ipywidgets)."""
    return live_class(KVCacheExplorer)


class KVCacheExplorer(Explorer):
    """Layers, query heads, KV heads, d_head, context length and bytes -> cache sizes."""

    title = "KV-cache explorer"
    kind = "kv_cache"

    def __init__(
        self,
        num_layers=80,
        num_heads=64,
        num_kv_heads=8,
        d_head=128,
        seq_len=4096,
        bytes_per_element=2,
        latent_dim=0,
        window=0,
    ):
        W = widgets_module()
        self.summary = html_box()
        self.preset, self.kind_buttons = _menus()
        controls = _controls(
            num_layers,
            num_heads,
            num_kv_heads,
            d_head,
            seq_len,
            bytes_per_element,
            latent_dim,
            window,
        )
        self.models_table = html_box(width="auto")
        self.all_models = W.ToggleButton(
            value=False,
            description=f"show every model ({len(cache_models())})",
            tooltip="list every real model in the table, not only the nearest ones",
            layout=W.Layout(width="auto", margin="0 0 4px 0"),
        )
        self.summary.layout = W.Layout(flex="1 1 300px", min_width="0")
        # The controls in a column beside the headline sizes; the real models below.
        c = controls
        left = column(
            self.preset,
            c["num_layers"],
            c["num_heads"],
            c["num_kv_heads"],
            W.HBox([c["d_head"], c["latent_dim"]], layout=W.Layout(width=CONTROL_WIDTH)),
            c["seq_len"],
            W.HBox([c["bytes_per_element"], c["window"]], layout=W.Layout(width=CONTROL_WIDTH)),
            self.kind_buttons,
            width=CONTROL_WIDTH,
        )
        super().__init__(children=[row(left, self.summary), self.models_table, self.all_models])
        self.add_class("mha-kv-cache-explorer")
        self._setup(controls)
        self.preset.observe(self._load_preset, names="value")
        self.kind_buttons.observe(self._set_kind, names="value")
        self.all_models.observe(lambda change: self.refresh(), names="value")
        self.refresh()

    def _load_preset(self, change):
        cfg = MODEL_CONFIGS.get(change["new"])
        if cfg is not None:
            self.set_values(
                num_layers=cfg.num_layers,
                num_heads=cfg.num_heads,
                # MLA has no KV heads: the slider keeps a valid value it does not use.
                num_kv_heads=cfg.num_heads if cfg.num_kv_heads is None else cfg.num_kv_heads,
                d_head=cfg.d_head,
                latent_dim=cfg.kv_latent_dim or 0,
                window=cfg.sliding_window or 0,
            )
        else:  # "(set by hand)" chosen: the menu goes back to a model the settings match
            self.refresh()

    def _set_kind(self, change):
        h = self.controls["num_heads"].value
        if change["new"] == "MLA":
            latent = self.controls["latent_dim"].value or 576  # DeepSeek-V2's 512 + 64
            g = self.controls["num_kv_heads"].value
            self.set_values(latent_dim=latent, num_kv_heads=g if h % g == 0 else h)
            return
        g = {"MHA": h, "MQA": 1, "GQA": _gqa_kv_heads(h)}.get(change["new"])
        if g is not None:
            self.set_values(num_kv_heads=g, latent_dim=0)
        else:  # GQA needs a divisor of h strictly between 1 and h; say so
            self.refresh()
            if change["new"] == "GQA":
                self.summary.value = (
                    render_message_html(
                        f"GQA needs a number of KV heads strictly between 1 and {h} that divides "
                        f"{h}, and {h} has none. Change the query heads first."
                    )
                    + self.summary.value
                )

    def _view(self, **values):
        return kv_cache_view(**values)

    def _show(self, view):
        self.summary.value = render_kv_cache_summary_html(view)
        # MLA caches a latent, not K and V heads: the KV-heads slider does not apply then.
        self.controls["num_kv_heads"].disabled = bool(view.ok and view.latent_dim)
        # A few models unless "show every model" is on: the explorer fits a 1366 x 768 screen
        # with nothing scrolled inside it; the loaded model's row comes first, always in view.
        table = render_kv_cache_table_html(
            view, rows_shown=None if self.all_models.value else KV_TABLE_ROWS
        )
        if self.models_table.value != table:
            self.models_table.value = table
        # Keep the sharing buttons and the model menu truthful without triggering them.
        kind = view.kind if view.ok else None
        if self.kind_buttons.value != kind:
            self.kind_buttons.unobserve(self._set_kind, names="value")
            self.kind_buttons.value = kind
            self.kind_buttons.observe(self._set_kind, names="value")
        choice = menu_choice(view.matches, self.preset.value)
        if self.preset.value != choice:
            self.preset.unobserve(self._load_preset, names="value")
            self.preset.value = choice
            self.preset.observe(self._load_preset, names="value")

    def _show_error(self, text):
        self.summary.value = render_message_html(text)

    def _static_html(self, view):
        return render_kv_cache_html(view)


def _menus():
    """The model menu ("load model": the real models' settings) and the sharing buttons (MHA,
    GQA, MQA, MLA), both kept truthful by the explorer as the sliders move."""
    W = widgets_module()
    presets = [("(set by hand)", "")] + [(f"{_label(c)} ({c.kind})", c.name) for c in menu_models()]
    preset = W.Dropdown(
        options=presets,
        value="",
        description="load model",
        style=SLIDER_STYLE,
        layout=W.Layout(width=CONTROL_WIDTH),
    )
    kind_buttons = W.ToggleButtons(
        options=["MHA", "GQA", "MQA", "MLA"],
        value=None,
        description="sharing",
        style={**SLIDER_STYLE, "button_width": "56px"},
        layout=W.Layout(width=CONTROL_WIDTH),
        tooltips=[
            "one KV head per query head",
            "a few KV heads (8 when possible)",
            "a single KV head",
            "a compressed latent per token (DeepSeek-V2's multi-head latent attention)",
        ],
    )
    kind_buttons.add_class("widget-inline-hbox")  # its label beside the buttons
    return preset, kind_buttons


def _controls(
    num_layers, num_heads, num_kv_heads, d_head, seq_len, bytes_per_element, latent_dim, window
) -> dict:
    """The explorer's controls, by the name of the :func:`kv_cache_view` argument each sets.
    A value that is not on a menu (a ``d_head``, a context) is added to it."""
    W = widgets_module()
    d_heads = sorted(set(KV_D_HEADS) | {int(d_head)})
    contexts = sorted(set(KV_CONTEXTS) | {int(seq_len)})
    controls = {
        "num_layers": choice_slider("layers", num_layers, _stops("num_layers")),
        "num_heads": choice_slider("query heads", num_heads, _stops("num_heads")),
        "num_kv_heads": choice_slider("KV heads", num_kv_heads, _stops("num_kv_heads")),
        "d_head": W.Dropdown(
            options=d_heads,
            value=int(d_head),
            description="d_head",
            style=SLIDER_STYLE,
            layout=W.Layout(width=CONTROL_WIDTH),
        ),
        "seq_len": W.SelectionSlider(
            # Labelled as every other number of the explorer is written: 16,384, not 16384.
            options=[(fmt_int(c), c) for c in contexts],
            value=int(seq_len),
            description="context",
            style=SLIDER_STYLE,
            continuous_update=True,
            layout=W.Layout(width=CONTROL_WIDTH),
        ),
        "bytes_per_element": W.Dropdown(
            options=list(KV_DTYPES),
            value=bytes_per_element,
            description="bytes",
            style=SLIDER_STYLE,
            layout=W.Layout(width=CONTROL_WIDTH),
        ),
        # Lesson 08: MLA's latent (d_c + d_h^R numbers per token and layer) and a
        # sliding window. Each shares a row with a short menu (d_head, bytes), so the
        # explorer is no taller than before and still fits a laptop screen.
        "latent_dim": W.Dropdown(
            options=with_value(KV_LATENTS, int(latent_dim)),
            value=int(latent_dim),
            description="latent",
            style={"description_width": "40px"},
            layout=W.Layout(width="210px"),
        ),
        "window": W.Dropdown(
            options=with_value(KV_WINDOWS, int(window)),
            value=int(window),
            description="window",
            style={"description_width": "50px"},
            layout=W.Layout(width="138px"),
        ),
    }
    controls["d_head"].layout.width = "128px"  # with the latent's 210: clear of the chevrons
    controls["d_head"].style.description_width = "50px"
    controls["bytes_per_element"].layout.width = "200px"
    controls["bytes_per_element"].style.description_width = "40px"
    return controls
