"""Requests that must give the same answer are sent once (`CachedGenerator.generate`): identical ones, and
greedy ones that differ only in seed or sample index (A2C's rank prompts repeat a shown question at
temperature 0 with a seed per slot). Each is still cached under its own key; sampled ones stay apart."""

from __future__ import annotations

from collections.abc import Sequence

from a2c.llm import CachedGenerator, GenerationRequest
from a2c.llm.sampling import Emit
from a2c.llm.scripted import ScriptedBackend
from a2c.system.cache import Cache


class Counting(ScriptedBackend):
    """The scripted model, recording every job it was given."""

    def __init__(self) -> None:
        super().__init__("scripted:a|b|c|d|e|f|g|h")
        self.jobs: list[GenerationRequest] = []

    def run(self, jobs: Sequence[GenerationRequest], emit: Emit) -> None:
        self.jobs.extend(jobs)
        super().run(jobs, emit)


def test_greedy_requests_that_differ_in_seed_or_sample_are_generated_once(tmp_path):
    backend = Counting()
    gen = CachedGenerator(backend, Cache(tmp_path / "c.sqlite"))
    greedy = [GenerationRequest(prompt="Pick one", seed=seed, max_tokens=2) for seed in (7, 8, 9)]
    other = GenerationRequest(prompt="Pick another", seed=7, n=3, max_tokens=2)
    answers = gen.generate([*greedy, other])
    assert [job.prompt for job in backend.jobs] == ["Pick one", "Pick another"]
    assert len({a.text for a in answers[:3]}) == 1 and len({c.text for c in answers[3].completions}) == 1
    assert gen.stats.generated == 2
    again = gen.generate([*greedy, other])  # each request's own key was cached
    assert all(all(a.cached) for a in again) and len(backend.jobs) == 2
    assert [a.text for a in again] == [a.text for a in answers]


def test_sampled_requests_and_other_settings_stay_apart():
    backend = Counting()
    gen = CachedGenerator(backend)
    gen.generate([GenerationRequest(prompt="Pick one", temperature=0.7, seed=seed) for seed in (1, 2, 3)]
                 + [GenerationRequest(prompt="Pick one", max_tokens=max_tokens) for max_tokens in (2, 3)])
    assert len(backend.jobs) == 5 and [job.seed for job in backend.jobs[:3]] == [1, 2, 3]
