"""Verdicts on the papers' claims: the one rule every bench uses (issue #48).

    from verdicts import compare, ratio_at_least, fastbert_claim, kept_share

bench/claims.py, bench/seq2seq.py, bench/mtdnn.py and bench/fastbert.py
judge a paper's claim only through this module. Every rule:

**Effect and its standard error.** A claim is a statement about an *effect*
measured once per seed: a difference of two rows' test metrics, a ratio to
the teacher, an accuracy drop, a share of a gain. Its standard error adds
two independent variance terms:

- *seeds* (training randomness): the sample variance of the per-seed values
  over the seeds run. Two rows whose seed sets are identical share their
  data order (and initialisation) per seed, so they are **paired**: the
  effect is the mean of the per-seed differences, its seed variance
  var(differences) / n with n - 1 degrees of freedom. Rows with different
  seed sets are compared by **Welch**: var_A / n_A + var_B / n_B, its
  degrees of freedom by Welch-Satterthwaite. One-sample effects (a ratio,
  a drop, a contrast) are paired by construction: per-seed values, n - 1.
- *the test set* (it is one sample of sentences, shared by every seed): the
  variance of each measured metric on a fixed test set of N examples,
  p(1 - p) / N for an accuracy p (binomial) and (1 - r^2)^2 / (N - 1) for a
  Pearson correlation r (its large-sample variance), evaluated at the mean
  over seeds and **summed** over the metrics an effect combines (with the
  effect's coefficients squared). Not divided by the seeds: every seed is
  scored on the same sentences. Summing treats the models' errors as
  independent; two models scored on one test set err on many of the same
  sentences, so the true variance of their difference is smaller (it is
  the discordant share over N): the term is **conservative**, most of all
  for near-identical models (FastBERT's exits against its own full model).
  Where both rows of a paired comparison kept their per-sentence
  correctness (bench/claims.py stores it from each run's
  `predictions.npz`), `compare` uses the exact paired term instead:
  var(d) / N, d_i the mean over seeds of the two rows' difference on
  sentence i (`paired_sentence_var`).
  Test sizes: movie_snippets 1,060 sentences (one is 0.09 points; the term
  is about 1.1 points per accuracy near 0.85), tweets 420 (0.24 points; about
  1.3 points near 0.92). Corpus BLEU has no such formula and the results keep
  no per-sentence outputs for a bootstrap: the seq2seq claim has no
  test-set term (said in its section).

**The test.** One-sided at alpha = 0.05 (`ALPHA`), against the claim's
bound, the claim being the alternative: a t test on the combined standard
error whose seed term keeps the seeds' degrees of freedom (df: n - 1
paired, Welch's otherwise) and whose test-set term is known. Its p is the
normal p averaged over the seed variances the seeds leave possible,

    p = E[ P(Z > d / sqrt(s2 * df / X + v_test)) ],  X ~ chi2(df),

d the effect's distance beyond the bound, s2 the seeds' variance of the
mean, v_test the test-set term (`tail`: Tsui and Weerahandi's generalised
p, by quadrature over X): exactly Student's (Welch's) t when v_test is 0,
the z test when the seeds agree. Chosen over Student's t on the combined
standard error with the seeds' df (valid, but at 3 seeds its false-positive
rate falls to 0.2-4% where the test-set term dominates: power thrown away),
over Welch-Satterthwaite df counting the test-set term as known (liberal:
6-8% false positives at 2-3 seeds, simulated) and over an exact permutation
test (at 3 paired seeds its 8 sign flips cannot reach p < 0.05, the
smallest p being 1/8, and it has no place for the test-set term). Simulated
in `tests/bench/test_verdicts.py`: with the effect planted exactly at the
claim's bound, "reproduced" (and "not reproduced") comes out at a rate of
alpha or below (2-5% at 2-5 seeds over the range of seed / test-set
variance ratios), and at the MDE the power is about 80%.

**Claim kinds** (the effect's bound):

- superiority, "A > B" (`compare`): bound 0;
- non-inferiority, "A >= B" (`compare` with `margin`): A is not worse than
  B by more than the margin (`MARGIN`, 1 point: the size of the gaps the
  papers rank methods by, and FastBERT's own tolerance); bound -margin;
- one-sample bounds: "student / teacher >= 97%" (`ratio_at_least`: the
  per-seed ratio to the one teacher, the teacher's test-set term carried by
  the delta method), "FastBERT loses <= 1 point at speed 0.5"
  (`fastbert_claim`: the per-seed drop from the full model, an upper bound;
  no layer saved is "not reproduced" outright), "the seq2seq gain > 0"
  (`compare` on paired BLEU);
- magnitude, "keeps >= 50% of the ensembles' gain" (`kept_share`): judged by
  its bound alone, through the per-seed contrast
  (distilled - plain) - 0.5 (ensemble - plain), whose mean is above 0
  exactly when the share kept is above 50% (of a positive mean gain: without
  one there is nothing to keep and no verdict); so "not reproduced" needs only
  that the test rejects ">= 50%", not a significant gain from distillation.
  The share's interval is Fieller's (every share the test does not reject),
  unbounded when the ensembles' own gain is not significant.

**Interval, p, MDE, verdict.** The interval's ends are one-sided 95%
confidence bounds, effect -/+ the distance whose p is 0.05 (`half_width`;
t(0.95, df) x SE without the test-set term); together a two-sided 90%
interval, chosen so that interval and test never disagree. p is the
one-sided p of the claim's test. The verdict is

- *reproduced*: p < 0.05, the interval lies wholly on the claim's side of
  its bound;
- *not reproduced*: the interval excludes the claim, wholly on the other
  side (the reverse one-sided test rejects at 0.05: p > 0.95);
- *inconclusive*: neither (the interval contains the bound);
- *pending*: fewer than `MIN_SEEDS` (2) seeds in a row: no seed variance.

The MDE (minimum detectable effect) is how far beyond the claim's bound the
true effect must lie for an 80% chance (`POWER`) of "reproduced" at the
seeds run, taking the variances as measured (a plug-in): the noncentral t's
(4.0 standard errors at df 2, 3.0 at df 4) without the test-set term,
2.49 standard errors with seeds that agree, and in between the power
averaged over the seed variance a campaign may measure (`mde`). It is
printed beside each verdict so that "inconclusive" reads against the effect
the campaign could have seen.
"""

