//! Small numerical helpers shared by the geometry and the validations.

/// Lanczos coefficients, g = 7, 9 terms (relative error ≈ 1e-15).
const LANCZOS_G: f64 = 7.0;
const LANCZOS: [f64; 9] = [
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

/// The Lanczos series at x − 1: (t, A) with t = x − ½ + g and
/// Γ(x) = √(2π) t^(x−½) e^(−t) A, for x ≥ ½.
fn lanczos(x: f64) -> (f64, f64) {
    let x = x - 1.0;
    let a = LANCZOS.iter().enumerate().skip(1).fold(LANCZOS[0], |a, (i, c)| a + c / (x + i as f64));
    (x + LANCZOS_G + 0.5, a)
}

/// Γ(x) for x > 0 by the Lanczos approximation (g = 7, 9 terms; relative
/// error ≈ 1e-15), with the reflection formula below ½.
pub fn gamma(x: f64) -> f64 {
    if x < 0.5 {
        std::f64::consts::PI / ((std::f64::consts::PI * x).sin() * gamma(1.0 - x))
    } else {
        let (t, a) = lanczos(x);
        (2.0 * std::f64::consts::PI).sqrt() * t.powf(x - 0.5) * (-t).exp() * a
    }
}

/// ln Γ(x) for x > 0, the same approximation in logarithms (no overflow for
/// large x: the chi-square tail of many degrees of freedom).
pub fn ln_gamma(x: f64) -> f64 {
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(π x).
        (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x)
    } else {
        let (t, a) = lanczos(x);
        0.5 * (2.0 * std::f64::consts::PI).ln() + (x - 0.5) * t.ln() - t + a.ln()
    }
}

/// Complete elliptic integral of the first kind K(k) = ∫₀^{π/2} dθ/√(1 − k² sin²θ),
/// by the arithmetic–geometric mean: K = π / (2 AGM(1, √(1 − k²))).
pub fn elliptic_k(k: f64) -> f64 {
    let (mut a, mut b) = (1.0, (1.0 - k * k).sqrt());
    // The AGM converges quadratically: 40 rounds are far more than enough, and
    // a fixed cap avoids looping on the last-bit oscillation of a and b.
    for _ in 0..40 {
        if (a - b).abs() <= 4.0 * f64::EPSILON * a {
            break;
        }
        let an = 0.5 * (a + b);
        b = (a * b).sqrt();
        a = an;
    }
    std::f64::consts::PI / (2.0 * a)
}

/// A small deterministic generator for the unit tests' random cases (Knuth's
/// MMIX linear congruential step; no dependency, the same numbers on every
/// machine).
#[cfg(test)]
pub(crate) struct Lcg(pub(crate) u64);

#[cfg(test)]
impl Lcg {
    fn advance(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0
    }

    /// Uniform in [0, 1) (53 bits).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.advance() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub(crate) fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// An index below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.advance() >> 33) as usize % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn gamma_known_values() {
        assert!((gamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-14);
        assert!((gamma(5.0) - 24.0).abs() < 1e-12);
        assert!((gamma(1.5) - 0.5 * std::f64::consts::PI.sqrt()).abs() < 1e-14);
    }
    #[test]
    fn elliptic_k_known_values() {
        assert!((elliptic_k(0.0) - std::f64::consts::FRAC_PI_2).abs() < 1e-15);
        // K(1/√2) = Γ(1/4)² / (4√π)
        let expected = gamma(0.25).powi(2) / (4.0 * std::f64::consts::PI.sqrt());
        assert!((elliptic_k(0.5f64.sqrt()) - expected).abs() < 1e-13);
    }
}
