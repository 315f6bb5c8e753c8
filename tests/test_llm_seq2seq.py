"""Encoder-decoder (seq2seq) models on the transformers backend: a tiny T5 built and saved here (random
weights of Flan-T5's architecture, a T5 tokenizer on a vocabulary of this file's own sentences), loaded
through `build_generator` like `google/flan-t5-xl` would be, and checked against the model itself."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from a2c.judges import build_judge
from a2c.llm import GenerationRequest, GeneratorConfig, build_generator
from a2c.llm.render import prompt_text
from a2c.prompting.prompts import load_template

pytestmark = pytest.mark.slow

SENTENCES = [
    "Question: What is the capital of France? Answer 1: Paris Answer 2: It is Paris.",
    "Question: How many legs does a spider have? Answer 1: Eight Answer 2: Six",
    "Do both answers say the same thing? Reply Yes or No.",
    "Yes No Yes No Yes No yes no",
    "You check whether two answers to the same question agree.",
    "User: Assistant: the a of in on is it to",
]
CHARACTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;?!'\"-()"
YES_PIECES, NO_PIECES = ("▁Yes", "Yes", "▁yes"), ("▁No", "No", "▁no")  # all decode to a judge's word
MAX_NEW = 6


def _vocabulary() -> list[tuple[str, float]]:
    """Unigram pieces in T5's layout (pad, eos, unk first): each word of SENTENCES scored by its
    frequency, the Yes/No pieces without a leading "▁" as well, and single characters so any text
    tokenizes (transformers' stop-string matcher needs that too)."""
    words = Counter(w for s in SENTENCES for w in s.split())
    total = sum(words.values())
    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -4.0)]
    pieces += [(f"▁{w}", math.log(c / total)) for w, c in sorted(words.items())]
    pieces += [(p, -6.0) for p in ("Yes", "No")]
    pieces += [(c, -10.0) for c in CHARACTERS]
    assert len({p for p, _ in pieces}) == len(pieces)
    return pieces


@pytest.fixture(scope="module")
def tiny_t5_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved T5 in Flan-T5's v1.1 layout (gated-GELU, unscaled decoder output, its own LM head) with
    2 layers and d_model 32."""
    folder = tmp_path_factory.mktemp("tiny-t5")
    tokenizer = transformers.T5Tokenizer(vocab=_vocabulary(), extra_ids=0)
    torch.manual_seed(1)
    config = transformers.T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=64, num_layers=2, num_decoder_layers=2,
        num_heads=2, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    network = transformers.T5ForConditionalGeneration(config)
    # transformers builds T5 with the head tied to the embeddings; an untied head (saved as its own
    # tensor, as Flan-T5's is) of this scale gives varied greedy text and non-negligible P(Yes), P(No)
    network.lm_head.weight = torch.nn.Parameter(0.5 * torch.randn(network.lm_head.weight.shape))
    network.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def t5(tiny_t5_dir: Path):
    return build_generator(GeneratorConfig(backend="transformers", model=str(tiny_t5_dir), cache=None))


def _encode(t5, text: str) -> dict:
    """The encoder input as transformers' own seq2seq examples build it: the tokenizer's defaults."""
    return t5.impl.tokenizer([text], return_tensors="pt")


def _reference(t5, text: str, max_new_tokens: int) -> list[int]:
    """New tokens of the model's own greedy `generate` (its output starts with the decoder start token)."""
    with torch.inference_mode():
        out = t5.impl.lm.generate(**_encode(t5, text), do_sample=False, max_new_tokens=max_new_tokens)
    return out[0, 1:].tolist()


def _first_step_logprobs(t5, text: str) -> torch.Tensor:
    """log-softmax of the first decoder step: the encoder reads `text`, the decoder its start token."""
    lm = t5.impl.lm
    start = torch.tensor([[lm.config.decoder_start_token_id]])
    with torch.inference_mode():
        logits = lm(**_encode(t5, text), decoder_input_ids=start).logits[0, 0]
    return torch.log_softmax(logits.float(), dim=-1)


