"""Toy tasks for lesson 06 and the measurements that say what a trained head does.

Two tasks, each a batch generator ``make_batch(rng, batch_size) -> (tokens, targets)`` for
:func:`mha_helpers.training.train` (targets are ``-1`` where there is no loss):

* the **vote table** task needs two relationships at once. At every position ``t >= 2`` the
  answer is the class ``c`` with the largest ``first[x_0, c] + previous[x_(t-1), c]``: two fixed
  random tables each cast a vote, one indexed by the *first* token, one by the *previous*
  token. One head can attend to one place at a time; two heads can each take one.
* the **repeated segment** task: ``BOS``, a random prefix, then a segment of ``m`` tokens
  written twice, ``m`` drawn per sequence. Inside the second copy the next token can be read off
  the first copy, which is what an induction head does.

Roles are measured, never assumed: :func:`role_scores` gives each head's mean attention on
the previous and the first token, :func:`induction_scores` how much attention goes to
the position right after an earlier copy of the current token, and
:func:`duplicate_token_scores` how much goes to the earlier copies themselves.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "make_vote_tables",
    "vote_table_batch",
    "vote_table_task",
    "repeated_segment_batch",
    "repeated_segment_task",
    "segment_positions",
    "role_scores",
    "head_roles",
    "previous_token_score",
    "induction_scores",
    "duplicate_token_scores",
    "table_correlation",
]


def make_vote_tables(vocab_size=16, seed=0):
    """Two fixed random ``(vocab, vocab)`` tables ``(first, previous)`` with ``N(0, 1)`` entries."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(vocab_size, vocab_size)), rng.normal(size=(vocab_size, vocab_size))


def vote_table_batch(rng, batch_size, tables, seq_len=10):
    """Random tokens and their vote-table targets.

    Returns ``tokens`` ``(batch, seq_len)`` and ``targets`` ``(batch, seq_len)`` with
    ``targets[:, t] = argmax_c first[x_0, c] + previous[x_(t-1), c]`` for ``t >= 2`` and ``-1``
    at positions 0 and 1 (where "first" and "previous" are not two different tokens).

    >>> tables = (np.eye(3), np.zeros((3, 3)))
    >>> tokens, targets = vote_table_batch(np.random.default_rng(0), 1, tables, seq_len=4)
    >>> bool((targets[0, 2:] == tokens[0, 0]).all()), targets[0, :2].tolist()
    (True, [-1, -1])
    """
    first, previous = tables
    vocab = first.shape[0]
    tokens = rng.integers(0, vocab, size=(batch_size, seq_len))  # (batch, n)
    votes = first[tokens[:, :1]] + previous[tokens[:, 1:-1]]  # (batch, n - 2, vocab)
    targets = np.full((batch_size, seq_len), -1)  # (batch, n)
    targets[:, 2:] = votes.argmax(axis=-1)
    return tokens, targets


def vote_table_task(vocab_size=16, seq_len=10, table_seed=0):
    """``make_batch(rng, batch_size)`` for the vote-table task with tables fixed by ``table_seed``.

    The two tables are kept as ``make_batch.tables`` (first, previous), so a lesson can ask
    what each vote alone would answer.
    """
    tables = make_vote_tables(vocab_size, table_seed)

    def make_batch(rng, batch_size):
        return vote_table_batch(rng, batch_size, tables, seq_len)

    make_batch.tables = tables
    return make_batch


def repeated_segment_batch(
    rng, batch_size, vocab_size=24, seq_len=20, min_len=4, max_len=9, distinct=False
):
    """Sequences ``BOS, prefix, segment, segment`` and targets on the second copy.

    Token ids ``0 .. vocab_size - 1`` are ordinary tokens; ``BOS = vocab_size`` opens every
    sequence (so the model's vocabulary has ``vocab_size + 1`` entries). The segment length
    ``m`` is drawn per sequence from ``[min_len, max_len]``, so the answer is never at a fixed
    distance. ``targets[t]`` is the next token for every ``t`` inside the second copy that has
    a next token (``m - 1`` targets per sequence), else ``-1``.
    With ``distinct=True`` no token appears twice except through the repetition.

    >>> tokens, targets = repeated_segment_batch(np.random.default_rng(0), 1, seq_len=12,
    ...                                          min_len=3, max_len=3)
    >>> tokens[0, 6:9].tolist() == tokens[0, 9:12].tolist(), int((targets >= 0).sum())
    (True, 2)
    """
    if seq_len - 1 - 2 * max_len < 0:
        raise ValueError(
            f"a segment of {max_len} tokens repeated twice does not fit in "
            f"seq_len={seq_len} after BOS"
        )
    if distinct and vocab_size < seq_len - 1:
        raise ValueError(
            f"distinct=True needs vocab_size >= seq_len - 1 = {seq_len - 1} different "
            f"tokens, got vocab_size={vocab_size}"
        )
    m = rng.integers(min_len, max_len + 1, size=(batch_size, 1))  # (batch, 1) segment lengths
    if distinct:  # each row: a random ordering of the vocabulary, first seq_len - 1 kept
        body = rng.random((batch_size, vocab_size)).argsort(axis=1)[:, : seq_len - 1]
    else:
        body = rng.integers(0, vocab_size, size=(batch_size, seq_len - 1))  # (batch, n - 1)
    tokens = np.concatenate([np.full((batch_size, 1), vocab_size), body], axis=1)  # (batch, n)
    pos = np.arange(seq_len)  # (n,)
    start = seq_len - m  # (batch, 1): first position of the second copy
    second = pos >= start  # (batch, n)
    rows = np.nonzero(second)[0]
    tokens[second] = tokens[rows, (pos - m)[second]]  # copy the segment m positions back
    targets = np.where(second & (pos < seq_len - 1), np.roll(tokens, -1, axis=1), -1)  # (batch, n)
    return tokens, targets