import dataclasses
import functools
import math

import numpy as np
from scipy import optimize
from scipy import special
from scipy import stats

ALPHA = 0.05      # one-sided
POWER = 0.80      # for the MDE
MARGIN = 0.01     # non-inferiority margin: 1 accuracy point
MIN_SEEDS = 2     # a seed variance needs two seeds
# The bounds of the claims that more than one bench judges.
FASTBERT_SPEED = 0.5      # FastBERT: the exit threshold the claim reads
FASTBERT_MAX_DROP = 0.01  # ... and the accuracy it may lose there
KEPT_SHARE = 0.5          # MT-DNN: "most of the ensembles' gain", at least half


# --------------------------------------------------------------------------
# Test-set sampling


def paired_sentence_var(correct_a, correct_b):
    """The test-set variance of mean(accuracy A) - mean(accuracy B) over
    seeds when both rows' per-sentence correctness is known: with
    `d_i = mean over seeds of (a_si - b_si)`, the effect is the mean of `d`
    over the N test sentences, and its sampling variance is
    `var(d) / N` (the paired, McNemar-like term: sentences both rows get
    right or both get wrong add nothing). `correct_a`, `correct_b`:
    `(seeds, N)` arrays of 0/1, the same seeds in the same order.

    >>> paired_sentence_var([[1, 1, 0, 0]], [[1, 0, 0, 0]])  # d = 0, 1, 0, 0
    0.0625
    """
    a, b = (np.asarray(x, dtype=float) for x in (correct_a, correct_b))
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"per-sentence correctness must be two (seeds, N) arrays "
                         f"of one shape, got {a.shape} and {b.shape}")
    d = (a - b).mean(0)
    return float(d.var(ddof=1) / d.size)


def binomial_var(p, n):
    """The variance of an accuracy `p` measured on `n` test examples."""
    return p * (1.0 - p) / n


def pearson_var(r, n):
    """The large-sample variance of a Pearson correlation `r` on `n` pairs."""
    return (1.0 - r * r) ** 2 / (n - 1)


SAMPLING_VAR = {"accuracy": binomial_var, "pearson": pearson_var}


def sampling_var(value, n_test, metric="accuracy"):
    """The test-set variance of one metric (0 without a test size)."""
    if n_test is None:
        return 0.0
    if metric not in SAMPLING_VAR:
        raise ValueError(f"no test-set variance for the metric {metric!r}")
    return SAMPLING_VAR[metric](value, n_test)


