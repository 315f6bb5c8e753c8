"""BECEL behavioural inconsistencies from paired predictions (SPEC §7).

Semantic, symmetric and negational tests pair every original item with one perturbed item. Transitive and
additive tests derive each new item from two originals; an item whose premises the model already got
wrong says nothing about its reasoning, so only items with both sources predicted correctly count.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from a2c.metrics.paired import same_prediction_rate


def semantic_inconsistency(original_preds: Sequence[Hashable], perturbed_preds: Sequence[Hashable]) -> float:
    """τ_sem: share of meaning-preserving perturbations that change the prediction.

    Args:
        original_preds: the prediction on each original item.
        perturbed_preds: the prediction on each item's meaning-preserving perturbation, in the same order.

    Returns:
        The share in [0, 1] of pairs whose predictions differ.
    """
    return 1.0 - same_prediction_rate(original_preds, perturbed_preds)


def symmetric_inconsistency(original_preds: Sequence[Hashable], swapped_preds: Sequence[Hashable]) -> float:
    """τ_sym: share of items whose prediction changes when the two inputs of a symmetric task swap.

    Args:
        original_preds: the prediction on each original item.
        swapped_preds: the prediction on each item's input-swapped version, in the same order.

    Returns:
        The share in [0, 1] of pairs whose predictions differ.
    """
    return 1.0 - same_prediction_rate(original_preds, swapped_preds)


def negational_inconsistency(original_preds: Sequence[Hashable], negated_preds: Sequence[Hashable]) -> float:
    """τ_neg: share of negated items that keep the original prediction (it should flip).

    Args:
        original_preds: the prediction on each original item.
        negated_preds: the prediction on each item's negated version, in the same order.

    Returns:
        The share in [0, 1] of pairs whose predictions are the same.
    """
    return same_prediction_rate(original_preds, negated_preds)


def conditional_inconsistency(
    sources: Sequence[tuple[int, int]],
    new_labels: Sequence[Hashable],
    new_preds: Sequence[Hashable],
    original_labels: Sequence[Hashable],
    original_preds: Sequence[Hashable],
) -> float | None:
    """τ over derived items whose two source originals (indices in `sources`) were both predicted right.

    `None` when no derived item meets the condition: there is then nothing to measure.

    Args:
        sources: for each derived item, the indices of its two source items in the originals.
        new_labels: the gold label of each derived item.
        new_preds: the prediction on each derived item.
        original_labels: the gold label of each original item.
        original_preds: the prediction on each original item.

    Returns:
        The error rate over the derived items whose sources were both predicted right, None when none was.
    """
    if not (len(sources) == len(new_labels) == len(new_preds)):
        raise ValueError("sources, new_labels and new_preds must have the same length")
    if len(original_labels) != len(original_preds):
        raise ValueError("original_labels and original_preds must have the same length")
    right = [p == y for p, y in zip(original_preds, original_labels, strict=True)]
    kept = 0
    correct = 0
    for (i, j), label, pred in zip(sources, new_labels, new_preds, strict=True):
        for index in (i, j):
            if not 0 <= index < len(right):
                raise ValueError(f"source index {index} is outside the {len(right)} original items")
        if right[i] and right[j]:
            kept += 1
            correct += pred == label
    return None if kept == 0 else 1.0 - correct / kept


def transitive_inconsistency(
    sources: Sequence[tuple[int, int]],
    new_labels: Sequence[Hashable],
    new_preds: Sequence[Hashable],
    original_labels: Sequence[Hashable],
    original_preds: Sequence[Hashable],
) -> float | None:
    """τ_trn: items inferred by transitivity (X→Y, Y→Z ⊢ X→Z); see `conditional_inconsistency`.

    Args:
        sources: for each derived item, the indices of its two source items in the originals.
        new_labels: the gold label of each derived item.
        new_preds: the prediction on each derived item.
        original_labels: the gold label of each original item.
        original_preds: the prediction on each original item.

    Returns:
        τ_trn, None when no derived item has both sources predicted right.
    """
    return conditional_inconsistency(sources, new_labels, new_preds, original_labels, original_preds)


def additive_inconsistency(
    sources: Sequence[tuple[int, int]],
    new_labels: Sequence[Hashable],
    new_preds: Sequence[Hashable],
    original_labels: Sequence[Hashable],
    original_preds: Sequence[Hashable],
) -> float | None:
    """τ_add: items made by joining two originals of the same label; see `conditional_inconsistency`.

    Args:
        sources: for each derived item, the indices of its two source items in the originals.
        new_labels: the gold label of each derived item.
        new_preds: the prediction on each derived item.
        original_labels: the gold label of each original item.
        original_preds: the prediction on each original item.

    Returns:
        τ_add, None when no derived item has both sources predicted right.
    """
    return conditional_inconsistency(sources, new_labels, new_preds, original_labels, original_preds)
