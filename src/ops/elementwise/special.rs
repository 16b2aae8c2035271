//! Special functions the standard library lacks (`erf`, `erfc`, `erfinv`), for both float types.

use std::f64::consts::FRAC_2_SQRT_PI;

/// `erf`, `erfc` and `erfinv` of one float type. Called as `Special::erf(x)`, so that a future
/// inherent `f64::erf` does not take over silently.
pub(crate) trait Special: Copy {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    fn erfinv(self) -> Self;
}

impl Special for f64 {
    fn erf(self) -> f64 {
        libm::erf(self)
    }
    fn erfc(self) -> f64 {
        libm::erfc(self)
    }
    fn erfinv(self) -> f64 {
        erfinv(self)
    }
}

impl Special for f32 {
    fn erf(self) -> f32 {
        libm::erff(self)
    }
    fn erfc(self) -> f32 {
        libm::erfcf(self)
    }
    fn erfinv(self) -> f32 {
        erfinv(self as f64) as f32
    }
}

/// Evaluates the polynomial with coefficients `c` (highest degree first) at `w`.
fn poly(w: f64, c: &[f64]) -> f64 {
    c.iter().fold(0.0, |acc, &k| acc.mul_add(w, k))
}

/// The inverse error function: ±inf at ±1, NaN outside [-1, 1].
///
/// A first guess from M. Giles' approximation ("Approximating the erfinv function", GPU Computing
/// Gems, 2011; about 1e-7 relative near 0, rougher in the far tail), then Newton steps.
fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    let a = y.abs();
    let w = -((1.0 - a) * (1.0 + a)).ln();
    let mut x = a * if w < 5.0 {
        poly(
            w - 2.5,
            &[
                2.810_226_36e-08,
                3.432_739_39e-07,
                -3.523_387_7e-06,
                -4.391_506_54e-06,
                0.000_218_580_87,
                -0.001_253_725_03,
                -0.004_177_681_64,
                0.246_640_727,
                1.501_409_41,
            ],
        )
    } else {
        poly(
            w.sqrt() - 3.0,
            &[
                -0.000_200_214_257,
                0.000_100_950_558,
                0.001_349_343_22,
                -0.003_673_428_44,
                0.005_739_507_73,
                -0.007_622_461_3,
                0.009_438_870_47,
                1.001_674_06,
                2.832_976_82,
            ],
        )
    };
    // Newton's method: on erf(x) = |y| near 0, and on ln(erfc(x)) = ln(1 - |y|) in the tail, where
    // erf(x) rounds to 1 but erfc(x) keeps full precision (1 - |y| is exact for |y| >= 0.5) and the
    // logarithm is nearly quadratic in x, so that a rough first guess still converges in a few steps.
    for _ in 0..12 {
        let density = FRAC_2_SQRT_PI * (-x * x).exp();
        let step = if a <= 0.5 {
            (libm::erf(x) - a) / density
        } else {
            let tail = libm::erfc(x);
            (tail.ln() - (1.0 - a).ln()) / (-density / tail)
        };
        if !step.is_finite() {
            break;
        }
        x -= step;
        if step.abs() <= 1e-16 * x.abs() {
            break;
        }
    }
    x.copysign(y)
}
