"""bench/verdicts.py: its tests computed by hand, and its error rates checked
by simulation (numpy only): under an effect planted exactly at a claim's
bound, "reproduced" and "not reproduced" come out at most at alpha (plus
simulation error); at the MDE the power is about 80%."""

import math

import numpy as np
import pytest
from conftest import load_bench_script
from scipy import integrate
from scipy import stats

verdicts = load_bench_script("verdicts")
ALPHA = verdicts.ALPHA
CAMPAIGNS = 2000
# three binomial standard errors of a rate of alpha over the campaigns
SIM_ERROR = 3 * math.sqrt(ALPHA * (1 - ALPHA) / CAMPAIGNS)
MOVIE, TWEETS = 1060, 420


# --------------------------------------------------------------------------
# By hand


def test_paired_t_by_hand_for_three_seeds():
    # differences 0.03, 0.04, 0.02: mean 0.03, sd 0.01, SE 0.01 / sqrt(3)
    verdict = verdicts.compare({0: 0.83, 1: 0.85, 2: 0.84}, {0: 0.80, 1: 0.81, 2: 0.82})
    se = 0.01 / math.sqrt(3)
    t = 0.03 / se  # 5.196
    # Student's t with 2 df: P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2
    assert verdict.p == pytest.approx((1 - t / math.sqrt(t * t + 2)) / 2, rel=1e-9)
    assert verdict.p == pytest.approx(0.01754, abs=1e-5)
    # its 95% quantile: 0.9 / sqrt(2 * 0.95 * 0.05) = 2.919986
    half = 0.9 / math.sqrt(2 * 0.95 * 0.05) * se
    assert (verdict.low, verdict.high) == pytest.approx((0.03 - half, 0.03 + half))
    assert verdict.mde == pytest.approx(3.979 * se, rel=1e-3)  # noncentral t, df 2
    assert verdict.cells() == [
        "> 0 points", "+3.00 points [+1.31, +4.69]", "0.018", "2.30 points",
        "paired, 3 seeds (df 2), no test-set term", "**reproduced**"]
    # the same rows the other way: the bounds exclude the claim
    assert verdicts.compare({0: 0.80, 1: 0.81, 2: 0.82},
                            {0: 0.83, 1: 0.85, 2: 0.84}).result == "not reproduced"


def test_the_test_set_term_by_hand():
    """p averages the normal p over the seed variance (chi-square, df from
    the seeds): checked against a direct integral."""
    better, worse = {0: 0.83, 1: 0.85, 2: 0.84}, {0: 0.80, 1: 0.81, 2: 0.82}
    verdict = verdicts.compare(better, worse, n_test=MOVIE)
    seed_var = 0.01 ** 2 / 3
    test_var = (0.84 * 0.16 + 0.81 * 0.19) / MOVIE  # binomial, summed

    def integrand(x):  # x ~ chi2(2): the seed variance seed_var * 2 / x
        se = math.sqrt(seed_var * 2 / x + test_var)
        return stats.norm.sf(0.03 / se) * stats.chi2.pdf(x, 2)

    expected = integrate.quad(integrand, 0, np.inf)[0]
    assert verdict.p == pytest.approx(expected, abs=2e-4)
    assert verdict.p == pytest.approx(0.0647, abs=1e-3)
    # between the z test on the test-set term alone and the t on both
    se = math.sqrt(seed_var + test_var)
    assert stats.norm.sf(0.03 / se) < verdict.p < stats.t.sf(0.03 / se, 2)
    assert verdict.result == "inconclusive"
    assert verdict.test == "paired, 3 seeds (df 2) + test set"
    low, high = verdict.low, verdict.high  # each end's own p is alpha
    assert verdicts.tail(0.03 - low, seed_var, test_var, 2) == pytest.approx(ALPHA, abs=1e-6)
    assert high - 0.03 == pytest.approx(0.03 - low)


