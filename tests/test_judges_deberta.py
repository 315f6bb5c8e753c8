"""The trimmed DeBERTa relative-attention bias gives the stock transformers outputs, for every attention
setting the v2/v3 checkpoints use, on padded batches of mixed lengths."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

from a2c.judges.deberta import trim_relative_attention
from a2c.judges.hf import load_pair_classifier

pytestmark = pytest.mark.slow


def _network(share_att_key: bool, pos_att_type: list[str], position_buckets: int, max_relative: int,
             seed: int) -> DebertaV2ForSequenceClassification:
    torch.manual_seed(seed)
    config = DebertaV2Config(
        vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=128, relative_attention=True, position_biased_input=False,
        pos_att_type=pos_att_type, share_att_key=share_att_key, position_buckets=position_buckets,
        max_relative_positions=max_relative, type_vocab_size=0, initializer_range=0.5, num_labels=3)
    return DebertaV2ForSequenceClassification(config).eval()


def _batch(lengths: list[int], seed: int) -> dict[str, torch.Tensor]:
    """Right-padded random token ids of the given lengths."""
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.randint(1, 100, (len(lengths), width), generator=generator)
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()
    return {"input_ids": ids * mask, "attention_mask": mask}


def _outputs(network, batch) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.inference_mode():
        out = network(**batch, output_hidden_states=True)
    return out.logits, out.hidden_states[-1]


@settings(max_examples=30, deadline=None)
@given(share_att_key=st.booleans(),
       pos_att_type=st.sampled_from([[], ["c2p"], ["p2c"], ["p2c", "c2p"]]),
       buckets=st.sampled_from([(-1, -1), (-1, 24), (8, 64), (256, 512)]),
       lengths=st.lists(st.integers(1, 90), min_size=1, max_size=5),
       seed=st.integers(0, 1000))
def test_trimmed_bias_matches_stock_transformers(share_att_key, pos_att_type, buckets, lengths, seed):
    # buckets: no buckets (span = max_position_embeddings), a short explicit span that long inputs exceed
    # (clamped relative positions), log buckets that long inputs reach, and the v3/xxlarge setting
    stock = _network(share_att_key, pos_att_type, *buckets, seed)
    trimmed = copy.deepcopy(stock)
    assert trim_relative_attention(trimmed) == 2  # one per layer
    batch = _batch(lengths, seed)
    stock_logits, stock_hidden = _outputs(stock, batch)
    logits, hidden = _outputs(trimmed, batch)
    torch.testing.assert_close(logits, stock_logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(hidden, stock_hidden, atol=1e-5, rtol=0)


def test_models_without_relative_attention_keep_their_own_attention():
    config = DebertaV2Config(vocab_size=100, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=32, relative_attention=False)
    assert trim_relative_attention(DebertaV2ForSequenceClassification(config)) == 0
    from transformers import BertConfig, BertForSequenceClassification

    bert = BertForSequenceClassification(BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1,
                                                    num_attention_heads=2, intermediate_size=32))
    assert trim_relative_attention(bert) == 0


def test_judge_models_load_with_the_trimmed_bias(tiny_nli_dir):
    from a2c.judges import deberta

    network = load_pair_classifier(str(tiny_nli_dir)).model  # the transformers model inside the CrossEncoder
    biases = [m.disentangled_attention_bias for m in network.modules()
              if hasattr(m, "disentangled_attention_bias")]
    assert len(biases) == 2 and all(b.__func__ is deberta._used_bias for b in biases)