def repeated_segment_task(vocab_size=24, seq_len=20, min_len=4, max_len=9, distinct=False):
    """``make_batch(rng, batch_size)`` for :func:`repeated_segment_batch` with these settings."""

    def make_batch(rng, batch_size):
        return repeated_segment_batch(
            rng, batch_size, vocab_size, seq_len, min_len, max_len, distinct
        )

    return make_batch


def role_scores(weights, start=2) -> np.ndarray:
    """Each head's mean attention on the previous token and on the first token.

    ``weights`` is ``(batch, h, n, n)`` (or ``(h, n, n)``). Averaged over the batch and over
    the queries ``t >= start``; returns ``(h, 2)``: column 0 is the mean of ``weights[t, t-1]``,
    column 1 the mean of ``weights[t, 0]``.

    >>> w = np.zeros((1, 3, 3)); w[0, 2, 1] = 1.0
    >>> role_scores(w).tolist()
    [[1.0, 0.0]]
    """
    w = np.asarray(weights)
    if w.ndim == 3:
        w = w[None]  # (1, h, n, n)
    n = w.shape[-1]
    t = np.arange(start, n)
    prev = w[:, :, t, t - 1].mean(axis=(0, 2))  # (h,)
    first = w[:, :, t, 0].mean(axis=(0, 2))  # (h,)
    return np.stack([prev, first], axis=1)  # (h, 2)


def head_roles(weights, start=2) -> list[str]:
    """Name each head by the larger of its two :func:`role_scores`: "previous" or "first"."""
    return ["previous" if p >= f else "first" for p, f in role_scores(weights, start)]


def previous_token_score(weights, positions) -> np.ndarray:
    """Per head, mean attention from the chosen positions ``t`` to ``t - 1``: ``(h,)``.

    ``weights`` ``(batch, h, n, n)``. ``positions`` ``(batch, n)`` is either a boolean array
    (True = measure this position) or targets, in which case the positions whose target is not
    ``-1`` are measured. Position 0 has no previous token and must not be chosen.

    >>> w = np.zeros((1, 1, 3, 3)); w[0, 0, 1, 0] = 1.0; w[0, 0, 2, 2] = 1.0
    >>> previous_token_score(w, np.array([[False, True, False]])).tolist()
    [1.0]
    >>> previous_token_score(w, np.array([[-1, 5, 5]])).tolist()    # positions 1 and 2
    [0.5]
    """
    positions = np.asarray(positions)
    chosen = positions if positions.dtype == bool else positions >= 0
    b, t = np.nonzero(chosen)
    if (t == 0).any():
        raise ValueError("position 0 has no previous token; choose positions t >= 1")
    return weights[b, :, t, t - 1].mean(axis=0)  # (h,)


def segment_positions(targets) -> dict:
    """Where the parts of each repeated-segment sequence are, from its targets.

    For targets made by :func:`repeated_segment_batch` (``m - 1`` targets at the positions
    ``n - m .. n - 2``), returns boolean ``(batch, n)`` arrays:

    * ``"first_copy"``: the ``m`` positions ``n - 2m .. n - m - 1``;
    * ``"second_copy"``: the ``m`` positions ``n - m .. n - 1``;
    * ``"induction_keys"``: for every scored query ``t``, the key an induction head must find,
      ``t - m + 1``, the position right after the earlier copy of the current token. These are
      the first copy's positions after its first one, ``n - 2m + 1 .. n - m - 1``.

    >>> _, targets = repeated_segment_batch(np.random.default_rng(0), 1, seq_len=10,
    ...                                     min_len=3, max_len=3)
    >>> {k: np.nonzero(v[0])[0].tolist() for k, v in segment_positions(targets).items()}
    {'first_copy': [4, 5, 6], 'second_copy': [7, 8, 9], 'induction_keys': [5, 6]}
    """
    scored = np.asarray(targets) >= 0  # (batch, n)
    n = scored.shape[1]
    if not scored.any(axis=1).all():
        raise ValueError("every sequence needs at least one target (segments of m >= 2 tokens)")
    m = (scored.sum(axis=1) + 1)[:, None]  # (batch, 1): m - 1 targets per sequence
    pos = np.arange(n)  # (n,)
    return {
        "first_copy": (pos >= n - 2 * m) & (pos < n - m),
        "second_copy": pos >= n - m,
        "induction_keys": (pos >= n - 2 * m + 1) & (pos <= n - m - 1),
    }


