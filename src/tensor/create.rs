//! Factories.

use std::alloc::{GlobalAlloc, Layout, System};

use super::dtype::{DType, Scalar};
use super::element::Element;
use super::Tensor;
use crate::dispatch_all;
use crate::error::{Error, Result};

// NOTE [Allocations that cannot succeed]: Rust aborts the whole process when an ordinary
// allocation fails, so a size the system can never provide (`zeros(2**40, 2**20)`, or a huge
// expanded view made contiguous) would kill the interpreter instead of raising `MemoryError`.
// Every kernel that allocates an output therefore asks `check_alloc` first. From `PROBE_BYTES` on,
// it tries the allocation for real and gives it back at once: untouched pages cost nothing, and a
// refusal becomes an error. Below that size a failure is a genuine out-of-memory, as anywhere else.
const PROBE_BYTES: usize = 1 << 26;

/// Refuses sizes whose allocation would abort the process instead of failing; returns the number
/// of elements. See NOTE [Allocations that cannot succeed].
pub(crate) fn check_alloc(shape: &[usize], dtype: DType) -> Result<usize> {
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or_else(|| {
        Error::OutOfMemory(format!("a tensor of shape {shape:?} has more elements than can be addressed"))
    })?;
    let bytes = n.saturating_mul(dtype.size());
    let refused = || {
        let exact = n as u128 * dtype.size() as u128;
        Error::OutOfMemory(format!("cannot allocate a tensor of shape {shape:?} ({exact} bytes)"))
    };
    if bytes > (isize::MAX as usize) / 2 {
        return Err(refused());
    }
    if bytes >= PROBE_BYTES {
        // Straight from the system allocator, not the global one: a probe is no request of the
        // program's, and must not count as one of the sizes a loop repeats (NOTE [Large-block
        // cache] in `alloc.rs`).
        let layout = Layout::from_size_align(bytes, 64).map_err(|_| refused())?;
        // SAFETY: the layout's size is nonzero (at least PROBE_BYTES).
        let probe = unsafe { System.alloc(layout) };
        // Keeps the optimizer from eliding the allocation (and assuming it succeeded).
        let probe = std::hint::black_box(probe);
        if probe.is_null() {
            return Err(refused());
        }
        // SAFETY: `probe` came from `System.alloc` with this layout.
        unsafe { System.dealloc(probe, layout) };
    }
    Ok(n)
}

/// A vector of `n` copies of `v`, failing (not aborting) when memory is short.
pub(crate) fn try_filled<T: Element>(n: usize, v: T) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| Error::OutOfMemory(format!("cannot allocate {n} elements")))?;
    out.resize(n, v);
    Ok(out)
}

impl Tensor {
    /// A tensor of `shape` filled with `value`.
    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        let n = check_alloc(shape, dtype)?;
        dispatch_all!(dtype, T => {
            let v: T = match value {
                Scalar::Int(i) => T::from_i64(i),
                other => T::from_f64(other.as_f64()),
            };
            Tensor::from_vec(try_filled(n, v)?, shape)
        })
    }

    /// Zeros.
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(0), dtype)
    }

    /// Ones.
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, Scalar::Int(1), dtype)
    }

    /// Zeros shaped like `t`.
    pub fn zeros_like(t: &Tensor) -> Result<Tensor> {
        Tensor::zeros(t.shape(), t.dtype())
    }

    /// Ones shaped like `t`.
    pub fn ones_like(t: &Tensor) -> Result<Tensor> {
        Tensor::ones(t.shape(), t.dtype())
    }

    /// `start, start+step, ...` below `end`.
    pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !end.is_finite() {
            return Err(Error::value("arange: step must be nonzero and bounds finite"));
        }
        if (end - start) / step < 0.0 {
            return Err(Error::value("arange: upper bound and larger bound inconsistent with step sign"));
        }
        let n = ((end - start) / step).ceil().max(0.0) as usize;
        check_alloc(&[n], dtype)?;
        dispatch_all!(dtype, T => {
            let v: Vec<T> = (0..n)
                .map(|i| {
                    let x = start + i as f64 * step;
                    if dtype.is_int() { T::from_i64(x as i64) } else { T::from_f64(x) }
                })
                .collect();
            Tensor::from_vec(v, &[n])
        })
    }

    /// `arange` with bounds of any scalar kind: integer bounds of an int64 result are computed in
    /// integers, so that values above 2**53 are exact and the length cannot be lost to rounding
    /// (`arange(2**62, 2**62 + 3)` has 3 elements).
    pub fn arange_scalar(start: Scalar, end: Scalar, step: Scalar, dtype: DType) -> Result<Tensor> {
        let (Scalar::Int(a), Scalar::Int(b), Scalar::Int(s), DType::Int64) = (start, end, step, dtype) else {
            return Tensor::arange(start.as_f64(), end.as_f64(), step.as_f64(), dtype);
        };
        if s == 0 {
            return Err(Error::value("arange: step must be nonzero and bounds finite"));
        }
        // In i128: `end - start` of two int64 values cannot overflow there.
        let (a, b, s) = (a as i128, b as i128, s as i128);
        let diff = b - a;
        if diff != 0 && (diff < 0) != (s < 0) {
            return Err(Error::value("arange: upper bound and larger bound inconsistent with step sign"));
        }
        // ceil(diff / s) for diff and s of the same sign
        let n = (diff + s - s.signum()) / s;
        let n =
            usize::try_from(n).map_err(|_| Error::OutOfMemory(format!("arange: {n} elements cannot be allocated")))?;
        check_alloc(&[n], dtype)?;
        // Every value lies between start and end, so it fits in i64.
        let v: Vec<i64> = (0..n).map(|i| (a + i as i128 * s) as i64).collect();
        Tensor::from_vec(v, &[n])
    }

    /// The `n × m` identity.
    pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
        let total = check_alloc(&[n, m], dtype)?;
        dispatch_all!(dtype, T => {
            let mut v = try_filled(total, T::from_i64(0))?;
            for i in 0..n.min(m) {
                v[i * m + i] = T::from_i64(1);
            }
            Tensor::from_vec(v, &[n, m])
        })
    }
}
