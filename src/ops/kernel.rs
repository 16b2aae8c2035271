//! Kernel helpers: element-wise maps and broadcast zips over strided views, and the strided write
//! that every in-place operation ends with. Contiguous inputs take a slice fast path.

use ndarray::{ArrayD, ArrayViewMutD, IxDyn, ShapeBuilder, Zip};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::tensor::create::check_alloc;
use crate::tensor::element::Element;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::Tensor;

/// Elements above which a cheap kernel (arithmetic, comparisons) splits its work over rayon's
/// threads. Such kernels run at memory speed in one vectorized loop (about 0.1 ns per element
/// here), so waking a second thread (several µs) only pays off for large tensors: measured on the
/// seed's 100k-element weight updates, the parallel split at 65k elements was slower than one
/// thread.
pub(crate) const PARALLEL_ELEMENTS: usize = 1 << 18;
/// The same threshold for kernels that call transcendental functions (exp, sin, tanh, pow: tens
/// of ns per element), where a second thread pays off much sooner.
pub(crate) const PARALLEL_ELEMENTS_HEAVY: usize = 1 << 13;
/// Elements per rayon task: large enough to amortize scheduling, small enough to balance.
const CHUNK: usize = 1 << 14;

/// From this many elements (below `PARALLEL_ELEMENTS`), a cheap element-wise kernel shares its
/// chunks of `TEAM_CHUNK` with the GEMM team's helper (NOTE [Element-wise work on the team]).
const TEAM_ELEMENTS: usize = 1 << 15;
const TEAM_CHUNK: usize = 1 << 13;

// NOTE [Element-wise work on the team]: after a two-thread product, the GEMM team's helper has
// the operands' lines in its core's cache, and the caller writing them must first take each line
// from it. On the 2-core Intel Xeon of session 11, `x.mm(w)` (64×1000×100, both threads) then
// `w.sub_(g)` (100k elements) took 124 µs against 52 µs + 9 µs apart: W1's weight update after
// its forward product. Waking rayon's workers for such a pass costs more than it gains (see
// `PARALLEL_ELEMENTS`); the helper, spinning or yielding for `YIELD_FOR` after a product, is a
// post away. So a cheap kernel of `TEAM_ELEMENTS` to `PARALLEL_ELEMENTS` values shares its chunks
// with the helper when the helper is awake (`gemm::for_chunks`), and runs alone when it is parked
// or the team is busy. Measured (session 11, wheels alternated): `mm` + `w.sub_` 124 → 97 µs; W1
// 0.233–0.234 → 0.226–0.231 ms/step. The chunks were first handed out from one counter, so a
// tensor's lines went to whichever core claimed them and moved between the cores from pass to
// pass (W1's weight update, its gradient's accumulation and `zero_`: three passes over the same
// 100k values a step); claimed from both ends (the caller from the front, the helper from the
// back) each half stays in one core's L2, next to the half of the gradient that core's rows of
// the weight-gradient product wrote (NOTE [Claimed tiles]), and `zero_` joined the passes: W1
// 0.251–0.257 → 0.213–0.224 ms/step (session 12, three alternations). Element-wise results do
// not depend on who computes them.

/// A slice's start, handed to the threads of `split`, each of which touches its own range.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(pub(crate) *mut T);
// SAFETY: the ranges the threads of `split` read and write through it are disjoint.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as for `Send`.
unsafe impl<T> Sync for Shared<T> {}
impl<T> Shared<T> {
    /// The values at `r`.
    ///
    /// # Safety
    /// `r` must lie in the slice this points into, which must outlive `'a`, and no other live
    /// reference may overlap it.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn part<'a>(&self, r: &std::ops::Range<usize>) -> &'a mut [T] {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(r.start), r.len()) }
    }
}

/// How expensive an element-wise function is, which decides when to run it on several threads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cost {
    Cheap,
    /// The vector transcendentals of `fastmath` (`tanh`, `exp`, `sigmoid`: about 0.25 ns each).
    Fast,
    Heavy,
}

impl Cost {
    fn parallel(self, n: usize) -> bool {
        n >= match self {
            Cost::Cheap => PARALLEL_ELEMENTS,
            Cost::Fast => crate::ops::fastmath::PARALLEL + 1,
            Cost::Heavy => PARALLEL_ELEMENTS_HEAVY,
        }
    }
}

