"""The drawings of the chapters' figures that stored runs keep, and redrawing a stored run from its JSON.

A notebook computes the numbers of a figure, puts them into the ``data`` dict it stores with
:func:`dpbayes.book.figures.save_figure`, and calls the drawing function of that figure kind here on the
same ``data`` and ``params``; the function returns the matplotlib figure. Because a figure is drawn from
its stored numbers alone, a run kept under ``figures/<chapter>/runs/<label>/`` (hours of computing) can be
redrawn when the book's figure style changes, without re-running it: :func:`redraw_stored` (command line
``python -m dpbayes redraw figures/<chapter>/runs/<label>``) reads each figure JSON of the run, draws it
again with the function of its figure id and rewrites the PNG and the JSON's ``layout``; ``data``,
``params``, ``note`` and ``tolerance`` stay as they are.

Only the book's machinery draws: the science modules compute, this module plots.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpbayes.core._extras import require

matplotlib = require("matplotlib", "dpbayes.book.chapter_figures")

from dpbayes.book import figures
from dpbayes.book._io import atomic_path, atomic_write_text

CH3 = "03-adaptive-truncation"
CH4 = "04-counting-queries"

TEX = {"mu": "$\\mu$", "sigma": "$\\sigma$"}

#: The samplers of chapter 3's simulation study (``dpbayes.smc.study.METHODS``) and their box-plot labels.
SMC_METHODS = ("SMC-adaptive", "SMC-nonadaptive", "MCMC", "exact-SMC-adaptive")
SHORT = {"SMC-adaptive": "adapt", "SMC-nonadaptive": "nonadapt", "MCMC": "MCMC", "exact-SMC-adaptive": "exact"}

#: The designs of notebook 03d (``dpbayes.smc.study.BASELINE_DESIGNS``, then SMC-adaptive), their legend
#: entries and their (colour, marker, line style).
BASELINE_LABEL = {
    "fixed-k1": "fixed $\\pm 1\\sigma$", "fixed-k2": "fixed $\\pm 2\\sigma$", "fixed-k5": "fixed $\\pm 5\\sigma$",
    "fixed-k10": "fixed $\\pm 10\\sigma$ (paper)", "fixed-bstar": "fixed $\\pm b^*\\sigma$ (oracle: the paper's value)",
    "fixed-mirror": "mirror-randomised, A-optimal (oracle)",
    "twostage-bstar": "two-stage $\\pm b^*\\hat c$ (the paper's value)", "twostage-k1": "two-stage $\\pm 1\\hat c$",
    "twostage-k2": "two-stage $\\pm 2\\hat c$", "SMC-adaptive": "SMC-adaptive (paper scale)",
}
BASELINE_STYLE = {
    "fixed-k1": ("#0072B2", "o", "-"), "fixed-k2": ("#56B4E9", "s", "-"), "fixed-k5": ("#009E73", "^", "-"),
    "fixed-k10": ("#000000", "v", "-"), "fixed-bstar": ("#999999", "D", ":"), "fixed-mirror": ("#882255", "h", ":"),
    "twostage-bstar": ("#E69F00", "P", "--"), "twostage-k1": ("#D55E00", "X", "--"), "twostage-k2": ("#CC79A7", "*", "--"),
    "SMC-adaptive": ("#000000", "o", "-."),
}

#: The designs of notebook 03e's fair comparison (``dpbayes.smc.study.FAIR_DESIGNS``, then SMC-adaptive).
FAIR_STYLE = {"fixed-k1": ("#0072B2", "o", "-"), "fixed-k2": ("#56B4E9", "s", "-"),
              "twostage-k2": ("#D55E00", "X", "--"), "twostage-k2-wide": ("#E69F00", "P", "--"),
              "SMC-adaptive": ("#000000", "o", "-.")}

#: The Laplace estimators of notebook 04c, their legend entries and line styles.
LAPLACE = {
    "naive": "Laplace, naive",
    "clamped": "Laplace, clamped to [0, n]",
    "mean": "Laplace + posterior mean (paper)",
    "median": "Laplace + posterior median",
}
LAPLACE_STYLE = {"naive": ":", "clamped": "-.", "mean": "-", "median": "--"}


def _array(value: Any) -> np.ndarray:
    """A stored series as a float array (figure JSON writes NaN and infinities as strings)."""
    def conv(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [conv(x) for x in v]
        return float(v) if v in ("nan", "inf", "-inf") else v

    return np.asarray(conv(value.tolist() if isinstance(value, np.ndarray) else value), dtype=float)


def _series(data: Mapping[str, Any], key: str, figure_id: str) -> Any:
    if key not in data:
        raise KeyError(f"{figure_id}: the figure's data has no series {key!r} (it has {', '.join(sorted(data))})")
    return data[key]


def particle_series(res: Any) -> dict[str, dict[str, Any]]:
    """What a particle figure keeps of one latent-x SMC run (:func:`fig1_particles`, :func:`fig3_real_data_particles`).

    ``res`` is a run of :mod:`dpbayes.smc.samplers` with the particles stored every ``store_every``
    steps (``stored_steps``, ``stored_mu``, ``stored_sigma``), the posterior means (``mean_mu``,
    ``mean_sigma``) and the truncation points (``lower``, ``upper``). Returns ``{"mu": ..., "sigma": ...,
    "interval": ...}``: per parameter the posterior mean and the 5 %, 50 % and 95 % quantiles of the stored
    particles (not all particles), and the truncation points.
    """
    out: dict[str, dict[str, Any]] = {}
    for par, stored, mean in (("mu", res.stored_mu, res.mean_mu), ("sigma", res.stored_sigma, res.mean_sigma)):
        q = np.quantile(stored, [0.05, 0.5, 0.95], axis=1)
        out[par] = {"mean": mean, "stored_steps": res.stored_steps,
                    "particle_q05": q[0], "particle_q50": q[1], "particle_q95": q[2]}
    out["interval"] = {"lower": res.lower, "upper": res.upper}
    return out


def _particle_panel(ax: Any, series: Mapping[str, Any], interval: Mapping[str, Any] | None, truth: float,
                    truth_label: str, ylim: tuple[float, float]) -> None:
    """One panel of a particle figure: 5 %-95 % band of the stored particles, posterior mean, truth, and the
    truncation points (mu panels only)."""
    mean = _array(series["mean"])
    steps = np.arange(1, mean.size + 1)
    ax.fill_between(_array(series["stored_steps"]), _array(series["particle_q05"]), _array(series["particle_q95"]),
                    color="#56B4E9", alpha=0.45, lw=0, label="particles, 5 %-95 %")
    ax.plot(steps, mean, color="#D55E00", lw=1.2, label="posterior mean")
    ax.axhline(truth, color="k", lw=1, ls="--", label=truth_label)
    if interval is not None:
        ax.plot(steps, _array(interval["lower"]), color="0.45", lw=0.6, ls=":", label="truncation points $l_t, r_t$")
        ax.plot(steps, _array(interval["upper"]), color="0.45", lw=0.6, ls=":")
    ax.set_ylim(*ylim)


def fig1_particles(data: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """Notebook 03b, paper Fig. 1: the particle cloud of one run of the latent-x SMC samplers.

    One row per (eps, sampler), mu left and sigma right. ``data[f"eps{eps:g}-{label}-{par}"]`` holds
    ``mean``, ``stored_steps`` and ``particle_q05/q50/q95``, ``data[f"eps{eps:g}-{label}-interval"]`` the
    truncation points ``lower``, ``upper`` (label ``adaptive``/``nonadaptive``); ``params``: ``eps_grid``,
    ``mu_true``, ``sigma2_true``.
    """
    eps_grid = list(params["eps_grid"])
    mu_true, sigma_true = float(params["mu_true"]), float(np.sqrt(params["sigma2_true"]))
    fig, axes = figures.column_subplots(2 * len(eps_grid), 2, panel_height_in=1.55, sharex=True, squeeze=False)
    for row, eps in enumerate(eps_grid):
        for col0, label in enumerate(("adaptive", "nonadaptive")):
            for k, par in enumerate(("mu", "sigma")):
                ax = axes[2 * row + col0, k]
                series = _series(data, f"eps{eps:g}-{label}-{par}", "fig1-particles")
                if par == "mu":
                    interval = _series(data, f"eps{eps:g}-{label}-interval", "fig1-particles")
                    _particle_panel(ax, series, interval, mu_true, "true value",
                                    (mu_true - 6 * sigma_true, mu_true + 6 * sigma_true))
                else:
                    _particle_panel(ax, series, None, sigma_true, "true value", (0, 4 * sigma_true))
                ax.set_ylabel(TEX[par], fontsize=10)
                ax.set_title(f"SMC-{label}, $\\epsilon$ = {eps:g}", fontsize=10)
    for ax in axes[-1]:
        ax.set_xlabel("individual $t$")
    figures.legend_below(fig, ncol=2, fontsize=10)
    return fig


def fig2_boxplots(data: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """Notebook 03b, paper Fig. 2: the posterior means of every run, one box per sampler.

    ``data[f"eps{eps:g}-{method}-{par}"]`` holds one posterior mean per run; ``params``: ``eps_grid``,
    ``mu_true``, ``sigma2_true`` and, when the run was restricted to some samplers, ``methods``.
    """
    eps_grid = list(params["eps_grid"])
    methods = [m for m in SMC_METHODS if m in params.get("methods", SMC_METHODS)]
    mu_true, sigma_true = float(params["mu_true"]), float(np.sqrt(params["sigma2_true"]))
    fig, axes = figures.column_subplots(len(eps_grid), 2, panel_height_in=2.3, squeeze=False)
    for j, eps in enumerate(eps_grid):
        for i, par in enumerate(("mu", "sigma")):
            ax = axes[j, i]
            ax.boxplot([_array(_series(data, f"eps{eps:g}-{m}-{par}", "fig2-boxplots")) for m in methods], showfliers=True)
            ax.set_xticks(range(1, len(methods) + 1), [SHORT[m] for m in methods], fontsize=10)
            ax.axhline(mu_true if par == "mu" else sigma_true, color="k", lw=1)
            ax.set_ylabel(f"posterior mean of {TEX[par]}", fontsize=10)
            ax.set_title(f"$\\epsilon$ = {eps:g}", fontsize=10)
    fig.tight_layout()
    return fig


def fig3_real_data_particles(data: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """Notebook 03c, paper Fig. 3: the particle cloud of one run on the county incomes.

    ``data[f"{label}-{par}"]`` and ``data[f"{label}-interval"]`` as in :func:`fig1_particles`; the
    reference line is the normal MLE of all counties of ``params["year"]``
    (:func:`dpbayes.core.datasets.county_income`), as in the notebook.
    """
    from dpbayes.core import datasets

    income = datasets.county_income(params["year"])
    mle_mu, mle_sigma = float(income.mean()), float(income.std())
    fig, axes = figures.column_subplots(2, 2, panel_height_in=2.4, sharex=True)  # rows: adaptive, nonadaptive
    for col0, label in enumerate(("adaptive", "nonadaptive")):
        for k, par in enumerate(("mu", "sigma")):
            ax = axes[col0, k]
            series = _series(data, f"{label}-{par}", "fig3-real-data-particles")
            if par == "mu":
                _particle_panel(ax, series, _series(data, f"{label}-interval", "fig3-real-data-particles"), mle_mu,
                                "full-data MLE", (mle_mu - 6 * mle_sigma, mle_mu + 6 * mle_sigma))
            else:
                _particle_panel(ax, series, None, mle_sigma, "full-data MLE", (0, 4 * mle_sigma))
            ax.set_title(f"SMC-{label}", fontsize=10)
            ax.set_ylabel(TEX[par] + " (thousand \\$)", fontsize=10)
            if col0 == 1:
                ax.set_xlabel("county $t$")
    figures.legend_below(fig, ncol=2, fontsize=10)
    return fig


def fig_baselines_rmse(data: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """Notebook 03d: RMSE against eps of every fixed and two-stage design (and SMC-adaptive), mu above.

    ``data[f"{design}-rmse-{par}"]`` (and ``-cr-``, not drawn) holds one value per entry of ``params["eps_grid"]``.
    """
    eps_grid = [float(e) for e in params["eps_grid"]]
    designs = [d for d in BASELINE_LABEL if f"{d}-rmse-mu" in data]
    unknown = sorted({k.split("-rmse-")[0] for k in data if "-rmse-" in k} - set(designs))
    if unknown:
        raise ValueError(f"fig-baselines-rmse: no style for the design(s) {', '.join(unknown)}")
    fig, axes = figures.column_subplots(2, 1, panel_height_in=3.0, sharex=True)
    for ax, par in zip(axes, ("mu", "sigma")):
        for d in designs:
            colour, marker, ls = BASELINE_STYLE[d]
            ax.plot(eps_grid, _array(data[f"{d}-rmse-{par}"]), color=colour, marker=marker, ls=ls, lw=1.2, ms=5,
                    label=BASELINE_LABEL[d], mfc="none" if d == "SMC-adaptive" else colour)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps_grid, [f"{e:g}" for e in eps_grid])
        ax.set_ylabel(f"RMSE of {TEX[par]} (data units)")
    axes[-1].set_xlabel("privacy parameter $\\epsilon$")
    figures.legend_below(fig, ncol=2, fontsize=10)
    return fig


def fig_fair_twostage(data: Mapping[str, Any], params: Mapping[str, Any], eps: Sequence[float] | None = None) -> Any:
    """Notebook 03e: RMSE against eps of the fair two-stage designs and SMC-adaptive (mu left, sigma right).

    ``data[f"{design}-rmse-{par}"]`` holds one value per eps of the stored paper-scale run, which ``eps``
    gives (default ``params["eps_grid"]``, the same list in every stored run).
    """
    eps_axis = [float(e) for e in (params["eps_grid"] if eps is None else eps)]
    designs = [d for d in FAIR_STYLE if f"{d}-rmse-mu" in data]
    unknown = sorted({k.split("-rmse-")[0] for k in data if "-rmse-" in k} - set(designs))
    if unknown:
        raise ValueError(f"fig-fair-twostage: no style for the design(s) {', '.join(unknown)}")
    fig, axes = figures.column_subplots(1, 2, panel_height_in=2.8, sharex=True)
    for ax, par in zip(np.ravel(axes), ("mu", "sigma")):
        for d in designs:
            rmse = _array(data[f"{d}-rmse-{par}"])
            if rmse.size != len(eps_axis):
                raise ValueError(f"fig-fair-twostage: {d}-rmse-{par} has {rmse.size} values for {len(eps_axis)} eps")
            colour, marker, ls = FAIR_STYLE[d]
            ax.plot(eps_axis, rmse, color=colour, marker=marker, ls=ls, lw=1.2, ms=5, label=d)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(eps_axis, [f"{e:g}" for e in eps_axis])
        ax.set_xlabel("privacy parameter $\\epsilon$")
        ax.set_ylabel(f"RMSE of {TEX[par]} (data units)")
    figures.legend_below(fig, ncol=3, fontsize=10)
    return fig


def estimators_as_functions(data: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    """Notebook 04c: the estimators as functions of the noisy count, one panel per eps of ``params["eps"]``.

    ``data[f"eps{e:g}_y"]``, ``_mean``, ``_median``: the noisy counts and the posterior mean and median at
    them; the naive and clamped estimates are ``y`` and ``y`` clamped to ``[0, n]``.
    """
    from dpbayes.counting import model as ct

    n, p = int(params["n"]), float(params["p"])
    fig, axes = figures.column_subplots(len(params["eps"]), panel_height_in=3.0, squeeze=False, layout="constrained")
    for ax, e in zip(axes[:, 0], params["eps"]):
        y = _array(_series(data, f"eps{e:g}_y", "estimators-as-functions"))
        ax.plot(y, y, ":", color="C0", label="naive")
        ax.plot(y, ct.estimate("clamped", y, n, p, e), "-.", color="C1", label="clamped")
        ax.plot(y, _array(data[f"eps{e:g}_mean"]), "-", color="C2", label="posterior mean")
        ax.plot(y, _array(data[f"eps{e:g}_median"]), "--", color="C3", label="posterior median")
        ax.set_xlabel("noisy count $y$ (records)")
        ax.set_ylabel("estimate (records)")
        ax.set_title(f"$n$ = {n}, $p$ = {p:g}, $\\varepsilon$ = {e:g}", fontsize=10)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncol=4)
    return fig


def estimators_vs_eps(data: Mapping[str, Any], params: Mapping[str, Any],
                      mc_se: Mapping[str, Sequence[float]] | None = None) -> Any:
    """Notebook 04c: average error of every estimator against eps, in units of the naive 1/eps.

    One panel per database size (``params["n"]``, and ``params["n_lp"]`` when different): exact curves
    ``data[f"n{nn}_{name}"]`` on ``data["eps_grid"]``, Monte-Carlo points ``data[f"mc_{name}"]`` on
    ``data["eps_mc"]`` (at ``n``) and the LP optimum ``data["lp_risk"]`` on ``data["eps_lp"]`` (at ``n_lp``).
    ``mc_se`` (standard errors of the Monte-Carlo points, by estimator; the figure's data do not keep them)
    draws them as +-2 SE bars, which do not enter the axes' limits; without it (a redraw of a stored run)
    the points are drawn without bars (at the book's 10^5 runs a bar is a few pixels long, about the
    marker's size) and the frame stays the same.
    """
    from matplotlib.collections import LineCollection

    n, n_lp, p = int(params["n"]), int(params["n_lp"]), float(params["p"])
    eps_grid, eps_mc, eps_lp = _array(data["eps_grid"]), _array(data["eps_mc"]), _array(data["eps_lp"])
    panels = (n,) if n_lp == n else (n, n_lp)
    fig, axes = figures.column_subplots(len(panels), panel_height_in=3.4, sharex=True, sharey=True, squeeze=False,
                                        layout="constrained")
    for ax, nn in zip(axes[:, 0], panels):
        for i, (name, label) in enumerate(LAPLACE.items()):
            ax.plot(eps_grid, _array(_series(data, f"n{nn}_{name}", "estimators-vs-eps")) * eps_grid,
                    LAPLACE_STYLE[name], color=f"C{i}", label=label)
            if nn == n:
                y_mc = _array(data[f"mc_{name}"]) * eps_mc
                ax.plot(eps_mc, y_mc, "o", color=f"C{i}", ms=3)
                if mc_se is not None:  # not part of the axes' limits: a redraw without them keeps the same frame
                    half = 2 * _array(mc_se[name]) * eps_mc
                    ax.add_collection(LineCollection([[(x, y - h), (x, y + h)] for x, y, h in zip(eps_mc, y_mc, half)],
                                                     colors=f"C{i}", linewidths=1.0), autolim=False)
        ax.plot(eps_grid, _array(data[f"n{nn}_geometric"]) * eps_grid, color="C4", ls=(0, (6, 2, 1, 2, 1, 2)),
                label="geometric + posterior median")
        if nn == n_lp:
            ax.plot(eps_lp, _array(data["lp_risk"]) * eps_lp, "kx", ms=8, mew=2, label=r"optimal $\varepsilon$-DP (LP)")
        ax.set_xscale("log")
        ax.set_ylabel(r"average error / naive $1/\varepsilon$")
        ax.set_title(f"$n$ = {nn}, $p$ = {p:g}", fontsize=10)
    axes[-1, 0].set_xlabel(r"privacy parameter $\varepsilon$")
    figures.legend_below(fig, ncol=2)
    return fig


#: (chapter, figure id) -> the function that draws it from its stored ``data`` and ``params``.
DRAWINGS: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Any]] = {
    (CH3, "fig1-particles"): fig1_particles,
    (CH3, "fig2-boxplots"): fig2_boxplots,
    (CH3, "fig3-real-data-particles"): fig3_real_data_particles,
    (CH3, "fig-baselines-rmse"): fig_baselines_rmse,
    (CH3, "fig-fair-twostage"): fig_fair_twostage,
    (CH4, "estimators-as-functions"): estimators_as_functions,
    (CH4, "estimators-vs-eps"): estimators_vs_eps,
}


class RedrawError(ValueError):
    """A figure file that :func:`redraw_stored` cannot redraw (no drawing function, or not a figure JSON)."""


def _figure_jsons(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.glob("*.json")
                  if not p.name.startswith("results-") and p.name != figures.RUN_MANIFEST)


def _drawing(payload: Mapping[str, Any], path: Path) -> Callable[[Mapping[str, Any], Mapping[str, Any]], Any]:
    if not {"chapter", "figure_id", "data", "params"} <= set(payload):
        raise RedrawError(f"{path}: not a figure JSON written by save_figure (needs chapter, figure_id, data, params)")
    key = (payload["chapter"], payload["figure_id"])
    if key not in DRAWINGS:
        known = ", ".join(f"{c}/{f}" for c, f in DRAWINGS)
        raise RedrawError(f"{path}: no drawing function for figure {key[0]}/{key[1]} "
                          f"(dpbayes.book.chapter_figures draws {known})")
    return DRAWINGS[key]


def redraw_figure(path: str | Path) -> dict[str, Any]:
    """Redraw one stored figure from its JSON: rewrite the PNG beside it and the JSON's ``layout``.

    Everything else of the JSON (``data``, ``params``, ``note``, ``tolerance``, the version) is written
    back unchanged; both files are replaced atomically, the PNG first (as ``save_figure`` does). The
    figure is drawn in the book's style (:data:`dpbayes.book.figures.STYLE` over matplotlib's defaults),
    as a notebook draws it. Returns the new ``layout``.
    """
    import matplotlib.pyplot as plt

    path = Path(path)
    payload = json.loads(path.read_text(encoding="utf-8"))
    draw = _drawing(payload, path)
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(figures.STYLE)
        fig = draw(payload["data"], payload["params"])
        try:
            with atomic_path(path.with_suffix(".png")) as tmp:
                fig.savefig(tmp, format="png", metadata={"Software": None})
            layout = figures.figure_layout(fig)  # after drawing, as save_figure measures it
        finally:
            plt.close(fig)
    atomic_write_text(path, json.dumps({**payload, "layout": layout}, indent=1, sort_keys=True) + "\n")
    return layout


def plan_redraw(run_dir: str | Path) -> list[Path]:
    """The figure JSONs of a stored run (``figures/<chapter>/runs/<label>/``), each checked to have a
    drawing function; raises :class:`RedrawError` otherwise (nothing is written)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RedrawError(f"{run_dir}: not a directory (a stored run is figures/<chapter>/runs/<label>/)")
    paths = _figure_jsons(run_dir)
    if not paths:
        raise RedrawError(f"{run_dir}: no figure JSON to redraw")
    for path in paths:
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RedrawError(f"{path}: not JSON ({exc})") from None
        _drawing(payload, path)
    return paths


def redraw_stored(run_dir: str | Path) -> dict[str, dict[str, Any]]:
    """Redraw every figure of a stored run (``figures/<chapter>/runs/<label>/``) from its JSON.

    Every figure is checked for a drawing function before any file is written (:func:`plan_redraw`),
    so that an unknown figure id (:class:`RedrawError`) leaves the run as it was. Returns
    ``{figure_id: layout}``.
    """
    return {path.stem: redraw_figure(path) for path in plan_redraw(run_dir)}