def induction_scores(weights, tokens, targets) -> np.ndarray:
    """Per head, mean attention from scored positions to "the token after an earlier copy of me".

    For a query at position ``t`` with a target, the induction positions are the keys
    ``1 <= s <= t`` with ``tokens[s - 1] == tokens[t]`` (the previous token of key ``s`` is an
    earlier copy of the current token). Returns ``(h,)``: the attention on those keys, summed
    per query, averaged over queries (a query with no such key counts as 0).

    >>> w = np.zeros((1, 1, 4, 4)); w[0, 0, 3, 2] = 1.0      # position 3 attends to position 2
    >>> induction_scores(w, np.array([[9, 5, 6, 5]]), np.array([[-1, -1, -1, 6]])).tolist()
    [1.0]
    """
    tokens, weights = np.asarray(tokens), np.asarray(weights)
    b, t = np.nonzero(np.asarray(targets) >= 0)  # (q,) each: the scored queries
    before = np.full(tokens.shape, -1)  # (batch, n): the token before each position, -1 at 0
    before[:, 1:] = tokens[:, :-1]
    keys = np.arange(tokens.shape[1])  # (n,)
    induction = (before[b] == tokens[b, t][:, None]) & (keys <= t[:, None])  # (q, n)
    rows = weights[b, :, t, :]  # (q, h, n): each scored query's attention, per head
    return (rows * induction[:, None, :]).sum(axis=-1).mean(axis=0)  # (h,)


def duplicate_token_scores(weights, tokens, targets) -> np.ndarray:
    """Per head, mean attention from scored positions to earlier copies of the current token.

    For a query at position ``t`` with a target (not ``-1``), the duplicate positions are the
    keys ``s < t`` with ``tokens[s] == tokens[t]``. A *duplicate-token head* puts its weight
    there; a previous-token head puts it on ``t - 1`` (:func:`previous_token_score`), and an
    induction head on ``s + 1`` (:func:`induction_scores`). ``weights`` ``(batch, h, n, n)``,
    ``tokens`` and ``targets`` ``(batch, n)``. Returns ``(h,)``: the attention on those keys,
    summed per query, averaged over queries (a query with no earlier copy counts as 0).

    >>> w = np.zeros((1, 1, 4, 4)); w[0, 0, 3, 1] = 1.0      # position 3 attends to position 1
    >>> duplicate_token_scores(w, np.array([[7, 5, 6, 5]]), np.array([[-1, -1, -1, 0]])).tolist()
    [1.0]
    """
    tokens, weights = np.asarray(tokens), np.asarray(weights)
    b, t = np.nonzero(np.asarray(targets) >= 0)  # (q,) each: the scored queries
    keys = np.arange(tokens.shape[1])  # (n,)
    duplicate = (tokens[b] == tokens[b, t][:, None]) & (keys < t[:, None])  # (q, n)
    rows = weights[b, :, t, :]  # (q, h, n): each scored query's attention, per head
    return (rows * duplicate[:, None, :]).sum(axis=-1).mean(axis=0)  # (h,)


def table_correlation(a, b) -> float:
    """How alike two score tables are, ignoring each row's offset: a number in ``[-1, 1]``.

    Each row of ``a`` and ``b`` (shape ``(vocab, classes)``) has its mean removed, since adding
    the same amount to every class does not change which class wins; then the two tables are
    compared like two long vectors (Pearson correlation). 1 means one is a positive multiple
    of the other.

    >>> t = np.array([[1.0, 2.0, 3.0], [0.0, 5.0, 1.0]])
    >>> round(table_correlation(t, 2 * t + 7), 6), round(table_correlation(t, -t), 6)
    (1.0, -1.0)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(
            f"a and b must be tables of the same shape (vocab, classes), got "
            f"{a.shape} and {b.shape}"
        )
    a = (a - a.mean(axis=1, keepdims=True)).ravel()
    b = (b - b.mean(axis=1, keepdims=True)).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