def test_seq2seq_config_loads_a_seq2seq_model(t5):
    impl = t5.impl
    assert impl.lm.config.is_encoder_decoder
    assert isinstance(impl.lm, transformers.T5ForConditionalGeneration)
    assert type(impl.lm) in transformers.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING.values()
    assert impl.tokenizer.padding_side == "right" and not impl.family.echoes_prompt


def test_prompts_are_plain_text_with_one_eos(t5):
    tok = t5.impl.tokenizer
    assert not getattr(tok, "chat_template", None)
    messages = load_template("same_answer").messages(question="Capital of France?", answer_a="Paris",
                                                     answer_b="Rome")
    text = prompt_text(tok, GenerationRequest(messages=messages))
    # every few-shot turn is there as plain text, and the prompt ends where the answer starts
    assert text.count("User: ") == 5 and text.count("Assistant: ") == 4 and text.endswith("Assistant:")
    assert "<" not in text
    ids = tok([text])["input_ids"][0]
    assert ids[-1] == tok.eos_token_id and ids.count(tok.eos_token_id) == 1
    assert tok.convert_ids_to_tokens(ids[:2]) == ["▁You", "▁check"]  # no BOS or pad in front


def test_greedy_equals_the_models_own_generate_alone_and_in_a_batch(t5):
    texts = ["Question: What is the capital of France?", "Do both answers say the same thing?",
             "Yes or no: is it Paris? Answer 1: Paris Answer 2: It is Paris, the capital of France."]
    got = t5.generate([GenerationRequest(prompt=t, max_tokens=MAX_NEW) for t in texts])  # one padded batch
    tok = t5.impl.tokenizer
    for text, generation in zip(texts, got, strict=True):
        expected = _reference(t5, text, MAX_NEW)
        n = expected.index(tok.eos_token_id) if tok.eos_token_id in expected else len(expected)
        assert generation.text == tok.decode(expected[:n], skip_special_tokens=True)
        assert generation.completions[0].completion_tokens == n
        assert generation.prompt_tokens == len(_encode(t5, text)["input_ids"][0])  # includes the one EOS
    assert any(g.text.strip() for g in got)
    alone = t5.generate([GenerationRequest(prompt=texts[0], max_tokens=MAX_NEW)])[0]
    assert alone.text == got[0].text


def test_a_sampled_row_depends_only_on_its_own_seed(t5):
    row = GenerationRequest(prompt="Question: How many legs does a spider have?", temperature=1.0,
                            max_tokens=MAX_NEW, seed=11)
    alone = t5.generate([row])[0].text
    others = [GenerationRequest(prompt="Yes", temperature=0.7, top_p=0.9, max_tokens=MAX_NEW, seed=3),
              GenerationRequest(prompt="You check whether two answers to the same question agree, "
                                       "even if the wording differs.", max_tokens=MAX_NEW)]
    batched = t5.generate([others[0], row, others[1]])[1].text
    assert alone == batched
    samples = t5.generate([GenerationRequest(prompt=row.prompt, temperature=1.0, max_tokens=MAX_NEW,
                                             seed=11, n=6)])[0]
    assert samples.completions[0].text == alone  # sample 0 uses the request seed itself
    assert len({c.text for c in samples.completions}) >= 2