# --------------------------------------------------------------------------
# The estimate and the test (numpy arrays allowed: the simulations in
# tests/bench/test_verdicts.py run many campaigns at once)

NODES = 512        # quadrature nodes over the seed variance (the p)
POWER_NODES = 64   # ... over the seed variance a campaign may measure (the MDE)


@dataclasses.dataclass
class Estimate:
    """An effect; the variance of its estimate from the seeds, with the
    seeds' degrees of freedom; and from the test set (known)."""

    effect: object
    seed_var: object
    seed_df: object
    test_var: object = 0.0
    design: str = "paired"
    seeds: str = ""

    @property
    def se(self):
        return np.sqrt(self.seed_var + self.test_var)

    def p(self, bound, above=True):
        """The one-sided p of "effect > bound" (`above`) or "effect < bound"."""
        distance = (self.effect - bound) if above else (bound - self.effect)
        return tail(distance, self.seed_var, self.test_var, self.seed_df)

    def bounds(self, alpha=ALPHA):
        """The one-sided (1 - alpha) lower and upper confidence bounds."""
        half = half_width(float(self.seed_var), float(self.test_var),
                          float(self.seed_df), alpha)
        return float(self.effect) - half, float(self.effect) + half

    def mde(self, alpha=ALPHA, power=POWER):
        """How far beyond a bound the true effect must lie for `power`."""
        return mde(float(self.seed_var), float(self.test_var), float(self.seed_df),
                   alpha, power)


def one_sample(values, test_var=0.0, design="paired"):
    """The mean of per-seed values (last axis: seeds)."""
    values = np.asarray(values, dtype=float)
    n = values.shape[-1]
    return Estimate(values.mean(-1), values.var(-1, ddof=1) / n, n - 1, test_var,
                    design, f"{n} seeds")