// NOTE [Wide element-wise loops]: the crate is compiled for the x86-64 baseline (SSE2), so a plain
// loop over a slice vectorizes to 4 float32 lanes. On data that sits in the cache (a 100k-element
// weight and its gradient, a 256x256 layer) such a loop is bound by its instruction count, not by
// memory: `w -= g` over 100k float32 took 7.4 us, about 1.2 cycles per 4 lanes. `wide` runs the
// same loop compiled a second and third time with AVX-512 or AVX2 enabled (chosen at run time, as
// `fastmath` does), so it vectorizes to 16 or 8 lanes. The loop bodies are the same IEEE operations
// (no fast-math: LLVM does not fuse a multiply and an add into an FMA unless the code says
// `mul_add`, which is exact either way), so the results are identical on every path.

/// Runs `body` (a loop over slices) compiled for the widest vector ISA this CPU has: NOTE [Wide
/// element-wise loops].
#[inline(always)]
pub(crate) fn wide<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512dq")
            && std::arch::is_x86_feature_detected!("avx512vl")
        {
            // SAFETY: the features were just detected.
            return unsafe { wide_avx512(body) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the features were just detected.
            return unsafe { wide_avx2(body) };
        }
    }
    body()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn wide_avx512<R>(body: impl FnOnce() -> R) -> R {
    body()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn wide_avx2<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// Runs `run` over `0..n` in ranges on several threads where that pays: over rayon's threads by
/// `CHUNK` from `cost`'s threshold, or by `TEAM_CHUNK` on this thread and the GEMM team's helper
/// for mid-sized cheap work when the helper is awake (NOTE [Element-wise work on the team]). Each
/// index is then in exactly one range. Returns `false`, having run nothing, otherwise: the caller
/// then runs its loop once over the whole (its own code, which the compiler optimizes with the
/// slices' no-alias guarantees: through this function's ranges a 1000-value map took 25% longer).
pub(crate) fn split(n: usize, cost: Cost, run: &(dyn Fn(std::ops::Range<usize>) + Sync)) -> bool {
    let part = |size: usize, i: usize| i * size..n.min((i + 1) * size);
    if cost.parallel(n) {
        crate::parallel::install(|| (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|i| run(part(CHUNK, i))));
        return true;
    }
    n >= TEAM_ELEMENTS && crate::ops::gemm::for_chunks(n.div_ceil(TEAM_CHUNK), &|i| run(part(TEAM_CHUNK, i)))
}

/// `f` over `src` into a new vector, in plain loops over chunks that the compiler vectorizes
/// (to the CPU's widest vectors: NOTE [Wide element-wise loops]).
fn collect_map<T: Copy + Sync, U: Send>(src: &[T], cost: Cost, f: impl Fn(T) -> U + Sync + Send) -> Vec<U> {
    collect_chunks(src, cost, |d, s| wide(|| d.iter_mut().zip(s).for_each(|(d, &x)| _ = d.write(f(x)))))
}

/// A new vector of `src.len()` values, `run(dst, src)` writing every slot of each part of `dst`
/// from the same part of `src`: the parts as `split` cuts them, or the whole at once.
pub(crate) fn collect_chunks<T: Sync, U: Send>(
    src: &[T],
    cost: Cost,
    run: impl Fn(&mut [std::mem::MaybeUninit<U>], &[T]) + Sync,
) -> Vec<U> {
    let mut out: Vec<U> = Vec::with_capacity(src.len());
    let dst = &mut out.spare_capacity_mut()[..src.len()];
    let shared = Shared(dst.as_mut_ptr());
    // SAFETY: each range lies in `dst`, and no other range of this call overlaps it.
    if !split(src.len(), cost, &|r| run(unsafe { shared.part(&r) }, &src[r])) {
        run(dst, src);
    }
    // SAFETY: `run` wrote every one of the first `src.len()` slots above.
    unsafe { out.set_len(src.len()) };
    out
}

/// `f` pairwise over two equally long slices into a new vector (see `collect_map`).
fn collect_zip<T: Copy + Sync, U: Send>(a: &[T], b: &[T], cost: Cost, f: impl Fn(T, T) -> U + Sync + Send) -> Vec<U> {
    let n = a.len().min(b.len());
    let mut out: Vec<U> = Vec::with_capacity(n);
    let dst = &mut out.spare_capacity_mut()[..n];
    let run = |d: &mut [std::mem::MaybeUninit<U>], a: &[T], b: &[T]| {
        wide(|| d.iter_mut().zip(a.iter().zip(b)).for_each(|(d, (&x, &y))| _ = d.write(f(x, y))))
    };
    let shared = Shared(dst.as_mut_ptr());
    // SAFETY: as in `collect_map`.
    if !split(n, cost, &|r| run(unsafe { shared.part(&r) }, &a[r.clone()], &b[r])) {
        run(dst, &a[..n], &b[..n]);
    }
    // SAFETY: every one of the first `n` slots was written above.
    unsafe { out.set_len(n) };
    out
}

/// `d[i] = f(d[i])` in place (see `collect_map`).
pub(crate) fn map_in_place<T: Copy + Send + Sync>(d: &mut [T], cost: Cost, f: impl Fn(T) -> T + Sync + Send) {
    let run = |d: &mut [T]| wide(|| d.iter_mut().for_each(|x| *x = f(*x)));
    let shared = Shared(d.as_mut_ptr());
    // SAFETY: as in `collect_map`.
    if !split(d.len(), cost, &|r| run(unsafe { shared.part(&r) })) {
        run(d);
    }
}

/// Every value of `d` set to `v` (see `collect_map`): `zero_` of a gradient between steps.
pub(crate) fn fill<T: Copy + Send + Sync>(d: &mut [T], v: T) {
    let shared = Shared(d.as_mut_ptr());
    // SAFETY: as in `collect_map`.
    if !split(d.len(), Cost::Cheap, &|r| unsafe { shared.part(&r) }.fill(v)) {
        d.fill(v);
    }
}

/// `d[i] = f(d[i], s[i])` in place (see `collect_map`).
pub(crate) fn zip_in_place<T: Copy + Send + Sync>(
    d: &mut [T],
    s: &[T],
    cost: Cost,
    f: impl Fn(T, T) -> T + Sync + Send,
) {
    let run = |d: &mut [T], s: &[T]| wide(|| d.iter_mut().zip(s).for_each(|(x, &y)| *x = f(*x, y)));
    let n = d.len().min(s.len());
    let shared = Shared(d.as_mut_ptr());
    // SAFETY: as in `collect_map`.
    if !split(n, cost, &|r| run(unsafe { shared.part(&r) }, &s[r])) {
        run(d, s);
    }
}

/// `f` applied to every element of `t` (of type `T`), giving a new contiguous tensor.
pub(crate) fn map<T: Element, U: Element>(t: &Tensor, f: impl Fn(T) -> U + Sync + Send) -> Result<Tensor> {
    map_cost(t, Cost::Cheap, f)
}

/// `map` for a function of the given cost.
pub(crate) fn map_cost<T: Element, U: Element>(
    t: &Tensor,
    cost: Cost,
    f: impl Fn(T) -> U + Sync + Send,
) -> Result<Tensor> {
    check_alloc(t.shape(), U::DTYPE)?;
    if t.layout().is_contiguous() {
        let data = t.with_contiguous(|s: &[T]| collect_map(s, cost, &f))?;
        return Tensor::from_vec(data, t.shape());
    }
    t.with_view(|v| Tensor::from_vec(crate::tensor::gather_map(v, &f), t.shape()))?
}

/// `f` applied pairwise to `a` and `b` broadcast together.
pub(crate) fn zip<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    zip_cost(a, b, Cost::Cheap, f)
}