def test_max_tokens_stop_strings_and_finish_reasons(t5):
    tok = t5.impl.tokenizer
    prompt = "Question: What is the capital of France?"
    reference = _reference(t5, prompt, 3)
    assert tok.eos_token_id not in reference  # precondition: the model itself runs past 3 tokens
    capped = t5.generate([GenerationRequest(prompt=prompt, max_tokens=3)])[0].completions[0]
    assert capped.completion_tokens == 3 and capped.finish_reason == "length"
    assert capped.text == tok.decode(reference, skip_special_tokens=True)
    full = t5.generate([GenerationRequest(prompt=prompt, max_tokens=MAX_NEW)])[0].text
    stop = full[len(full) // 2:][:2]  # two characters from the middle of what the model writes
    stopped = t5.generate([GenerationRequest(prompt=prompt, max_tokens=MAX_NEW, stop=(stop,))])[0]
    assert stopped.text == full[:full.find(stop)] and stopped.completions[0].finish_reason == "stop"
    assert 0 < len(stopped.text) < len(full)


def test_logprobs_equal_the_first_decoder_step(t5):
    prompt = "Do both answers say the same thing?"
    request = GenerationRequest(prompt=prompt, max_tokens=MAX_NEW, logprobs=4)
    completion = t5.generate([request])[0].completions[0]
    tok = t5.impl.tokenizer
    assert completion.logprobs is not None and len(completion.logprobs) == completion.completion_tokens
    lp = _first_step_logprobs(t5, prompt)
    chosen = int(lp.argmax())
    assert chosen == _reference(t5, prompt, 1)[0]
    # an entry holds the summed probability of the tokens, among the top 4 and the chosen one, that
    # decode to its text
    shown = set(lp.topk(4).indices.tolist()) | {chosen}
    expected: dict[str, float] = {}
    for i in shown:
        piece = tok.decode([i])
        expected[piece] = float(np.logaddexp(expected.get(piece, -np.inf), lp[i].item()))
    first = completion.logprobs[0]
    assert first.keys() == expected.keys()
    for piece, value in expected.items():
        assert first[piece] == pytest.approx(value, abs=1e-5)
    assert first[tok.decode([chosen])] >= lp[chosen].item() - 1e-6


def test_llm_judge_reads_yes_and_no_from_the_first_decoder_step(t5):
    tok = t5.impl.tokenizer
    yes_ids, no_ids = tok.convert_tokens_to_ids(list(YES_PIECES)), tok.convert_tokens_to_ids(list(NO_PIECES))
    assert tok.unk_token_id not in yes_ids + no_ids
    assert {tok.decode([i]).strip().casefold() for i in yes_ids} == {"yes"}
    assert {tok.decode([i]).strip().casefold() for i in no_ids} == {"no"}
    # every token's log-probability comes back, so the judge sees all of P(Yes) and P(No)
    judge = build_judge("llm", generator=t5, logprobs=len(tok), cache=None)
    question = "What is the capital of France?"
    outputs = ["Paris", "It is Paris.", "Rome"]
    m = judge.matrix(question, outputs)
    assert m.shape == (3, 3) and np.array_equal(m, m.T) and np.all(np.diag(m) == 1)
    assert np.all((m >= 0) & (m <= 1)) and judge.unparsed == 0
    template = load_template("same_answer")
    for i in range(3):
        for j in range(i + 1, 3):
            a, b = sorted((outputs[i], outputs[j]))  # the judge asks each unordered pair in this order
            messages = template.messages(question=question, answer_a=a, answer_b=b)
            text = prompt_text(tok, GenerationRequest(messages=messages))
            lp = _first_step_logprobs(t5, text)
            yes, no = torch.logsumexp(lp[yes_ids], 0).item(), torch.logsumexp(lp[no_ids], 0).item()
            assert m[i, j] == pytest.approx(1 / (1 + math.exp(no - yes)), abs=1e-5)
    assert len({round(v, 6) for v in m[np.triu_indices(3, 1)]}) > 1  # the pairs really differ


def test_a_causal_config_still_loads_a_causal_model(tmp_path):
    """The same tokenizer under a decoder-only config: the family comes from the config alone."""
    tokenizer = transformers.T5Tokenizer(vocab=_vocabulary(), extra_ids=0)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    gen = build_generator(GeneratorConfig(backend="transformers", model=str(tmp_path), cache=None))
    assert not gen.impl.lm.config.is_encoder_decoder
    assert type(gen.impl.lm) in transformers.MODEL_FOR_CAUSAL_LM_MAPPING.values()
    assert gen.impl.tokenizer.padding_side == "left" and gen.impl.family.echoes_prompt
    prompt = "Question: What is the capital of France?"
    got = gen.generate([GenerationRequest(prompt=prompt, max_tokens=4),
                        GenerationRequest(prompt="Yes", max_tokens=4)])[0]
    enc = gen.impl.tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = gen.impl.lm.generate(**enc, do_sample=False, max_new_tokens=4)
    new = out[0, enc["input_ids"].shape[1]:].tolist()
    eos = gen.impl.tokenizer.eos_token_id
    new = new[:new.index(eos)] if eos in new else new
    assert got.text == gen.impl.tokenizer.decode(new, skip_special_tokens=True)
