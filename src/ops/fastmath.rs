//! Vectorized float32 `exp`, `tanh` and `sigmoid`.
//!
//! The standard library calls libm once per element (about 10 ns for `tanhf`), which made `tanh`
//! the largest cost of a step of 256×256 layers. These versions are branch-free polynomial
//! approximations that the compiler turns into 16-lane AVX-512 code (or 4-lane SSE2 code on CPUs
//! without it): range reduction `x = n·ln2 + r` with |r| ≤ ln2/2, a degree-7 Taylor polynomial
//! for `e^r` (truncation error below 1e-8), and the scale `2^n` built in the exponent bits.
//! Measured against f64 libm over [-100, 100] (test below): `exp` within 1.15 ulp, `tanh` and
//! `sigmoid` within 2.3 ulp.
//! float64 keeps libm.

use std::mem::MaybeUninit;

use super::elementwise::Unary;
use super::kernel::{self, Cost};

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// 1.5·2^23: adding it rounds an f32 of magnitude below 2^22 to an integer, which then sits in
/// the low mantissa bits.
const ROUND: f32 = 12_582_912.0;

#[inline(always)]
fn pow2i(n: i32) -> f32 {
    f32::from_bits(((n + 127) as u32) << 23)
}

/// Below this, `e^x` is under half the smallest subnormal (2^-150) and rounds to 0.
const EXP_ZERO_BELOW: f32 = -104.0;

/// `e^x`: subnormal results down to 2^-149 (as libm and PyTorch give; they were flushed to 0 below
/// 2^-126), 0 below -104, ∞ above ln(f32::MAX), NaN for NaN.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    let xc = x.clamp(EXP_ZERO_BELOW, 88.72283);
    let t = xc * LOG2E + ROUND;
    let n = t.to_bits() as i32 - ROUND.to_bits() as i32;
    let nf = t - ROUND;
    let r = (-nf).mul_add(LN2_LO, (-nf).mul_add(LN2_HI, xc));
    let mut p: f32 = 1.0 / 5040.0;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = p.mul_add(r, c);
    }
    // 2^n in two halves, so that n = 128 and n = -150 both stay within normal exponents: `p·2^half`
    // is exact, and the second product rounds once, into the subnormal range when n < -126.
    let half = n >> 1;
    let v = p * pow2i(half) * pow2i(n - half);
    if x < EXP_ZERO_BELOW {
        0.0
    } else if x > 88.72283 {
        f32::INFINITY
    } else {
        v
    }
}

/// `tanh(x)`: a Taylor polynomial near 0 (where `1 - 2/(e^2x + 1)` would cancel), else that form.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let e = exp_f32(2.0 * a);
    let big = (1.0 - 2.0 / (e + 1.0)).copysign(x);
    let x2 = x * x;
    let mut q: f32 = 62.0 / 2835.0;
    for c in [-17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0, 1.0] {
        q = q.mul_add(x2, c);
    }
    let small = x * q;
    if a < 0.3 {
        small
    } else {
        big
    }
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub(crate) fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// Above this many elements these run on two threads (compare `kernel::PARALLEL_ELEMENTS_HEAVY`,
/// sized for libm's 10 ns per element). `tanh` takes about 0.25 ns per element here, 17 µs for a
/// 256×256 layer on one thread; split over the pool, 13.5 µs alone, but in W6's forward pass, where
/// each `tanh` follows a product whose helper thread still spins (`gemm::team`), waking the pool's
/// threads cost more than it saved: W6's forward took 19.5 ms with that layer on one thread against
/// 22 ms split (min of 15 steps, CI-profile build, same minute). So up to 256×256 stays off the
/// pool; from 2¹⁵ values it shares its chunks with that helper while it is awake (NOTE [Element-wise
/// work on the team] in `kernel.rs`): after a 256×256 product (session 12, Intel), `tanh` of the
/// result 28.7 → 15.5 µs, a layer of W6's forward (`mm` then `tanh`) 143–148 → 123–129 µs.
pub(crate) const PARALLEL: usize = 1 << 16;

/// `op` over `src` into a new vector when this file has a fast version of it, else `None`.
pub(crate) fn unary_f32(op: Unary, src: &[f32]) -> Option<Vec<f32>> {
    let f: fn(f32) -> f32 = match op {
        Unary::Exp => exp_f32,
        Unary::Tanh => tanh_f32,
        Unary::Sigmoid => sigmoid_f32,
        _ => return None,
    };
    Some(kernel::collect_chunks(src, Cost::Fast, |d, s| chunk(op, f, d, s)))
}

