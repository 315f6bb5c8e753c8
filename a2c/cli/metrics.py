"""`a2c metrics …`: relative consistency of a contrast-set result and its heatmap (paper 000, Figure 1)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from a2c.common.errors import A2CError

# the heatmap holds (nb + 1) × (n + 1) cells of exact fractions; beyond this it gets slow and unreadable
MAX_PLOT_BUNDLES = 1000
# what a computation may need, estimated before it starts: past it the kernel kills a2c or Python raises
# MemoryError after minutes of work (rc-plot of 1000 bundles of 1000 grew to 14.6 GB)
MEMORY_LIMIT = 2 * 1024**3
# bytes per heatmap cell, measured: two grids of Python floats, the Fractions of a column, and matplotlib's
# float64 and mask copies (1000 bundles of 2, 2.0·10^6 cells: 566 MB peak, ~200 MB of it the imports)
PLOT_BYTES_PER_CELL = 200
# progress bars appear only for work that lasts longer than this (seconds)
PROGRESS_AFTER = 1.0


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("metrics", help="compute metrics from counts (no models involved)",
                                  description="Metrics computed from counts alone, without a run or a model.")
    sub = group.add_subparsers(dest="metrics_command", required=True, metavar="METRIC")

    rc = sub.add_parser("rc", help="relative consistency of a contrast-set result (exact)",
                        description="Relative consistency (RC) of a contrast-set result: where the observed "
                        "consistency lies among those achievable at its accuracy (exact, no sampling).")
    rc.add_argument("--bundles", type=int, required=True, help="number of bundles n")
    rc.add_argument("--correct", type=int, required=True, help="correct instances a (0..n·b)")
    rc.add_argument("--consistent", type=int, required=True, help="bundles with every instance correct c")
    rc.add_argument("--bundle-size", type=int, default=2, help="instances per bundle b (default 2)")
    rc.set_defaults(handler=_rc)

    plot = sub.add_parser("rc-plot", help="heatmap of P(consistency | accuracy) and its CDF (RC)",
                          description="Plot P(consistency | accuracy) for n bundles of b instances and its "
                          "CDF, which is RC.")
    plot.add_argument("--bundles", type=int, default=100, help="number of bundles n (default 100)")
    plot.add_argument("--bundle-size", type=int, default=2, help="instances per bundle b (default 2)")
    plot.add_argument("--out", type=Path, required=True, help="image file to write (.png, .pdf, .svg)")
    plot.set_defaults(handler=_rc_plot)


def _within_memory(what: str, needed: int, detail: str) -> None:
    if needed > MEMORY_LIMIT:
        raise A2CError(f"{what} needs about {_size(needed)} of memory ({detail}), more than the "
                       f"{_size(MEMORY_LIMIT)} a2c allows; use fewer or smaller bundles")


def _size(count: float) -> str:
    return next(f"{count / 1024**k:.1f} {unit}" for k, unit in ((3, "GiB"), (2, "MiB"), (0, "bytes"))
                if count >= 1024**k or k == 0)


def _progress_bar(total: float, what: str) -> Any:
    """A bar on stderr that shows up only once the work has run `PROGRESS_AFTER` seconds. `disable` is
    given: tqdm, now imported after `quiet_library_progress` set `TQDM_DISABLE`, would take that default."""
    from tqdm import tqdm

    return tqdm(total=total, desc=what, delay=PROGRESS_AFTER, leave=False, disable=False,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")


def _rc(args: argparse.Namespace) -> int:
    from a2c.metrics import contrast  # numpy and the metrics package: only when a metric is computed

    n, a, c, b = args.bundles, args.correct, args.consistent, args.bundle_size
    contrast.consistency_bounds(n, a, b)  # bad counts: their one-line error before any estimate
    _within_memory(f"RC of {n} bundles of {b}", contrast.exact_memory(n, b), f"{n * b:,} instances")
    with _progress_bar(contrast.exact_work(n, a, c, b), "exact RC") as bar:
        rc = contrast.relative_consistency(n, a, c, b, progress=bar.update)
    c_min, c_max = contrast.consistency_bounds(n, a, b)
    print(f"RC = {rc:.6f} ({rc:.2%})")
    print(f"accuracy {a}/{n * b} = {a / (n * b):.2%}, consistency {c}/{n} = {c / n:.2%}")
    print(f"achievable consistency at this accuracy: c_min = {c_min}, c_max = {c_max}")
    return 0


def rc_grids(n_bundles: int, bundle_size: int, progress: Callable[[float], object] | None = None
             ) -> tuple[list[list[float]], list[list[float]]]:
    """P(c | a) and RC(c, a) as [c][a] grids; unachievable cells are NaN so the plot leaves them blank.
    `progress` is told the work of each accuracy column done (`distribution_work`)."""
    from a2c.metrics import contrast

    rows = n_bundles + 1
    cols = n_bundles * bundle_size + 1
    prob = [[math.nan] * cols for _ in range(rows)]
    cdf = [[math.nan] * cols for _ in range(rows)]
    for a in range(cols):
        running = Fraction(0)
        for c, p in contrast.consistency_distribution(n_bundles, a, bundle_size).items():
            running += p
            prob[c][a] = float(p)
            cdf[c][a] = float(running)
        if progress is not None:
            progress(contrast.distribution_work(n_bundles, a, bundle_size))
    return prob, cdf


def _rc_plot(args: argparse.Namespace) -> int:
    from a2c.cli.outputs import check_output_file
    from a2c.metrics import contrast

    check_output_file(args.out, "--out")
    n, b = args.bundles, args.bundle_size
    if not 1 <= n <= MAX_PLOT_BUNDLES:
        raise A2CError(f"--bundles={n} is outside 1..{MAX_PLOT_BUNDLES} for the plot")
    contrast.consistency_bounds(n, 0, b)  # validates the bundle size with a one-line error
    cells = (n + 1) * (n * b + 1)
    needed = cells * PLOT_BYTES_PER_CELL + contrast.exact_memory(n, b)
    _within_memory(f"the heatmap of {n} bundles of {b}", needed, f"{n + 1:,} × {n * b + 1:,} cells")
    work = sum(contrast.distribution_work(n, a, b) for a in range(n * b + 1))
    with _progress_bar(work, "exact heatmap") as bar:
        prob, cdf = rc_grids(n, b, progress=bar.update)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize, PowerNorm

    extent = (-50 / (n * b), 100 + 50 / (n * b), -50 / n, 100 + 50 / n)  # cell centres at the percentages
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), constrained_layout=True)
    # a square-root colour scale keeps the thin high-density band visible next to the P = 1 corners
    panels = [
        (prob, "P(consistency | accuracy), square-root colour scale", "viridis", PowerNorm(0.5, 0.0, 1.0)),
        (cdf, "relative consistency RC = CDF over consistency", "magma", Normalize(0.0, 1.0)),
    ]
    for ax, (grid, title, cmap, norm) in zip(axes, panels, strict=True):
        image = ax.imshow(
            grid, origin="lower", aspect="auto", extent=extent, cmap=cmap, norm=norm, interpolation="nearest"
        )
        fig.colorbar(image, ax=ax)
        ax.set_title(title)
        ax.set_xlabel("accuracy (% of instances correct)")
        ax.set_ylabel("consistency (% of bundles fully correct)")
    fig.suptitle(f"{n} bundles of {b} instances: consistency achievable at each accuracy")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        fig.savefig(args.out, dpi=120)
    except (OSError, ValueError) as exc:
        raise A2CError(f"cannot write the plot to {args.out}: {exc}") from exc
    finally:
        plt.close(fig)
    print(f"wrote {args.out}")
    return 0