def welch(a, b, test_var=0.0):
    """The difference of two rows' means over different seeds (Welch's df)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    na, nb = a.shape[-1], b.shape[-1]
    va, vb = a.var(-1, ddof=1) / na, b.var(-1, ddof=1) / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    return Estimate(a.mean(-1) - b.mean(-1), va + vb, np.nan_to_num(df, nan=1.0),
                    test_var, "Welch", f"{na} / {nb} seeds")


@functools.lru_cache(maxsize=64)
def _chi2_row(df, size):
    quantiles = (np.arange(size) + 0.5) / size
    return stats.chi2.ppf(quantiles, df) / df


def _chi2_nodes(df, size):
    """Quantile midpoints of chi2(df) / df, one row of `size` per df."""
    df = np.asarray(df, dtype=float)
    if df.size and np.all(df == df.flat[0]):
        return np.broadcast_to(_chi2_row(float(df.flat[0]), size), df.shape + (size,))
    quantiles = (np.arange(size) + 0.5) / size
    return stats.chi2.ppf(quantiles, df[..., None]) / df[..., None]


def tail(distance, seed_var, test_var, df):
    """The one-sided p of an effect `distance` beyond the claim's bound:
    E[P(Z > distance / sqrt(seed_var * df / X + test_var))], X ~ chi2(df)
    (module docstring); Student's t when `test_var` is 0, the normal when
    `seed_var` is."""
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        distance, seed_var, test_var, df)))
    d, u, c, k = (np.atleast_1d(x) for x in arrays)
    p = np.where(d > 0, 0.0, np.where(d < 0, 1.0, 0.5))  # no variance at all
    seeds_only, test_only, both = (c <= 0) & (u > 0), (u <= 0) & (c > 0), (u > 0) & (c > 0)
    p[seeds_only] = special.stdtr(k[seeds_only], -d[seeds_only] / np.sqrt(u[seeds_only]))
    p[test_only] = special.ndtr(-d[test_only] / np.sqrt(c[test_only]))
    if both.any():
        se = np.sqrt(u[both][:, None] / _chi2_nodes(k[both], NODES) + c[both][:, None])
        p[both] = special.ndtr(-d[both][:, None] / se).mean(-1)
    return p.reshape(arrays[0].shape) if arrays[0].ndim else float(p[0])


def half_width(seed_var, test_var, df, alpha=ALPHA):
    """The distance from the effect to its one-sided (1 - alpha) bound: the
    distance whose `tail` is alpha."""
    if test_var <= 0:
        return stats.t.ppf(1 - alpha, df) * math.sqrt(seed_var) if seed_var > 0 else 0.0
    if seed_var <= 0:
        return stats.norm.ppf(1 - alpha) * math.sqrt(test_var)
    high = stats.t.ppf(1 - alpha, df) * math.sqrt(seed_var + test_var)
    while tail(high, seed_var, test_var, df) > alpha:
        high *= 2
    return optimize.brentq(lambda h: tail(h, seed_var, test_var, df) - alpha, 0.0, high)


@functools.lru_cache(maxsize=256)
def _nct_multiplier(df, alpha, power):
    crit = stats.t.ppf(1 - alpha, df)
    return optimize.brentq(lambda m: stats.nct.sf(crit, df, m) - power, 0.0, 200.0)


def mde(seed_var, test_var, df, alpha=ALPHA, power=POWER):
    """The minimum detectable effect: the distance beyond the claim's bound
    at which the test says "reproduced" with probability `power`, the
    variances taken as measured. A campaign's effect estimate is normal
    with variance seed_var + test_var, and its measured seed variance
    seed_var * chi2(df) / df sets its critical distance (`half_width`):
    power = E[P(effect estimate > critical distance)]. Noncentral t when
    `test_var` is 0, z(1 - alpha) + z(power) standard errors when
    `seed_var` is."""
    if seed_var <= 0:
        return (stats.norm.ppf(1 - alpha) + stats.norm.ppf(power)) * math.sqrt(test_var)
    if test_var <= 0:
        return _nct_multiplier(round(df, 3), alpha, power) * math.sqrt(seed_var)
    critical = np.array([half_width(v, test_var, df, alpha)
                         for v in seed_var * _chi2_nodes(df, POWER_NODES)])
    sd = math.sqrt(seed_var + test_var)
    return optimize.brentq(
        lambda delta: special.ndtr((delta - critical) / sd).mean() - power,
        0.0, critical.max() + 10 * sd)


def outcome(p, alpha=ALPHA):
    """The verdict word of a one-sided p (see the module docstring)."""
    if p < alpha:
        return "reproduced"
    if 1.0 - p < alpha:
        return "not reproduced"
    return "inconclusive"


# --------------------------------------------------------------------------
# Verdicts and their cells


@dataclasses.dataclass(frozen=True)
class Scale:
    """How an effect is written: `factor` x value, `digits`, `unit`, with a
    sign (`signed`)."""

    factor: float = 100.0
    digits: int = 2
    unit: str = " points"
    signed: bool = True

    def __call__(self, value, unit=True, signed=None, digits=None):
        if value is None:
            return "–"
        sign = "+" if (self.signed if signed is None else signed) else ""
        if math.isinf(value):
            text = sign + "∞" if value > 0 else "-∞"
        else:
            text = f"{self.factor * value:{sign}.{self.digits if digits is None else digits}f}"
        return text + (self.unit if unit else "")

    def apart(self, value, reference, unit=True, signed=None):
        """`value` written so that it does not read as `reference` when the
        two differ (`digits_apart`): a confidence bound of 97.008% beside a
        claim's 97% reads 97.01%, not 97.0%."""
        if value is None or reference is None or math.isinf(value):
            return self(value, unit, signed)
        digits = digits_apart(lambda v, d: self(v, False, False, d), value, reference,
                              self.digits)
        return self(value, unit, signed, digits)


def digits_apart(write, value, reference, digits, most=3):
    """The fewest digits from `digits` (at most `most` more) at which
    `write(value, digits)` differs from `write(reference, digits)`, so a
    number just past a threshold never prints as the threshold itself.

    >>> digits_apart(lambda v, d: f"{v:.{d}f}", 0.0495, 0.05, 3)
    4
    """
    for extra in range(most + 1):
        if value == reference or write(value, digits + extra) != write(reference, digits + extra):
            return digits + extra
    return digits + most


POINTS = Scale()
PERCENT = Scale(100.0, 1, "%", signed=False)
SHARE = Scale(100.0, 0, "%", signed=False)
BLEU = Scale(1.0, 2, " BLEU")


