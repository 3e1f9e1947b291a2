"""Fits the polynomials of lowering/VectorMath.cpp (near-minimax in relative error, by Lawson's
iteratively reweighted least squares on a dense grid), rounds them to float32, and reports the
error of the float32 Horner evaluation against mpmath at 50 digits.

    .venv-peers/bin/python lowering/fit/fit_strict_math.py
"""
import mpmath
import numpy as np

mpmath.mp.dps = 50


def lawson(xs, target, weight, degree, iterations=200):
    """Coefficients c (lowest first) of the polynomial in xs minimizing max |weight (p - target)|."""
    V = np.vander(xs, degree + 1, increasing=True)
    w = np.full(len(xs), 1.0 / len(xs))
    for _ in range(iterations):
        sw = np.sqrt(w) * weight
        c, *_ = np.linalg.lstsq(V * sw[:, None], target * sw, rcond=None)
        err = np.abs(weight * (V @ c - target))
        w = w * err
        w /= w.sum()
    return c


def horner32(c, s):
    acc = np.float32(c[-1])
    for k in reversed(c[:-1]):
        acc = np.float32(acc * s + np.float32(k))
    return acc


def ulps(got, want):
    """Error of float32 `got` in float32 ulps of the exact value `want` (an mpf)."""
    w = float(want)
    spacing = np.spacing(np.float32(abs(w)))
    return float(abs(mpmath.mpf(float(got)) - want) / mpmath.mpf(float(spacing)))


def fit_tanh(degree, a_max=0.625):
    # tanh(a) = a + a^3 P(a^2) for 0 <= a <= a_max; the error of tanh relative to tanh(a) ~ a is
    # a^2 (P - f), so the weight is s = a^2.
    s = np.linspace(1e-6, a_max * a_max, 4000)
    a = np.sqrt(s)
    f = np.array([float((mpmath.tanh(mpmath.mpf(x)) - x) / mpmath.mpf(x) ** 3) for x in a])
    c = lawson(s, f, s, degree)
    c32 = [np.float32(v) for v in c]
    worst = 0.0
    for x in np.linspace(1e-4, a_max, 20001).astype(np.float32):
        s32 = np.float32(x * x)
        got = np.float32(x + np.float32(np.float32(x * s32) * horner32(c32, s32)))
        worst = max(worst, ulps(got, mpmath.tanh(mpmath.mpf(float(x)))))
    return c32, worst


def fit_exp(degree):
    # exp(r) = 1 + r + r^2 Q(r) for |r| <= ln2/2; the error relative to exp(r) ~ 1 is r^2 (Q - f).
    h = float(mpmath.log(2) / 2) * 1.0001
    r = np.linspace(-h, h, 4001)
    r = r[np.abs(r) > 1e-7]
    f = np.array([float((mpmath.exp(mpmath.mpf(x)) - 1 - x) / mpmath.mpf(x) ** 2) for x in r])
    c = lawson(r, f, r * r, degree)
    c32 = [np.float32(v) for v in c]
    worst = 0.0
    for x in np.linspace(-h, h, 20001).astype(np.float32):
        got = np.float32(np.float32(1) + np.float32(x + np.float32(np.float32(x * x) * horner32(c32, x))))
        worst = max(worst, ulps(got, mpmath.exp(mpmath.mpf(float(x)))))
    return c32, worst


if __name__ == "__main__":
    for d in (5,):  # degree 3: 2.6 ulp, 4: 0.77
        c, w = fit_tanh(d)
        print(f"tanh, P of degree {d} in a^2: max {w:.3f} ulp over [0, 0.625]")
        print("   ", ", ".join(f"{float(v):.9e}f" for v in c))
    for d in (5,):  # degree 3: 2.3 ulp, 4: 0.80
        c, w = fit_exp(d)
        print(f"exp, Q of degree {d} in r: max {w:.3f} ulp over [-ln2/2, ln2/2]")
        print("   ", ", ".join(f"{float(v):.9e}f" for v in c))


def fit_gelu_tail(degree, a_lo=0.625, a_hi=14.5, scale=0.5):
    # For x = -a <= -a_lo: gelu(x) = 0.5 x erfc(a / sqrt 2) = 0.5 x exp(-a^2 / 2) S(a), with
    # S(a) = erfc(a / sqrt 2) exp(a^2 / 2) smooth and slowly varying; S as a polynomial in
    # t = 1 / (1 + scale a), fitted in relative error.
    t_lo, t_hi = 1 / (1 + scale * a_hi), 1 / (1 + scale * a_lo)
    t = np.linspace(t_lo, t_hi, 4000)
    a = (1 / t - 1) / scale
    sq = mpmath.sqrt(2)
    f = np.array([float(mpmath.erfc(mpmath.mpf(x) / sq) * mpmath.exp(mpmath.mpf(x) ** 2 / 2)) for x in a])
    c = lawson(t, f, 1 / f, degree)
    c32 = [np.float32(v) for v in c]
    worst = 0.0
    for x in np.linspace(a_lo, a_hi, 20001).astype(np.float32):
        t32 = np.float32(np.float32(1) / np.float32(np.float32(1) + np.float32(np.float32(scale) * x)))
        got = horner32(c32, t32)
        want = mpmath.erfc(mpmath.mpf(float(x)) / sq) * mpmath.exp(mpmath.mpf(float(x)) ** 2 / 2)
        worst = max(worst, ulps(got, want))
    return c32, worst


if __name__ == "__main__":
    for d in (9,):  # 8 ... 12 tried: 4.8, 3.5, 3.6, 3.5, 4.1 ulp; scale 1 and 2: worse
        c, w = fit_gelu_tail(d)
        print(f"gelu tail S(a), degree {d} in t = 1 / (1 + a / 2): max {w:.3f} ulp over [0.625, 14.5]")
        print("   ", ", ".join(f"{float(v):.9e}f" for v in c))


def fit_phi_center(degree, x_max=0.625):
    # Phi(x) - 1/2 = x P(x^2) for |x| < x_max (Phi the normal CDF, gelu(x) = x Phi(x)); the error
    # of Phi relative to Phi(x) >= 0.27 is at most |x| (P - f) / 0.27, so the weight is x.
    s = np.linspace(1e-6, x_max * x_max, 4000)
    x = np.sqrt(s)
    f = np.array([float((mpmath.ncdf(mpmath.mpf(v)) - mpmath.mpf(0.5)) / mpmath.mpf(v)) for v in x])
    c = lawson(s, f, x, degree)
    c32 = [np.float32(v) for v in c]
    worst = 0.0
    for v in np.linspace(-x_max, x_max, 20001).astype(np.float32):
        got = np.float32(v * np.float32(np.float32(0.5) + np.float32(v * horner32(c32, np.float32(v * v)))))
        worst = max(worst, ulps(got, mpmath.mpf(float(v)) * mpmath.ncdf(mpmath.mpf(float(v)))))
    return c32, worst


if __name__ == "__main__":
    for d in (3, 4, 5):
        c, w = fit_phi_center(d)
        print(f"gelu centre Phi(x) - 1/2 = x P(x^2), degree {d}: max {w:.3f} ulp of gelu over [-0.625, 0.625]")
        print("   ", ", ".join(f"{float(v):.9e}f" for v in c))
