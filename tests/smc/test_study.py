"""The simulation study driver: replicates seed themselves, so workers and method subsets change nothing."""

import numpy as np
import pytest

from dpbayes.smc import samplers as smc, study as smc_study, truncation

CONFIG = smc_study.StudyConfig(n=25, n_particles=40, mu_true=50.0, sigma_true=np.sqrt(10.0),
                               nonadaptive_halfwidth=10.0, mcmc_iter=200, mcmc_burn_in=50, store_every=5)
EPS_GRID, B_GRID = [2.0, 10.0], [0.12, 0.96]


@pytest.fixture(scope="module")
def serial():
    return smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=2, n_jobs=1)


def _numbers(replicates):
    return [(r.eps_index, r.run, r.estimates, {k: v.tolist() for k, v in r.fisher.items()}) for r in replicates]


def test_worker_processes_give_identical_numbers(serial):
    progress = []
    parallel = smc_study.simulation_study(CONFIG, EPS_GRID, B_GRID, n_runs=2, n_jobs=2,
                                          progress=lambda done, total: progress.append((done, total)))
    assert _numbers(parallel) == _numbers(serial)
    assert progress == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    kept = [r for r in parallel if r.latent_runs is not None]
    assert [(r.eps_index, r.run) for r in kept] == [(0, 0), (1, 0)]  # run 0 of each eps, for Fig. 1
    np.testing.assert_array_equal(kept[0].latent_runs[0].stored_mu, serial[0].latent_runs[0].stored_mu)


def test_leaving_out_a_method_changes_no_other(serial):
    subset = smc_study.StudyConfig(**{**CONFIG.__dict__, "methods": ("exact-SMC-adaptive", "MCMC")})
    only = smc_study.simulation_study(subset, EPS_GRID, B_GRID, n_runs=2)
    for full, part in zip(serial, only):
        assert list(part.estimates) == ["MCMC", "exact-SMC-adaptive"]  # canonical order
        for name in part.estimates:
            assert part.estimates[name] == full.estimates[name]
        assert part.latent_runs is None


def test_fisher_information_of_each_method(serial):
    rep = serial[0]
    fixed = CONFIG.n * truncation.fisher_information_normal(50.0, np.sqrt(10.0), *CONFIG.fixed_interval, EPS_GRID[0])
    for name in ("SMC-nonadaptive", "MCMC"):
        np.testing.assert_allclose(rep.fisher[name], fixed)
    ada = rep.latent_runs[0]
    np.testing.assert_allclose(rep.fisher["SMC-adaptive"],
                               smc.realised_fisher_information(ada.lower, ada.upper, 50.0, np.sqrt(10.0), EPS_GRID[0]))
    # the adaptive intervals are narrower than mu +- 10 sigma, so each release says more about mu
    assert rep.fisher["SMC-adaptive"][0, 0] > fixed[0, 0]


def test_replicate_reproduces_the_samplers_on_its_own_streams(serial):
    # replicate (eps index 1, run 1) must be the documented SeedSequence([seed, 1, 1]) spawn
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence([CONFIG.seed, 1, 1]).spawn(6)]
    x = 50.0 + np.sqrt(10.0) * streams[0].standard_normal(CONFIG.n)
    noise = streams[1].laplace(size=CONFIG.n)
    exa = smc.smc_exact(x, EPS_GRID[1], streams[5], n_particles=CONFIG.n_particles, ab=(-B_GRID[1], B_GRID[1]),
                        noise=noise, store_every=CONFIG.store_every)
    assert serial[3].estimates["exact-SMC-adaptive"] == (exa.mean_mu[-1], exa.mean_sigma[-1])


@pytest.mark.parametrize("kwargs, match", [
    ({"n_runs": 0}, "n_runs"),
    ({"n_jobs": 0}, "n_jobs"),
    ({"eps_grid": [1.0, -1.0]}, "eps_grid"),
    ({"eps_grid": []}, "eps_grid"),
    ({"b_grid": [0.1]}, "b_grid"),
])
def test_bad_study_arguments(kwargs, match):
    args = {"eps_grid": EPS_GRID, "b_grid": B_GRID, "n_runs": 1} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        smc_study.simulation_study(CONFIG, **args)


@pytest.mark.parametrize("field, value", [("methods", ("Gibbs",)), ("methods", ()), ("n", 0), ("sigma_true", -1.0)])
def test_bad_config(field, value):
    with pytest.raises((ValueError, TypeError), match=field):
        smc_study.StudyConfig(**{**CONFIG.__dict__, field: value})