def test_the_paired_sentence_term_by_hand():
    """With per-sentence correctness, the test-set term is var(d) / N, d_i
    the mean over seeds of the two rows' difference on sentence i: two
    rows that agree on most sentences get a far smaller term than the
    binomial sum."""
    n = 400
    rng = np.random.default_rng(0)
    worse = {s: (rng.random(n) < 0.8).astype(int) for s in range(3)}
    better = {}
    for s, row in worse.items():  # the same sentences, 12 flipped to right, 4 to wrong
        row = row.copy()
        wrong, right = np.flatnonzero(row == 0), np.flatnonzero(row == 1)
        row[wrong[:12]], row[right[:4]] = 1, 0
        better[s] = row
    acc = lambda rows: {s: float(r.mean()) for s, r in rows.items()}  # noqa: E731
    d = np.mean([better[s] - worse[s] for s in range(3)], axis=0)
    assert verdicts.paired_sentence_var([better[s] for s in range(3)],
                                        [worse[s] for s in range(3)]) == pytest.approx(
        d.var(ddof=1) / n)
    assert verdicts.paired_sentence_var([[1, 1, 0, 0]], [[1, 0, 0, 0]]) == 0.0625
    paired = verdicts.compare(acc(better), acc(worse), n_test=n,
                              correct=(better, worse))
    plain = verdicts.compare(acc(better), acc(worse), n_test=n)
    assert paired.test == "paired, 3 seeds (df 2) + test set, paired by sentence"
    assert paired.effect == pytest.approx(8 / n)  # +2 points at every seed
    # 16 discordant sentences of 400: var(d) / N = (16/400 - 0.02^2) ... / 400
    assert paired.high - paired.low < 0.5 * (plain.high - plain.low)
    assert paired.result == "reproduced" and plain.result == "inconclusive"
    # a seed without its sentences: the binomial term for the whole comparison
    partial = verdicts.compare(acc(better), acc(worse), n_test=n,
                               correct=({0: better[0]}, worse))
    assert partial.test == plain.test and partial.p == pytest.approx(plain.p)
    with pytest.raises(ValueError, match="one shape"):
        verdicts.paired_sentence_var([[1, 0]], [[1, 0, 1]])


def test_paired_sentence_term_false_positives_under_a_tie():
    """Two rows of the same true accuracy that each flip 5% of a shared
    base's sentences, seed by seed: "reproduced" (and "not reproduced") at
    a rate of at most alpha with the paired sentence term (simulated, one
    campaign per row of the arrays)."""
    gen = np.random.default_rng(1)
    trials, seeds, n = CAMPAIGNS, 3, 300
    base = gen.random((trials, 1, n)) < 0.85
    a = base ^ (gen.random((trials, seeds, n)) < 0.05)
    b = base ^ (gen.random((trials, seeds, n)) < 0.05)
    estimate = verdicts.difference(a.mean(-1), b.mean(-1), True)
    d = (a.astype(float) - b).mean(1)  # (trials, n): mean over seeds per sentence
    estimate.test_var = d.var(-1, ddof=1) / n
    reproduced, not_reproduced = rates(estimate.p(0.0))
    assert reproduced <= ALPHA + SIM_ERROR and not_reproduced <= ALPHA + SIM_ERROR


def test_welch_by_hand_when_the_seeds_differ():
    better = {0: 0.80, 1: 0.82, 2: 0.84}  # mean 0.82, variance 4e-4
    worse = {0: 0.79, 3: 0.80}            # mean 0.795, variance 5e-5
    verdict = verdicts.compare(better, worse)
    va, vb = 4e-4 / 3, 5e-5 / 2
    df = (va + vb) ** 2 / (va ** 2 / 2 + vb ** 2 / 1)
    assert verdict.p == pytest.approx(stats.t.sf(0.025 / math.sqrt(va + vb), df))
    assert verdict.test == f"Welch, 3 / 2 seeds (df {df:.3g}), no test-set term"
    assert verdicts.compare(better, {0: 0.79}).result == "pending"


def test_non_inferiority_on_a_tie():
    tie = verdicts.compare({0: 0.840, 1: 0.850, 2: 0.845}, {0: 0.841, 1: 0.849, 2: 0.845},
                           margin=verdicts.MARGIN)
    assert tie.result == "reproduced" and tie.bound == "≥ -1.00 points"
    # the same tie with the test-set term: bounds of about 3 points, no verdict
    assert verdicts.compare({0: 0.840, 1: 0.850, 2: 0.845}, {0: 0.841, 1: 0.849, 2: 0.845},
                            n_test=MOVIE, margin=verdicts.MARGIN).result == "inconclusive"
    behind = verdicts.compare({0: 0.81, 1: 0.82, 2: 0.815}, {0: 0.84, 1: 0.85, 2: 0.845},
                              margin=verdicts.MARGIN)
    assert behind.result == "not reproduced"  # 3 points behind, beyond the margin


