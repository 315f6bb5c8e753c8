import math
import subprocess
import sys

import pytest
from matplotlib.image import imread

from a2c.cli import main
from a2c.cli.metrics import rc_grids
from a2c.metrics import relative_consistency


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