def test_serial_tail_tasks_through_the_pool_match_the_inline_computation(serial):
    """The notebook's follow-ups (quadratures, pilots, off-centre runs) give the same numbers through
    map_tasks with two processes as computed inline in this process."""
    from dpbayes.smc import mcmc

    eps = EPS_GRID[0]
    wide = (40.0, 60.0)
    pilot_tasks = [(7, 0, run, 20, 50.0, np.sqrt(10.0), 1.0, eps, wide, 30) for run in range(2)]
    off_tasks = [(7, run, CONFIG.n, 50.0, np.sqrt(10.0), 1.0, eps, 30, ((-0.5, 0.5), (-0.3, 0.9))) for run in range(2)]
    progress = []
    pooled_pilots = smc_study.map_tasks(smc_study.seeded_two_stage_pilot, pilot_tasks, n_jobs=2,
                                        progress=lambda d, t: progress.append((d, t)))
    assert progress == [(0, 2), (1, 2), (2, 2)]
    pooled_off = smc_study.map_tasks(smc_study.seeded_interval_runs, off_tasks, n_jobs=2)
    pooled_err = smc_study.map_tasks(smc_study.replicate_mc_error,
                                     [(r.releases, r.estimates, EPS_GRID[r.eps_index]) for r in serial[:2]], n_jobs=2)
    for run in range(2):  # the cells' former inline code
        s_data, s_noise, s_smc = np.random.SeedSequence([7, 1000, run]).spawn(3)
        x_p = 50.0 + np.sqrt(10.0) * np.random.default_rng(s_data).standard_normal(20)
        w_p = np.random.default_rng(s_noise).laplace(size=20)
        assert pooled_pilots[run] == smc_study.two_stage_pilot(x_p, eps, w_p, wide, np.random.default_rng(s_smc), n_particles=30)
        ss = np.random.SeedSequence([7, 0, run]).spawn(8)
        x = 50.0 + np.sqrt(10.0) * np.random.default_rng(ss[0]).standard_normal(CONFIG.n)
        noise = np.random.default_rng(ss[1]).laplace(size=CONFIG.n)
        for ab, s, got in zip(((-0.5, 0.5), (-0.3, 0.9)), ss[6:], pooled_off[run]):
            res = smc.smc_exact(x, eps, np.random.default_rng(s), n_particles=30, ab=ab, noise=noise, store_every=CONFIG.n)
            assert got == (res.mean_mu[-1], res.mean_sigma[-1])
    assert pooled_off[0] != pooled_off[1]
    for rep, diffs in zip(serial[:2], pooled_err):
        assert list(diffs) == [m for m in smc_study.METHODS if m in rep.estimates]
        q = mcmc.quadrature_posterior(*rep.releases["MCMC"], EPS_GRID[rep.eps_index])
        assert diffs["MCMC"] == (rep.estimates["MCMC"][0] - q.mean_mu, rep.estimates["MCMC"][1] - q.mean_sigma, q.sd_mu, q.sd_sigma)
        assert diffs["SMC-nonadaptive"][2:] == diffs["MCMC"][2:]  # one quadrature for the shared releases


def test_replicate_records_credible_intervals_around_its_estimates() -> None:
    config = smc_study.StudyConfig(n=30, n_particles=50, mu_true=5.0, sigma_true=1.0, nonadaptive_halfwidth=5.0,
                                   mcmc_iter=300, mcmc_burn_in=100)
    rep = smc_study.run_replicate(config, 5.0, 0.5, 0, 0)
    assert set(rep.intervals) == set(rep.estimates)
    for name, ((mlo, mhi), (slo, shi)) in rep.intervals.items():
        mu_hat, sigma_hat = rep.estimates[name]
        assert mlo <= mhi and slo <= shi
        assert mlo - 1e-9 <= mu_hat <= mhi + 1e-9, name  # a 90 % interval holds the posterior mean here


# every name the study module had before its split (39), still importable from dpbayes.smc.study, and the very
# object of the module that now holds it
FORMER_NAMES = {
    "summaries": ["CREDIBLE_LEVEL", "error_summary", "weighted_quantile", "credible_interval", "coverage",
                      "PooledCoverage", "pooled_coverage"],
    "designs": ["fixed_interval_fisher", "design_fisher", "two_stage_pilot", "two_stage_fisher", "BASELINE_DESIGNS",
                    "BaselineReplicate", "baseline_replicate", "baseline_study"],
    "stream_privacy": ["TRANSCRIPT_FIELDS", "released_transcript", "first_transcript_difference", "NeighbourCheck",
                       "neighbour_stream_check"],
    "paired_tests": ["PAIRED_VERDICTS", "PairedComparison", "paired_comparison", "sign_test_p"],
    "fair_baseline": ["FAIR_DESIGNS", "FairReplicate", "fair_baseline_replicate", "fair_baseline_study"],
    "sampler_checks": ["CloudCheck", "cloud_vs_exact"],
    "study": ["METHODS", "StudyConfig", "Replicate", "run_replicate", "simulation_study", "map_tasks",
                  "replicate_mc_error", "seeded_two_stage_pilot", "seeded_interval_runs"],
}


def test_the_study_module_re_exports_every_former_name():
    import importlib

    former = [name for names in FORMER_NAMES.values() for name in names]
    assert len(former) == len(set(former)) == 39
    assert sorted(smc_study.__all__) == sorted(former)
    for module_name, names in FORMER_NAMES.items():
        module = importlib.import_module(f"dpbayes.smc.{module_name}")
        for name in names:
            assert getattr(smc_study, name) is getattr(module, name), name
            if module_name != "study":
                assert name in module.__all__, (module_name, name)
                if callable(module.__dict__[name]) and hasattr(module.__dict__[name], "__module__"):
                    assert module.__dict__[name].__module__ == f"dpbayes.smc.{module_name}", name  # defined there, pickled by it