def test_one_sample_bounds():
    # 0.83, 0.835, 0.84 of a teacher at 0.85: 97.6%-98.8%, above 97%
    ratio = verdicts.ratio_at_least({0: 0.83, 1: 0.835, 2: 0.84}, 0.85, 0.97)
    assert ratio.result == "reproduced" and ratio.effect_cell().startswith("98.2% [")
    assert verdicts.ratio_at_least({0: 0.83, 1: 0.835, 2: 0.84}, 0.85, 0.97,
                                   n_test=MOVIE).result == "inconclusive"
    assert verdicts.ratio_at_least({0: 0.8}, 0.84, 0.97).test == "1 seed(s), 2 needed"

    def curve(full, at_half, layers):
        return {"full": {"accuracy": full, "avg_layers": 6.0}, "rows": [
            {"speed": 0.0, "accuracy": full, "avg_layers": 6.0},
            {"speed": 0.5, "accuracy": at_half, "avg_layers": layers}]}

    kept = verdicts.fastbert_claim({s: curve(0.85, 0.85 - d, 3.0)
                                    for s, d in enumerate([0.001, 0.002, 0.003])})
    assert kept.result == "reproduced" and kept.bound == "≤ 1.00 points lost"
    assert kept.effect_cell().endswith("; speed 0.5: 50% of the layers")
    lost = verdicts.fastbert_claim({s: curve(0.85, 0.85 - d, 3.0)
                                    for s, d in enumerate([0.04, 0.05, 0.06])})
    assert lost.result == "not reproduced"
    none_saved = verdicts.fastbert_claim({s: curve(0.85, 0.85, 6.0) for s in range(3)})
    assert none_saved.result == "not reproduced" and none_saved.test == "no layer saved"
    # the seq2seq gain, BLEU: no test-set term
    gain = verdicts.compare({0: 20.0, 1: 21.0, 2: 19.0}, {0: 39.0, 1: 40.0, 2: 38.5},
                            scale=verdicts.BLEU)
    assert gain.result == "not reproduced" and gain.effect_cell().startswith("-19.17 BLEU")


def test_cells_never_print_a_number_as_the_threshold_it_just_passes():
    # p 0.0495 is below alpha: 3 decimals would print it as 0.050
    assert verdicts.Verdict("reproduced", p=0.0495).p_cell() == "0.0495"
    assert verdicts.Verdict("not reproduced", p=0.9504).p_cell() == "0.9504"
    assert verdicts.Verdict("inconclusive", p=0.1234).p_cell() == "0.123"
    assert verdicts.Verdict("reproduced", p=0.05).p_cell() == "0.050"
    # a lower bound of 97.008% beside the claim's 97%: one more digit
    ratio = verdicts.Verdict("reproduced", 0.999, 0.97008, 1.0288, 0.0495,
                             scale=verdicts.PERCENT, threshold=0.97)
    assert ratio.effect_cell() == "99.9% [97.01, 102.9]"
    # no threshold, or one the bounds read apart from: the scale's digits
    assert verdicts.Verdict("reproduced", 0.999, 0.97008, 1.0288, 0.0495,
                            scale=verdicts.PERCENT).effect_cell() == "99.9% [97.0, 102.9]"
    assert verdicts.Verdict("inconclusive", 0.0042, -0.0023, 0.0108, 0.128,
                            threshold=0.0).effect_cell() == "+0.42 points [-0.23, +1.08]"


def mtdnn_runs(ensemble, plain, distilled, metric="accuracy"):
    return {s: {"metric": metric, "ensemble": e, "multi_task": p, "multi_task_kd": d}
            for s, (e, p, d) in enumerate(zip(ensemble, plain, distilled))}


def test_a_magnitude_claim_at_20_percent_kept_is_not_reproduced():
    """The ensembles gain 10 points, distillation keeps 2 of them: not
    significant as a gain, but the test of ">= 50% kept" rejects."""
    ensemble, plain, distilled = [0.900, 0.902, 0.898], [0.795, 0.800, 0.805], [
        0.818, 0.822, 0.820]
    verdict = verdicts.kept_share(mtdnn_runs(ensemble, plain, distilled), n_test=MOVIE)
    assert verdict.effect == pytest.approx(0.2)
    assert verdict.result == "not reproduced" and verdict.p > 0.95
    assert verdict.high < 0.5 < 1.0  # Fieller's upper bound excludes the claim
    gain = verdicts.compare(dict(enumerate(distilled)), dict(enumerate(plain)),
                            n_test=MOVIE)
    assert gain.result == "inconclusive"
    # the contrast by hand: (kd - plain) - 0.5 (ensemble - plain) per seed
    c = [d - p - 0.5 * (e - p) for e, p, d in zip(ensemble, plain, distilled)]
    assert verdicts.contrast(distilled, plain, ensemble, 0.5).effect == pytest.approx(
        np.mean(c))
    no_gain = verdicts.kept_share(mtdnn_runs([0.8] * 3, plain, distilled))
    assert no_gain.result == "inconclusive" and "no gain to keep" in no_gain.note
    assert verdicts.kept_share(mtdnn_runs(ensemble[:1], plain, distilled)).result == "pending"


# --------------------------------------------------------------------------
# Simulated campaigns


def rng():
    return np.random.default_rng(48)