/// One chunk, in the widest vector code this CPU runs; writes every slot of `d`.
fn chunk(op: Unary, f: fn(f32) -> f32, d: &mut [MaybeUninit<f32>], s: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the features were just detected.
        unsafe { chunk_avx512(op, d, s) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the features were just detected.
        unsafe { chunk_avx2(op, d, s) };
        return;
    }
    // Without FMA hardware `mul_add` is a library call: slow, but exact.
    d.iter_mut().zip(s).for_each(|(d, &x)| _ = d.write(f(x)));
}

/// One loop per function, each with the function inlined, so that each loop vectorizes (and
/// `mul_add` becomes one FMA instruction).
#[inline(always)]
fn loops(op: Unary, d: &mut [MaybeUninit<f32>], s: &[f32]) {
    match op {
        Unary::Exp => d.iter_mut().zip(s).for_each(|(d, &x)| _ = d.write(exp_f32(x))),
        Unary::Tanh => d.iter_mut().zip(s).for_each(|(d, &x)| _ = d.write(tanh_f32(x))),
        _ => d.iter_mut().zip(s).for_each(|(d, &x)| _ = d.write(sigmoid_f32(x))),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,fma,avx2")]
unsafe fn chunk_avx512(op: Unary, d: &mut [MaybeUninit<f32>], s: &[f32]) {
    loops(op, d, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,avx2")]
unsafe fn chunk_avx2(op: Unary, d: &mut [MaybeUninit<f32>], s: &[f32]) {
    loops(op, d, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f64) -> f64 {
        let b32 = b as f32;
        if a == b32 || (a.is_nan() && b.is_nan()) {
            return 0.0;
        }
        let ulp = (f32::from_bits(b32.abs().to_bits() + 1) - b32.abs()) as f64;
        ((a as f64) - b).abs() / ulp.max(f32::MIN_POSITIVE as f64)
    }

    #[test]
    fn within_a_few_ulp_of_f64_libm() {
        let xs: Vec<f32> = (-200_000..=200_000).map(|i| i as f32 * 5e-4).chain([1e-7, -1e-30, 0.0, -0.0]).collect();
        let check = |op: Unary, reference: fn(f64) -> f64, bound: f64| {
            let got = unary_f32(op, &xs).unwrap();
            let worst = xs.iter().zip(&got).map(|(&x, &g)| ulps(g, reference(x as f64))).fold(0.0, f64::max);
            assert!(worst <= bound, "{op:?}: worst error {worst} ulp");
        };
        check(Unary::Exp, f64::exp, 1.5);
        check(Unary::Tanh, f64::tanh, 3.0);
        check(Unary::Sigmoid, |x| 1.0 / (1.0 + (-x).exp()), 3.0);
    }

    #[test]
    fn subnormal_results_are_within_one_step_of_libm() {
        let xs: Vec<f32> = (0..=40_000).map(|i| -104.5 + i as f32 * 4.5e-4).collect();
        let got = unary_f32(Unary::Exp, &xs).unwrap();
        let step = f32::from_bits(1) as f64; // 2^-149, the spacing of subnormals
        for (&x, &g) in xs.iter().zip(&got) {
            let want = (x as f64).exp();
            let tol = if want < f32::MIN_POSITIVE as f64 { step } else { want * 2e-7 };
            assert!((g as f64 - want).abs() <= tol, "exp({x}) = {g:e}, libm {want:e}");
        }
        assert!(got.iter().any(|&g| g > 0.0 && g < f32::MIN_POSITIVE), "no subnormal result");
    }

    #[test]
    fn edges_nan_and_infinities() {
        let xs = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 89.0, -88.0, -104.0, 88.7, -87.3];
        let e = unary_f32(Unary::Exp, &xs).unwrap();
        assert!(e[0].is_nan());
        assert_eq!(&e[1..3], &[f32::INFINITY, 0.0]);
        assert_eq!(e[3], f32::INFINITY);
        assert_eq!(e[5], 0.0);
        assert!(e[6].is_finite() && e[6] > 3.0e38);
        assert!((e[7] as f64 - (-87.3f64).exp()).abs() / (-87.3f64).exp() < 1e-5);
        let t = unary_f32(Unary::Tanh, &xs).unwrap();
        assert!(t[0].is_nan());
        assert_eq!(&t[1..3], &[1.0, -1.0]);
        let s = unary_f32(Unary::Sigmoid, &xs).unwrap();
        assert_eq!(&s[1..3], &[1.0, 0.0]);
    }
}
