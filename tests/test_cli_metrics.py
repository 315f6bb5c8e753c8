import math
import subprocess
import sys
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from matplotlib.image import imread

from a2c.cli import main
from a2c.cli.metrics import rc_grids
from a2c.metrics import relative_consistency
from a2c.metrics.binomial import _primes_upto as binomial_primes
from a2c.metrics.contrast import consistency_bounds, distribution_work, exact_memory, exact_work


def test_rc_prints_score_and_bounds(capsys):
    assert main(["metrics", "rc", "--bundles", "100", "--correct", "130", "--consistent", "45"]) == 0
    out = capsys.readouterr().out
    assert f"RC = {relative_consistency(100, 130, 45):.6f}" in out
    assert "RC = 0.930390 (93.04%)" in out
    assert "c_min = 30, c_max = 65" in out
    assert "accuracy 130/200 = 65.00%" in out


def test_rc_with_bundle_size(capsys):
    args = ["metrics", "rc", "--bundles", "10", "--correct", "17", "--consistent", "5", "--bundle-size", "3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "RC = 1.000000" in out and "c_min = 0, c_max = 5" in out


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        (["--bundles", "100", "--correct", "130", "--consistent", "20"], "below c_min=30"),
        (["--bundles", "5", "--correct", "11", "--consistent", "5"], "exceeds n_bundles*bundle_size=10"),
        (["--bundles", "5", "--correct", "4", "--consistent", "-1"], "negative"),
    ],
)
def test_rc_bad_counts_give_one_line_and_status_2(capsys, counts, message):
    assert main(["metrics", "rc", *counts]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_rc_grids_columns_are_distributions():
    prob, cdf = rc_grids(6, 2)
    for a in range(13):
        column = [prob[c][a] for c in range(7) if not math.isnan(prob[c][a])]
        assert sum(column) == pytest.approx(1.0)
        last = max(c for c in range(7) if not math.isnan(cdf[c][a]))
        assert cdf[last][a] == pytest.approx(1.0)
        assert last == a // 2  # c_max
    assert math.isnan(prob[4][7])  # 7 correct in 6 bundles cannot fill 4 bundles
    assert cdf[2][7] == relative_consistency(6, 7, 2)


def test_rc_plot_writes_a_png(tmp_path, capsys):
    out = tmp_path / "figs" / "rc.png"
    assert main(["metrics", "rc-plot", "--bundles", "20", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    image = imread(out)
    assert image.shape[0] > 300 and image.shape[1] > 600
    assert image[..., :3].std() > 0.05  # not a blank canvas


def test_rc_plot_bad_input(tmp_path, capsys):
    assert main(["metrics", "rc-plot", "--bundles", "0", "--out", str(tmp_path / "x.png")]) == 2
    assert "--bundles=0" in capsys.readouterr().err
    args = ["metrics", "rc-plot", "--bundles", "5", "--bundle-size", "1", "--out", str(tmp_path / "x.png")]
    assert main(args) == 2
    assert "bundle_size=1" in capsys.readouterr().err
    assert main(["metrics", "rc-plot", "--bundles", "5", "--out", str(tmp_path / "x.unknownext")]) == 2
    assert "cannot write the plot" in capsys.readouterr().err


def test_console_entry_point_runs_the_command():
    args = ["metrics", "rc", "--bundles", "5", "--correct", "8", "--consistent", "3"]
    done = subprocess.run(
        [sys.executable, "-m", "a2c", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "RC = 0.888889" in done.stdout


# -- bounds: memory estimated before the work, a progress bar for long exact runs --------------------------

def _never(*args, **kwargs):
    raise AssertionError("the work started although its input is beyond the bound")


def test_rc_beyond_the_memory_bound_is_refused_before_any_work(capsys, monkeypatch):
    monkeypatch.setattr("a2c.metrics.contrast.relative_consistency", _never)
    args = ["metrics", "rc", "--bundles", "1000000000", "--correct", "5", "--consistent", "0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    estimate = exact_memory(10**9, 2) / 1024**3  # ~33.8 GiB: a sieve up to 2·10^9 alone is 2 GB
    assert err == (f"a2c: error: RC of 1000000000 bundles of 2 needs about {estimate:.1f} GiB of memory "
                   "(2,000,000,000 instances), more than the 2.0 GiB a2c allows; use fewer or smaller "
                   "bundles\n")


def test_rc_plot_beyond_the_memory_bound_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("a2c.cli.metrics.rc_grids", _never)
    # the case that grew to 14.6 GB before the kernel killed it
    out = str(tmp_path / "x.png")
    args = ["metrics", "rc-plot", "--bundles", "1000", "--bundle-size", "1000", "--out", out]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert ("the heatmap of 1000 bundles of 1000 needs about 186.5 GiB of memory (1,001 × 1,000,001 cells)"
            in err)
    assert not (tmp_path / "x.png").exists()


def test_the_memory_estimate_bounds_what_the_exact_computation_allocates():
    n, b = 100_000, 2
    binomial_primes.cache_clear()  # the sieve is part of the cost
    tracemalloc.start()
    relative_consistency(n, n, n // 4, b)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak <= exact_memory(n, b) and exact_memory(n, b) < 4 * peak  # an upper bound, not a wild one


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(2, 5), st.data())
def test_progress_adds_up_to_the_announced_work(n, b, data):
    a = data.draw(st.integers(0, n * b))
    c_min, c_max = consistency_bounds(n, a, b)
    c = data.draw(st.integers(c_min, c_max))
    done: list[float] = []
    assert relative_consistency(n, a, c, b, progress=done.append) == relative_consistency(n, a, c, b)
    assert sum(done) == pytest.approx(exact_work(n, a, c, b))


def test_heatmap_progress_adds_up_and_grids_are_unchanged():
    done: list[float] = []
    assert rc_grids(7, 3, progress=done.append) == rc_grids(7, 3)
    assert len(done) == 22 and sum(done) == sum(distribution_work(7, a, 3) for a in range(22))


def test_a_long_run_shows_a_progress_bar(capsys, monkeypatch):
    monkeypatch.setattr("a2c.cli.metrics.PROGRESS_AFTER", 0.0)  # every run counts as long
    assert main(["metrics", "rc", "--bundles", "2000", "--correct", "2000", "--consistent", "500"]) == 0
    err = capsys.readouterr().err
    assert "exact RC:   0%|" in err and err.endswith("\r")  # on stderr, cleared when done
