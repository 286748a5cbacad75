"""mha_helpers: the small NumPy helper package behind the multi-head attention course.

Every lesson imports from here. The package only re-exports the public names of its modules:

* ``attention``: softmax, causal_mask, scaled_dot_product_attention
* ``heads``: split_heads, merge_heads, multi_head_attention, grouped_query_attention
* ``shapes``: check_shape, head_width
* ``plots``: plot_attention, plot_heads
* ``cost``: attention_params, attention_flops, kv_cache_bytes, format_bytes, MODEL_CONFIGS
* ``tiling``: tiled_attention, tiled_attention_backward, online_softmax_update, attention_io
  (FlashAttention's tiling, and the weights recomputed in the backward pass)
* ``scale``: step_cost, roofline_time, batch_capacity, H100_SXM (a whole model's step on an
  accelerator, and how many sequences fit beside its weights)
* ``latent``: mla_attention and its pieces (multi-head latent attention, DeepSeek-V2)
* ``windows``: sliding_window_mask, sink_window_mask, receptive_field, RollingKVCache,
  streaming_attention (positions assigned within the cache, StreamingLLM)
* ``pytorch``: pytorch_state_dict, from_pytorch_state_dict, to_pytorch_attn_mask,
  to_pytorch_key_padding_mask (the same layer in ``torch.nn.MultiheadAttention``; NumPy only)

Imported from their own modules (so importing the math stays light):

* ``widgets``: shape_explorer, cost_explorer, kv_cache_explorer (ipywidgets), thin layers over
  ``explorers``: the pure functions from slider values to what is shown
* ``grading``: check, score_summary (learners); release and the grader (instructors)
* ``backward``, ``training``, ``tasks``: the backward pass, a tiny trainable attention-only model
  and the toy tasks of lesson 06
* ``trained``: small models the course trained with that code, shipped as package data
  (``load_trained_model``; lessons 02 and 03 show their heads)
* ``environment``: the set-up check of the start-here notebook
"""

from .attention import causal_mask, scaled_dot_product_attention, softmax
from .cost import (
    MODEL_CONFIGS,
    ModelConfig,
    attention_flops,
    attention_params,
    format_bytes,
    kv_cache_bytes,
)
from .heads import grouped_query_attention, merge_heads, multi_head_attention, split_heads
from .latent import (
    mla_absorption_costs,
    mla_attention,
    mla_attention_from_cache,
    mla_cache_elements,
    mla_fold_weights,
    mla_latent_cache,
    mla_weights,
    rope,
)
from .plots import plot_attention, plot_heads
from .pytorch import (
    from_pytorch_state_dict,
    pytorch_state_dict,
    to_pytorch_attn_mask,
    to_pytorch_key_padding_mask,
)
from .scale import H100_SXM, batch_capacity, roofline_time, step_cost
from .shapes import check_shape, head_width, kv_group_size
from .tiling import (
    attention_io,
    online_softmax_update,
    tiled_attention,
    tiled_attention_backward,
)
from .windows import (
    RollingKVCache,
    receptive_field,
    sink_window_mask,
    sliding_window_mask,
    streaming_attention,
)

__version__ = "0.1.0"

__all__ = [
    "softmax",
    "causal_mask",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "grouped_query_attention",
    "check_shape",
    "head_width",
    "kv_group_size",
    "plot_attention",
    "plot_heads",
    "attention_params",
    "attention_flops",
    "kv_cache_bytes",
    "format_bytes",
    "ModelConfig",
    "MODEL_CONFIGS",
    "pytorch_state_dict",
    "from_pytorch_state_dict",
    "to_pytorch_attn_mask",
    "to_pytorch_key_padding_mask",
    "tiled_attention",
    "tiled_attention_backward",
    "online_softmax_update",
    "attention_io",
    "step_cost",
    "roofline_time",
    "H100_SXM",
    "batch_capacity",
    "mla_attention",
    "mla_attention_from_cache",
    "mla_fold_weights",
    "mla_absorption_costs",
    "mla_latent_cache",
    "mla_weights",
    "mla_cache_elements",
    "rope",
    "sliding_window_mask",
    "sink_window_mask",
    "receptive_field",
    "RollingKVCache",
    "streaming_attention",
]
