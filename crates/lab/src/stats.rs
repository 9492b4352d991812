//! Summary statistics for `schedlab compare`: means as mmtests takes them,
//! sample standard deviation, and Welch's unequal-variance t-test with a
//! two-sided p-value from the regularized incomplete beta function.

/// Arithmetic mean (0 for an empty sample).
pub fn amean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

/// Harmonic mean, as mmtests' Hmean; 0 if any value is not positive.
pub fn hmean(x: &[f64]) -> f64 {
    if x.is_empty() || x.iter().any(|&v| v <= 0.0) {
        return 0.0;
    }
    x.len() as f64 / x.iter().map(|v| 1.0 / v).sum::<f64>()
}

/// Sample variance (n - 1 denominator); 0 for fewer than two values.
pub fn variance(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = amean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() - 1) as f64
}

pub fn stddev(x: &[f64]) -> f64 {
    variance(x).sqrt()
}

/// Coefficient of variation in percent (sample stddev / arithmetic mean).
pub fn cv_pct(x: &[f64]) -> f64 {
    let m = amean(x);
    if m == 0.0 {
        0.0
    } else {
        100.0 * stddev(x) / m.abs()
    }
}

/// Result of Welch's t-test.
/// Serialised, a value that is not finite is `null` (serde_json's rule)
/// and reads back as NaN (`f64_or_nan`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Welch {
    /// t statistic for mean(b) - mean(a) (infinite when both variances are 0 and the means differ).
    #[serde(deserialize_with = "f64_or_nan")]
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    #[serde(deserialize_with = "f64_or_nan")]
    pub df: f64,
    /// Two-sided p-value.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p: f64,
}

/// Reads a number, or `null` (what serde_json writes for a value that is
/// not finite) as NaN: the reading side of every f64 in a report.
pub fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Welch's t-test of a against b; None when either sample has fewer than two values.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (variance(a) / na, variance(b) / nb);
    let diff = amean(b) - amean(a);
    let se2 = va + vb;
    if se2 <= 0.0 || !se2.is_finite() {
        // Zero variance on both sides: identical means are not different at all,
        // different means are as different as can be.
        let df = na + nb - 2.0;
        return Some(if diff == 0.0 { Welch { t: 0.0, df, p: 1.0 } } else { Welch { t: diff.signum() * f64::INFINITY, df, p: 0.0 } });
    }
    let t = diff / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some(Welch { t, df, p: t_two_sided_p(t, df) })
}

/// Two-sided p-value of Student's t distribution: I_{df/(df+t²)}(df/2, 1/2).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    if df <= 0.0 || !df.is_finite() {
        return 1.0;
    }
    let x = df / (df + t * t);
    inc_beta(0.5 * df, 0.5, x).clamp(0.0, 1.0)
}

/// ln Γ(x) for x > 0 (Lanczos approximation, g = 7, 9 terms).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut s = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        s += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

/// Regularized incomplete beta function I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    // x^a (1-x)^b / (a B(a,b)), the prefactor of the continued fraction.
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The fraction converges fast for x < (a+1)/(a+b+2); otherwise use the symmetry
    // I_x(a,b) = 1 - I_{1-x}(b,a).
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction for I_x(a, b), evaluated with the modified Lentz method:
/// 1 / (1 + d1 / (1 + d2 / (1 + ...))) with
/// d(2m+1) = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and d(2m) = m(b-m)x / ((a+2m-1)(a+2m)).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let two_m = 2.0 * m;
        // Even step.
        let num = m * (b - m) * x / ((a + two_m - 1.0) * (a + two_m));
        d = 1.0 / guard(1.0 + num * d);
        c = guard(1.0 + num / c);
        h *= d * c;
        // Odd step.
        let num = -(a + m) * (a + b + m) * x / ((a + two_m) * (a + two_m + 1.0));
        d = 1.0 / guard(1.0 + num * d);
        c = guard(1.0 + num / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_distribution_p_values() {
        // 2*pt(-2, 10) = 0.07338803; 2*pt(-2.228139, 10) = 0.05 (table value); 2*pt(-1, 1) = 0.5 (Cauchy).
        assert!(close(t_two_sided_p(2.0, 10.0), 0.073_388_03, 1e-6), "{}", t_two_sided_p(2.0, 10.0));
        assert!(close(t_two_sided_p(-2.0, 10.0), 0.073_388_03, 1e-6));
        assert!(close(t_two_sided_p(2.228_139, 10.0), 0.05, 1e-6));
        assert!(close(t_two_sided_p(1.0, 1.0), 0.5, 1e-9));
        // Large df approaches the normal: 2*pnorm(-1.959964) = 0.05.
        assert!(close(t_two_sided_p(1.959_964, 1e6), 0.05, 1e-4));
        assert_eq!(t_two_sided_p(0.0, 5.0), 1.0);
        assert!(t_two_sided_p(50.0, 4.0) < 1e-5);
    }

    #[test]
    fn incomplete_beta_and_gamma() {
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
        assert!(close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-12));
        // I_x(1,1) = x; I_x(2,1) = x^2; I_0.5(a,a) = 0.5.
        assert!(close(inc_beta(1.0, 1.0, 0.3), 0.3, 1e-12));
        assert!(close(inc_beta(2.0, 1.0, 0.7), 0.49, 1e-12));
        assert!(close(inc_beta(3.5, 3.5, 0.5), 0.5, 1e-12));
    }

    #[test]
    fn welch_known_values() {
        // Welch for b - a: t = 4.892857, df = 7.266973 (Welch–Satterthwaite), two-sided
        // p = 0.0015882 (the t density integrated numerically).
        let a = [19.1, 20.2, 21.3, 18.7, 20.0];
        let b = [22.4, 21.9, 23.6, 22.0, 23.1];
        let w = welch(&a, &b).unwrap();
        assert!(close(w.t, 4.892_857, 1e-5), "{w:?}");
        assert!(close(w.df, 7.266_973, 1e-5), "{w:?}");
        assert!(close(w.p, 0.001_588_2, 1e-6), "{w:?}");
    }

    #[test]
    fn welch_degenerate_samples() {
        let a = [1.0, 2.0, 3.0];
        assert_eq!(welch(&a, &a).unwrap().p, 1.0);
        let z = welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap();
        assert_eq!((z.t, z.p), (0.0, 1.0));
        let d = welch(&[5.0, 5.0], &[6.0, 6.0]).unwrap();
        assert_eq!(d.p, 0.0);
        assert!(d.t.is_infinite() && d.t > 0.0);
        // One side constant: still finite.
        let o = welch(&[5.0, 5.0, 5.0], &[6.0, 7.0, 8.0]).unwrap();
        assert!(o.p.is_finite() && o.p > 0.0 && o.p < 0.1, "{o:?}");
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn means() {
        assert!(close(hmean(&[1.0, 2.0, 4.0]), 3.0 / 1.75, 1e-12));
        assert_eq!(hmean(&[1.0, 0.0]), 0.0);
        assert_eq!(amean(&[1.0, 2.0, 6.0]), 3.0);
        assert!(close(stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), 2.138_089_935, 1e-9));
        assert_eq!(cv_pct(&[3.0]), 0.0);
    }
}