@dataclasses.dataclass
class Verdict:
    """One claim's verdict in one domain: `result` (reproduced, not
    reproduced, inconclusive, pending), the claim's `bound` (text), the
    effect, its one-sided 95% confidence bounds `low` / `high`, the claim's
    one-sided `p`, the `mde`, the `test` run and a `note`; `scale` writes
    them."""

    result: str
    effect: float = None
    low: float = None
    high: float = None
    p: float = None
    mde: float = None
    test: str = ""
    note: str = ""
    scale: Scale = POINTS
    bound: str = ""
    threshold: float = None  # the claim's bound as a number, in the effect's units

    def effect_cell(self):
        """`+1.10 points [-3.36, +5.56]`, then the note."""
        text = self.scale(self.effect)
        if self.low is not None:
            low, high = (self.scale.apart(v, self.threshold, False)
                         for v in (self.low, self.high))
            text += f" [{low}, {high}]"
        elif self.effect is not None and self.result == "pending":
            text += " so far"
        return "; ".join(t for t in (text, self.note) if t and t != "–") or "–"

    def p_cell(self):
        if self.p is None:
            return "–"
        if self.p < 0.001:
            return "<0.001"
        if self.p > 0.999:
            return ">0.999"
        cut = ALPHA if self.p < 0.5 else 1.0 - ALPHA  # never print 0.0497 as 0.050
        digits = digits_apart(lambda v, d: f"{v:.{d}f}", self.p, cut, 3)
        return f"{self.p:.{digits}f}"

    def mde_cell(self):
        return self.scale(self.mde, signed=False)

    def cells(self):
        """The cells under `VERDICT_HEADER`."""
        return [self.bound or "–", self.effect_cell(), self.p_cell(), self.mde_cell(),
                self.test or "–", f"**{self.result}**"]

    def text(self):
        """One sentence: the verdict, effect, bounds, p and MDE."""
        if self.result == "pending":
            return f"**pending** ({self.effect_cell()}; {self.test})"
        if self.p is None:  # decided without a test
            return f"**{self.result}** (claim {self.bound}): {self.effect_cell()} ({self.test})"
        return (f"**{self.result}** (claim {self.bound}): {self.effect_cell()} "
                f"(one-sided 95% bounds), p = {self.p_cell()}, MDE "
                f"{self.mde_cell()} ({self.test})")


VERDICT_HEADER = ["claim's bound", "effect [one-sided 95% bounds]", "p",
                  "MDE (80% power, beyond the bound)", "test", "verdict"]


def table(rows, leading):
    """Markdown table lines: the `leading` column names, then
    `VERDICT_HEADER`'s; `rows`: `(leading cells, Verdict)`."""
    header = list(leading) + VERDICT_HEADER
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(list(cells) + verdict.cells()) + " |"
               for cells, verdict in rows])


def rule_text(alpha=ALPHA, power=POWER):
    """The rule in a few sentences, for a section's preamble."""
    return (
        "Verdicts (`bench/verdicts.py`, which states every rule): each claim's effect "
        f"with its one-sided {100 * (1 - alpha):.0f}% confidence bounds (together a "
        f"two-sided {100 * (1 - 2 * alpha):.0f}% interval) and the one-sided p of a "
        f"test at alpha {alpha:g} against the claim's bound, the claim the "
        "alternative. The standard error adds the seeds' spread (paired per seed "
        "where the rows share their seeds, Welch otherwise; df from the seeds) to "
        "the test set's sampling variance (p(1 - p) / N per accuracy, summed over "
        "the metrics an effect combines: conservative, as models scored on one "
        "test set share errors; \"paired by sentence\": var(d) / N over the test "
        "sentences, d_i the two rows' mean difference on sentence i, where both "
        "rows kept their per-sentence results), and p is the t test's with the test-set term "
        "known. *Reproduced*: the bounds lie on the claim's side of its bound "
        "(p < 0.05); *not reproduced*: they exclude the claim (p > 0.95); "
        f"*inconclusive*: neither; *pending*: under {MIN_SEEDS} seeds in a row. The "
        "MDE is how far beyond the claim's bound the true effect must lie for "
        f"{100 * power:.0f}% power at the seeds run.")


def judge(estimate, bound, above, scale, bound_text, n_test, note="", by_sentence=False):
    """The `Verdict` of "effect > bound" (`above`) or "effect < bound"
    (`n_test` None: the estimate has no test-set term, said in `test`;
    `by_sentence`: its test-set term is the paired sentence term)."""
    p = estimate.p(bound, above)
    low, high = estimate.bounds()
    df = float(estimate.seed_df)
    test_term = " + test set, paired by sentence" if by_sentence else " + test set"
    test = (f"{estimate.design}, {estimate.seeds} (df {df:.3g})"
            + (test_term if n_test else ", no test-set term"))
    return Verdict(outcome(p), float(estimate.effect), low, high, p, estimate.mde(),
                   test, note, scale, bound_text, bound)