/// `zip` for a function of the given cost.
pub(crate) fn zip_cost<T: Element, U: Element>(
    a: &Tensor,
    b: &Tensor,
    cost: Cost,
    f: impl Fn(T, T) -> U + Sync + Send,
) -> Result<Tensor> {
    if a.shape() == b.shape() && a.layout().is_contiguous() && b.layout().is_contiguous() {
        let data = a.with_contiguous(|sa: &[T]| b.with_contiguous(|sb: &[T]| collect_zip(sa, sb, cost, &f)))??;
        return Tensor::from_vec(data, a.shape());
    }
    // One operand a single value expanded to the other's shape (the gradient of a `sum` reaching an
    // element-wise backward): a map over the other, instead of the broadcast walk below.
    if a.shape() == b.shape() && b.layout().is_contiguous() {
        if let Some(x) = lone_value::<T>(a)? {
            let data = b.with_contiguous(|sb: &[T]| collect_map(sb, cost, |y| f(x, y)))?;
            return Tensor::from_vec(data, a.shape());
        }
    }
    if a.shape() == b.shape() && a.layout().is_contiguous() {
        if let Some(y) = lone_value::<T>(b)? {
            let data = a.with_contiguous(|sa: &[T]| collect_map(sa, cost, |x| f(x, y)))?;
            return Tensor::from_vec(data, a.shape());
        }
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    check_alloc(&shape, U::DTYPE)?;
    a.with_view(|va| {
        b.with_view(|vb| {
            let va = va.broadcast(IxDyn(&shape)).ok_or_else(|| Error::shape("broadcast failed"))?;
            let vb = vb.broadcast(IxDyn(&shape)).ok_or_else(|| Error::shape("broadcast failed"))?;
            let zipped = Zip::from(&va).and(&vb);
            Ok(Tensor::from_array(if cost.parallel(va.len()) {
                crate::parallel::install(|| zipped.par_map_collect(|&x, &y| f(x, y)))
            } else {
                zipped.map_collect(|&x, &y| f(x, y))
            }))
        })?
    })?
}

/// The value of a non-empty tensor of type `T` whose elements all are one stored element (every
/// dimension longer than 1 has stride 0: an expanded scalar); `None` for any other tensor.
fn lone_value<T: Element>(t: &Tensor) -> Result<Option<T>> {
    let l = t.layout();
    if t.dtype() != T::DTYPE || l.numel() == 0 || l.shape.iter().zip(l.strides.iter()).any(|(&n, &s)| n > 1 && s != 0) {
        return Ok(None);
    }
    t.with_view(|v: ndarray::ArrayViewD<T>| v.iter().next().copied())
}

/// Runs `f` on the elements of `dst` (write-locked) and of `src` (read-locked), both contiguous,
/// of type `T`, of equal length and in different storages; `Ok(false)` (nothing run) otherwise.
/// The two locks are taken in address order, so `a += b` and `b += a` on two threads cannot
/// deadlock. The caller bumps `dst`'s version.
pub(crate) fn with_dst_src<T: Element>(dst: &Tensor, src: &Tensor, f: impl FnOnce(&mut [T], &[T])) -> Result<bool> {
    let (sd, ss) = (dst.storage(), src.storage());
    if std::sync::Arc::ptr_eq(sd, ss)
        // Two storages over the same foreign memory (two `from_numpy` of one array): a mutable and a
        // shared slice of one region must not coexist (NOTE [Foreign buffers]); the caller copies.
        || sd.overlaps(ss)
        || !dst.layout().is_contiguous()
        || !src.layout().is_contiguous()
        || dst.numel() != src.numel()
        || dst.dtype() != T::DTYPE
        || src.dtype() != T::DTYPE
    {
        return Ok(false);
    }
    let dst_first = std::sync::Arc::as_ptr(sd) < std::sync::Arc::as_ptr(ss);
    let (mut wg, rg);
    if dst_first {
        wg = sd.write();
        rg = ss.read();
    } else {
        rg = ss.read();
        wg = sd.write();
    }
    let n = dst.numel();
    let (d0, s0) = if n == 0 { (0, 0) } else { (dst.layout().offset, src.layout().offset) };
    let d = T::slice_mut(&mut wg).and_then(|s| s.get_mut(d0..d0 + n));
    let s = T::slice(&rg).and_then(|s| s.get(s0..s0 + n));
    match (d, s) {
        (Some(d), Some(s)) => {
            f(d, s);
            Ok(true)
        }
        _ => Err(Error::index("tensor layout reaches past the end of its storage")),
    }
}

/// Runs `kernel`, written for float32 and float64, on a float16 or bfloat16 tensor's values widened
/// to float32, and rounds its result back to the 16-bit type (NOTE [Half-precision compute]). Outside
/// autograd: the caller records the operation on the original tensor.
pub(crate) fn widened(t: &Tensor, kernel: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let dt = t.dtype();
    let _off = crate::autograd::GradModeGuard::no_grad();
    kernel(&t.detach().to_dtype(crate::DType::Float32)?)?.to_dtype(dt)
}

/// `widened` for a two-operand kernel (both operands of the same 16-bit type).
pub(crate) fn widened2(
    a: &Tensor,
    b: &Tensor,
    kernel: impl FnOnce(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let dt = a.dtype();
    let _off = crate::autograd::GradModeGuard::no_grad();
    let f32 = crate::DType::Float32;
    kernel(&a.detach().to_dtype(f32)?, &b.detach().to_dtype(f32)?)?.to_dtype(dt)
}

/// The data of `src`, broadcast to `shape` and converted to `T`, as an owned array.
pub(crate) fn materialize_as<T: Element>(src: &Tensor, shape: &[usize]) -> Result<ArrayD<T>> {
    check_alloc(shape, T::DTYPE)?;
    crate::dispatch_all!(src.dtype(), S => src.with_view(|v: ndarray::ArrayViewD<S>| {
        let b = v.broadcast(IxDyn(shape)).ok_or_else(|| {
            Error::shape(format!(
                "a tensor of shape {:?} cannot be written into a tensor of shape {:?}",
                src.shape(), shape
            ))
        })?;
        let data = crate::tensor::gather_map(b, convert::<S, T>);
        Ok(ArrayD::from_shape_vec(IxDyn(shape), data).expect("gather_map yields one element per index"))
    })?)
}

/// Element conversion that keeps integers exact and maps floats and bools as PyTorch casts do.
pub(crate) fn convert<S: Element, T: Element>(x: S) -> T {
    // Through i64 between integers and bools (exact: f64 would lose int64s past 2**53; narrow
    // targets wrap as C casts do) and from an integer to a float; a float to an integer goes through
    // `from_f64`, which truncates toward zero as PyTorch's casts do (see `element.rs`).
    if S::DTYPE.is_float() {
        T::from_f64(x.to_f64())
    } else if S::DTYPE.is_int() || T::DTYPE.is_int() {
        T::from_i64(x.to_i64())
    } else {
        T::from_f64(x.to_f64())
    }
}

/// Writes `values` (broadcast to `dst`'s shape, cast to its dtype) through `dst`'s strided layout.
/// The caller bumps the version. `values` is copied out first, so it may alias `dst`.
pub(crate) fn write_into(dst: &Tensor, values: &Tensor) -> Result<()> {
    if dst.layout().has_internal_overlap() {
        return Err(Error::autograd(
            "unsupported operation: more than one element of the written-to tensor refers to a single \
             memory location (it is an expanded view). Please clone() the tensor before performing the \
             operation.",
        ));
    }
    crate::dispatch_all!(dst.dtype(), T => {
        let src: ArrayD<T> = materialize_as::<T>(values, dst.shape())?;
        write_array(dst, &src)
    })
}

/// Writes an owned array of the destination's type and shape through its layout, which
/// `write_into` has checked for internal overlap.
fn write_array<T: Element>(dst: &Tensor, src: &ArrayD<T>) -> Result<()> {
    let l = dst.layout().clone();
    if l.numel() == 0 {
        return Ok(());
    }
    let mut guard = dst.storage().write();
    let slice = T::slice_mut(&mut guard).ok_or_else(|| Error::dtype("write_into: dtype mismatch"))?;
    if l.storage_extent() > slice.len() {
        return Err(Error::index("tensor layout reaches past the end of its storage"));
    }
    if l.is_contiguous() && src.is_standard_layout() {
        if let Some(s) = src.as_slice() {
            slice[l.offset..l.offset + l.numel()].copy_from_slice(s);
            return Ok(());
        }
    }
    let base = slice.as_mut_ptr().wrapping_add(l.offset);
    // SAFETY: the extent check keeps every index in bounds and the overlap check in `write_into`
    // rules out two indices reaching one element; the write guard is held while the view lives.
    let mut view: ArrayViewMutD<T> =
        unsafe { ArrayViewMutD::from_shape_ptr(IxDyn(&l.shape).strides(IxDyn(&l.strides)), base) };
    view.assign(src);
    Ok(())
}
