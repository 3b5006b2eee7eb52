//! Special functions the engine's randomized ramps and the lab's statistics share:
//! the error function, its complement and its inverse.

/// The error function (Abramowitz and Stegun 7.1.26, refined to double precision by a
/// series near zero).
pub fn erf(x: f64) -> f64 {
    if x.abs() < 0.5 {
        // Maclaurin series: exact enough where the rational approximation is weakest.
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        for n in 1..30 {
            term *= -x2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        return sum * 2.0 / std::f64::consts::PI.sqrt();
    }
    let s = x.signum();
    s * (1.0 - erfc(x.abs()))
}

/// The complementary error function, 1 − erf(x) (Numerical Recipes' rational
/// approximation, relative error below 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let r = erfc_positive(x.abs());
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

fn erfc_positive(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.5 * x);
    // Numerical Recipes' erfc approximation, relative error below 1.2e-7.
    t * (-x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
        .exp()
}

/// Inverse error function by Newton's method on [`erf`].
pub fn erfinv(y: f64) -> f64 {
    if y <= -1.0 {
        return f64::NEG_INFINITY;
    }
    if y >= 1.0 {
        return f64::INFINITY;
    }
    // Winitzki's approximation as the starting point.
    let a = 0.147;
    let ln = (1.0 - y * y).ln();
    let b = 2.0 / (std::f64::consts::PI * a) + ln / 2.0;
    let mut x = y.signum() * ((b * b - ln / a).sqrt() - b).sqrt();
    for _ in 0..4 {
        let err = erf(x) - y;
        x -= err / (2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp());
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_and_erfc_agree_and_invert() {
        for x in [-3.0, -1.2, -0.3, 0.0, 0.1, 0.49, 0.5, 0.9, 2.0, 4.0] {
            assert!((erf(x) + erfc(x) - 1.0).abs() < 1e-6, "{x}");
            assert!((erfc(-x) - (2.0 - erfc(x))).abs() < 1e-6, "{x}");
            if x.abs() < 2.5 {
                assert!((erfinv(erf(x)) - x).abs() < 1e-6, "{x}");
            }
        }
        // erfc(1) = 0.157299207050285...
        assert!((erfc(1.0) - 0.157_299_207_050_285).abs() < 1e-7);
    }
}