def pending(counts, effect=None, scale=POINTS, bound="", note=""):
    """A verdict that needs more seeds (`counts`: seeds per row)."""
    test = f"{' / '.join(str(c) for c in counts)} seed(s), {MIN_SEEDS} needed"
    return Verdict("pending", effect, test=test, note=note, scale=scale, bound=bound)


def _mean(values):
    values = list(values)
    return float(np.mean(values)) if values else None


# --------------------------------------------------------------------------
# Effects (numpy arrays, the last axis the seeds)


def difference(better, worse, paired, n_test=None, metric="accuracy"):
    """The `Estimate` of mean(better) - mean(worse): paired per seed, or
    Welch; the test-set term of both means (none without `n_test`)."""
    a, b = np.asarray(better, dtype=float), np.asarray(worse, dtype=float)
    test_var = (sampling_var(a.mean(-1), n_test, metric)
                + sampling_var(b.mean(-1), n_test, metric))
    return one_sample(a - b, test_var) if paired else welch(a, b, test_var)


def ratio(students, teacher, n_test=None):
    """The `Estimate` of mean(student / teacher) for one teacher: the
    teacher's test-set term by the delta method,
    var(a / t) = (var a + (a / t)^2 var t) / t^2."""
    a = np.asarray(students, dtype=float)
    mean = a.mean(-1)
    test_var = (sampling_var(mean, n_test)
                + (mean / teacher) ** 2 * sampling_var(teacher, n_test)) / teacher ** 2
    return one_sample(a / np.expand_dims(teacher, -1), test_var)


def contrast(distilled, plain, ensemble, share, n_test=None, metric="accuracy"):
    """The `Estimate` of mean((distilled - plain) - share (ensemble - plain)),
    above 0 exactly when the distilled student keeps more than `share` of
    the ensemble's gain; test-set terms weighted by the coefficients
    squared (1, (1 - share)^2, share^2)."""
    kd, mt, ens = (np.asarray(v, dtype=float) for v in (distilled, plain, ensemble))
    test_var = (sampling_var(kd.mean(-1), n_test, metric)
                + (1 - share) ** 2 * sampling_var(mt.mean(-1), n_test, metric)
                + share ** 2 * sampling_var(ens.mean(-1), n_test, metric))
    return one_sample(kd - mt - share * (ens - mt), test_var)


# --------------------------------------------------------------------------
# Claim kinds


def compare(better, worse, n_test=None, margin=0.0, metric="accuracy", scale=POINTS,
            correct=None):
    """"better > worse" (`margin` 0) or "better >= worse", not worse by more
    than `margin` (non-inferiority), from `{seed: value}` per row: paired when
    the seed sets are the same, Welch otherwise (`difference`). `correct`:
    `({seed: 0/1 per test sentence}, {seed: ...})` of the two rows, where
    the runs kept them; paired seeds that both have them take the paired
    sentence term (`paired_sentence_var`) in place of the binomial sum."""
    effect = (_mean(better.values()) - _mean(worse.values())
              if better and worse else None)
    bound = f"≥ {scale(-margin)}" if margin else f"> 0{scale.unit}"
    if min(len(better), len(worse)) < MIN_SEEDS:
        return pending([len(better), len(worse)], effect, scale, bound)
    paired = set(better) == set(worse)
    seeds = sorted(better)
    a = [better[s] for s in seeds]
    b = [worse[s] for s in seeds] if paired else list(worse.values())
    estimate = difference(a, b, paired, n_test, metric)
    by_sentence = paired and n_test and correct and all(
        s in correct[0] and s in correct[1] for s in seeds)
    if by_sentence:
        estimate.test_var = paired_sentence_var([correct[0][s] for s in seeds],
                                                [correct[1][s] for s in seeds])
    return judge(estimate, -margin, True, scale, bound, n_test,
                 by_sentence=bool(by_sentence))


def ratio_at_least(students, teacher, target, n_test=None):
    """"student / teacher >= target": `students` `{seed: accuracy}`, the one
    `teacher`'s accuracy (`ratio`)."""
    bound = f"≥ {PERCENT(target)}"
    if len(students) < MIN_SEEDS or not teacher:
        effect = _mean([a / teacher for a in students.values()]) if teacher else None
        return pending([len(students)], effect, PERCENT, bound)
    return judge(ratio(list(students.values()), teacher, n_test), target, True,
                 PERCENT, bound, n_test)