def rows(gen, n, means, seed_sd, n_test, rho=0.5):
    """Per-seed test accuracies of rows with true `means`, `CAMPAIGNS` times:
    each row's test-set error (binomial variance, fixed across seeds) plus
    seed noise correlated `rho` between rows (a shared data order)."""
    shared = gen.normal(size=(CAMPAIGNS, n))
    out = []
    for mean in means:
        own = gen.normal(size=(CAMPAIGNS, n))
        test = gen.normal(0, math.sqrt(mean * (1 - mean) / n_test), (CAMPAIGNS, 1)) \
            if n_test else 0.0
        out.append(mean + test + seed_sd * (math.sqrt(rho) * shared
                                            + math.sqrt(1 - rho) * own))
    return out


def rates(p):
    return (p < ALPHA).mean(), (p > 1 - ALPHA).mean()


@pytest.mark.parametrize("n, seed_sd, n_test", [
    (3, 0.015, MOVIE), (3, 0.004, TWEETS), (2, 0.02, TWEETS), (5, 0.01, None)])
def test_paired_false_positives_under_a_tie(n, seed_sd, n_test):
    a, b = rows(rng(), n, [0.83, 0.83], seed_sd, n_test)
    reproduced, not_reproduced = rates(verdicts.difference(a, b, True, n_test).p(0.0))
    assert reproduced <= ALPHA + SIM_ERROR and not_reproduced <= ALPHA + SIM_ERROR


def test_welch_false_positives_under_a_tie():
    gen = rng()
    a, = rows(gen, 3, [0.83], 0.02, MOVIE)
    b, = rows(gen, 2, [0.83], 0.008, MOVIE)
    reproduced, not_reproduced = rates(verdicts.difference(a, b, False, MOVIE).p(0.0))
    assert reproduced <= ALPHA + SIM_ERROR and not_reproduced <= ALPHA + SIM_ERROR


def test_non_inferiority_at_its_margin_and_on_a_tie():
    margin = verdicts.MARGIN
    a, b = rows(rng(), 3, [0.83 - margin, 0.83], 0.01, MOVIE)
    at_margin = verdicts.difference(a, b, True, MOVIE).p(-margin)
    assert rates(at_margin)[0] <= ALPHA + SIM_ERROR
    a, b = rows(rng(), 3, [0.83, 0.83], 0.01, MOVIE)
    tie = verdicts.difference(a, b, True, MOVIE).p(-margin)
    reproduced, not_reproduced = rates(tie)
    # a tie is read as "worse by more than the margin" less often than alpha
    assert not_reproduced < rates(at_margin)[1] <= ALPHA + SIM_ERROR
    assert reproduced > rates(at_margin)[0]


def test_one_sample_bounds_false_positives():
    gen = rng()
    # student / teacher exactly 97%, the teacher's own test-set error included
    students, teacher = rows(gen, 3, [0.97 * 0.86, 0.86], 0.006, MOVIE)
    teacher = teacher[:, 0]  # one teacher: its seed noise is the row's own
    p = verdicts.ratio(students, teacher, MOVIE).p(0.97)
    assert max(rates(p)) <= ALPHA + SIM_ERROR
    # FastBERT: the drop exactly 1 point (an upper-bound claim)
    full, exits = rows(gen, 3, [0.86, 0.85], 0.003, MOVIE, rho=0.9)
    p = verdicts.difference(full, exits, True, MOVIE).p(0.01, above=False)
    assert max(rates(p)) <= ALPHA + SIM_ERROR


def test_magnitude_claim_false_positives_at_half_the_gain():
    plain, ensemble, distilled = rows(rng(), 3, [0.80, 0.86, 0.83], 0.01, TWEETS)
    p = verdicts.contrast(distilled, plain, ensemble, 0.5, TWEETS).p(0.0)
    assert max(rates(p)) <= ALPHA + SIM_ERROR


@pytest.mark.parametrize("n, seed_sd, n_test", [(3, 0.015, MOVIE), (5, 0.01, None)])
def test_power_at_the_mde_is_80_percent(n, seed_sd, n_test):
    """The MDE from the true variances, planted half on each row (the
    binomial term then stays the one the MDE assumed)."""
    test_var = 2 * 0.83 * 0.17 / n_test if n_test else 0.0
    seed_var = seed_sd ** 2 * 2 * (1 - 0.5) / n  # of the mean of the differences
    mde = verdicts.mde(seed_var, test_var, n - 1)
    a, b = rows(rng(), n, [0.83 + mde / 2, 0.83 - mde / 2], seed_sd, n_test)
    power = rates(verdicts.difference(a, b, True, n_test).p(0.0))[0]
    assert power == pytest.approx(verdicts.POWER, abs=0.035)
