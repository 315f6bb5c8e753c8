import math

from hypothesis import given, settings
from hypothesis import strategies as st

from a2c.metrics.binomial import binomial, product


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 30_000), data=st.data())
def test_binomial_equals_math_comb(n, data):
    k = data.draw(st.integers(-3, n + 3))
    assert binomial(n, k) == (math.comb(n, k) if 0 <= k <= n else 0)


def test_binomial_large_and_symmetric():
    assert binomial(50_000, 17_000) == math.comb(50_000, 17_000)
    assert binomial(50_000, 33_000) == binomial(50_000, 17_000)
    assert binomial(4096, 2048) == math.comb(4096, 2048)
    assert binomial(10_000, 0) == 1 and binomial(10_000, 10_000) == 1


@given(st.lists(st.integers(-10**6, 10**6), max_size=40))
def test_product_tree(factors):
    assert product(list(factors)) == math.prod(factors)