def fastbert_claim(curves, speed=FASTBERT_SPEED, max_drop=FASTBERT_MAX_DROP, n_test=None):
    """"FastBERT loses at most `max_drop` at exit threshold `speed`, running
    fewer layers": `curves` `{seed: {"full": {"accuracy", "avg_layers"},
    "rows": [{"speed", "accuracy", "avg_layers"}]}}` (a run's
    `fastbert_curve`). The per-seed drop from the full model (`difference`,
    paired), an upper bound; not reproduced outright when the threshold
    saves no layer."""
    full, reduced, layers = [], [], []
    for curve in curves.values():
        at = [r for r in curve["rows"] if abs(r["speed"] - speed) < 1e-6]
        if at:
            full.append(curve["full"]["accuracy"])
            reduced.append(at[0]["accuracy"])
            layers.append(at[0]["avg_layers"] / curve["full"]["avg_layers"])
    scale = Scale(unit=" points lost")
    bound = f"≤ {scale(max_drop, signed=False)}"
    effect = _mean(full) - _mean(reduced) if full else None
    note = f"speed {speed:g}: {SHARE(_mean(layers))} of the layers" if layers else ""
    if layers and _mean(layers) >= 1.0:
        return Verdict("not reproduced", effect, note=note + ", none saved",
                       test="no layer saved", scale=scale, bound=bound)
    if len(full) < MIN_SEEDS:
        return pending([len(full)], effect, scale, bound, note)
    return judge(difference(full, reduced, True, n_test), max_drop, False, scale,
                 bound, n_test, note)


def kept_share(runs, share=KEPT_SHARE, n_test=None, task=None):
    """"The distilled student keeps at least `share` of the ensemble's gain
    over the student trained without it": `runs` `{seed: {"metric",
    "ensemble", "multi_task", "multi_task_kd"}}` of one task (one run per
    seed: paired). Judged by `contrast` at `share`; the effect is the share
    kept, mean(distilled - plain) / mean(ensemble - plain), its bounds
    Fieller's (`_fieller_bound`); the MDE in shares of the mean gain; no
    verdict without a mean gain to keep. `task` names it in the note."""
    seeds = sorted(runs)
    metric = runs[seeds[0]]["metric"] if seeds else "accuracy"
    kd, mt, ens = (np.array([runs[s][k] for s in seeds], dtype=float)
                   for k in ("multi_task_kd", "multi_task", "ensemble"))
    gain = float(ens.mean() - mt.mean()) if seeds else 0.0
    effect = float(kd.mean() - mt.mean()) / gain if gain > 0 else None
    bound = f"≥ {SHARE(share)}"
    note = (f"{task + ' ' if task else ''}{metric}: ensemble {ens.mean():.4f}, "
            f"multi-task {mt.mean():.4f}, distilled {kd.mean():.4f}" if seeds else "")
    if len(seeds) < MIN_SEEDS:
        return pending([len(seeds)], effect, SHARE, bound, note)
    if gain <= 0:
        return Verdict("inconclusive", note=note + "; the ensembles are not above the "
                       "multi-task student: no gain to keep", test="no ensemble gain",
                       scale=SHARE, bound=bound)
    at = lambda theta: contrast(kd, mt, ens, theta, n_test, metric)  # noqa: E731
    verdict = judge(at(share), 0.0, True, SHARE, bound, n_test, note)
    verdict.effect, verdict.threshold = effect, share
    verdict.low, verdict.high = (_fieller_bound(at, effect, d) for d in (-1, 1))
    verdict.mde /= gain
    return verdict


def _fieller_bound(at, theta, direction, alpha=ALPHA):
    """The first share beyond `theta` (downward for `direction` -1) whose
    one-sided test ("kept > x" below, "kept < x" above) rejects at alpha;
    infinite when none does (the ensembles' gain is not significant)."""
    def rejected(x):  # > 0 where the share x is rejected
        return alpha - at(x).p(0.0, above=direction < 0)

    step, inner = 0.05 * max(1.0, abs(theta)), theta
    for _ in range(60):
        outer = theta + direction * step
        if rejected(outer) > 0:
            return optimize.brentq(rejected, min(inner, outer), max(inner, outer))
        inner, step = outer, 2 * step
    return direction * math.inf
