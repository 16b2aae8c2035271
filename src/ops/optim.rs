//! Optimizer updates: the whole update of one parameter group in one call (PyTorch's "foreach"
//! idea, done as one fused pass per tensor instead of one pass per arithmetic step).
//!
//! NOTE [Optimizer arithmetic]: the formulas are PyTorch's single-tensor ones (`torch/optim/*.py`,
//! the path PyTorch takes for CPU tensors), evaluated element by element in the parameter's dtype
//! with the same roundings: every hyperparameter is computed in f64 as Python does (`1 - beta1`,
//! `lr / (1 - beta1**step)`) and rounded once to the dtype; where PyTorch's CPU kernels use a fused
//! multiply-add (`add(alpha=)`, `lerp`, `addcmul`) this uses `mul_add`, and where they do not
//! (`addcdiv`, `mul`, `div`) it rounds each operation. The one known difference is PyTorch's
//! AVX-512 float32 `sqrt`, which is not correctly rounded (1 ulp off for about a fifth of the
//! inputs); ours is, so results agree to a few float32 ulps, not bit for bit.
//!
//! The update runs with no autograd recording (as PyTorch's `step` runs under `no_grad`), writes
//! each tensor in place and bumps its version counter with the optimizer's name, so a saved tensor
//! that a step overwrote names it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::autograd::anomaly;
use crate::error::{Error, Result};
use crate::tensor::element::{Element, Float};
use crate::tensor::layout::fmt_shape;
use crate::tensor::storage::Buffer;
use crate::tensor::Tensor;

/// One optimizer's update rule and hyperparameters (PyTorch's names and meanings).
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// `torch.optim.SGD`. State: `[momentum_buffer]` when `momentum != 0`, else none.
    Sgd {
        /// learning rate
        lr: f64,
        /// momentum factor
        momentum: f64,
        /// dampening of the momentum
        dampening: f64,
        /// Nesterov momentum
        nesterov: bool,
        /// L2 penalty
        weight_decay: f64,
        /// ascend instead of descend
        maximize: bool,
    },
    /// `torch.optim.Adam` (`decoupled: false`) and `AdamW` (`decoupled: true`).
    /// State: `[exp_avg, exp_avg_sq]`, plus `max_exp_avg_sq` with `amsgrad`; a step counter.
    Adam {
        /// learning rate
        lr: f64,
        /// first-moment decay
        beta1: f64,
        /// second-moment decay
        beta2: f64,
        /// added to the denominator
        eps: f64,
        /// L2 penalty (Adam) or decoupled decay (AdamW)
        weight_decay: f64,
        /// the AMSGrad variant
        amsgrad: bool,
        /// ascend instead of descend
        maximize: bool,
        /// AdamW's decay of the parameter instead of Adam's L2 term in the gradient
        decoupled: bool,
    },
    /// `torch.optim.RMSprop`. State: `[square_avg]`, then `momentum_buffer` when `momentum > 0`,
    /// then `grad_avg` when `centered`; a step counter.
    RmsProp {
        /// learning rate
        lr: f64,
        /// smoothing constant
        alpha: f64,
        /// added to the denominator
        eps: f64,
        /// L2 penalty
        weight_decay: f64,
        /// momentum factor
        momentum: f64,
        /// normalize by an estimate of the gradient's variance
        centered: bool,
        /// ascend instead of descend
        maximize: bool,
    },
    /// `torch.optim.Adagrad`. State: `[sum]`; a step counter.
    Adagrad {
        /// learning rate
        lr: f64,
        /// learning-rate decay
        lr_decay: f64,
        /// L2 penalty
        weight_decay: f64,
        /// added to the denominator
        eps: f64,
        /// ascend instead of descend
        maximize: bool,
    },
}

impl Rule {
    /// The name a bumped version counter records.
    fn name(&self) -> &'static str {
        match self {
            Rule::Sgd { .. } => "SGD.step",
            Rule::Adam { decoupled: false, .. } => "Adam.step",
            Rule::Adam { decoupled: true, .. } => "AdamW.step",
            Rule::RmsProp { .. } => "RMSprop.step",
            Rule::Adagrad { .. } => "Adagrad.step",
        }
    }

    /// How many state tensors each parameter has.
    pub fn n_states(&self) -> usize {
        match *self {
            Rule::Sgd { momentum, .. } => usize::from(momentum != 0.0),
            Rule::Adam { amsgrad, .. } => 2 + usize::from(amsgrad),
            Rule::RmsProp { momentum, centered, .. } => 1 + usize::from(momentum > 0.0) + usize::from(centered),
            Rule::Adagrad { .. } => 1,
        }
    }

    /// Whether each parameter has a step counter.
    pub fn counts_steps(&self) -> bool {
        !matches!(self, Rule::Sgd { .. })
    }

    /// The per-parameter scalars that depend on its step count, in f64 as Python computes them.
    fn step_scalars(&self, step: f64) -> [f64; 2] {
        match *self {
            Rule::Adam { lr, beta1, beta2, .. } => {
                let bias_correction1 = 1.0 - beta1.powf(step);
                let bias_correction2 = 1.0 - beta2.powf(step);
                [-(lr / bias_correction1), bias_correction2.powf(0.5)]
            }
            Rule::Adagrad { lr, lr_decay, .. } => [-(lr / (1.0 + (step - 1.0) * lr_decay)), 0.0],
            _ => [0.0, 0.0],
        }
    }
}

/// One parameter with its gradient and state, as the optimizer holds them.
pub struct Slot {
    /// The parameter, updated in place.
    pub param: Tensor,
    /// Its gradient (read only).
    pub grad: Tensor,
    /// Its state tensors in the order `Rule` documents, updated in place.
    pub states: Vec<Tensor>,
    /// Its step counter (a one-element float tensor), incremented by the call.
    pub step: Option<Tensor>,
    /// SGD only: the momentum buffer was just created, so it takes the gradient as it is
    /// (PyTorch's first step clones the gradient into the buffer).
    pub fresh: bool,
}

/// Updates every slot in place with `rule`. Everything is checked before anything is written, so a
/// refused call changes nothing. Large groups run over rayon's threads, split by tensor and by
/// chunks of large tensors.
pub fn step(rule: &Rule, slots: &[Slot]) -> Result<()> {
    for (i, s) in slots.iter().enumerate() {
        check_slot(rule, i, s)?;
    }
    let name = rule.name();
    // Read-only foreign memory (NOTE [Foreign buffers]) is refused before anything is written.
    for (i, s) in slots.iter().enumerate() {
        if std::iter::once(&s.param).chain(&s.states).chain(&s.step).any(|t| !t.storage().is_writable()) {
            return Err(Error::value(format!(
                "{name}: parameter {i} (or its state) shares read-only memory (a non-writable NumPy array); \
                 it can't be updated in place"
            )));
        }
    }
    let mut scalars = Vec::with_capacity(slots.len());
    for s in slots {
        scalars.push(match &s.step {
            Some(t) => rule.step_scalars(increment_step(t, name)?),
            None => [0.0, 0.0],
        });
    }
    // A slot whose tensors are all contiguous and whose storages appear nowhere else in the call is
    // updated in place through slices (in parallel); any other slot is updated through copies, one
    // at a time, in order.
    let mut uses: HashMap<*const crate::tensor::storage::Storage, usize> = HashMap::new();
    for s in slots {
        for t in slot_tensors(s) {
            *uses.entry(Arc::as_ptr(t.storage())).or_default() += 1;
        }
    }
    let direct: Vec<bool> = slots
        .iter()
        .map(|s| {
            // float16/bfloat16 parameters take the copied path, in float32 (NOTE [Half-precision compute]).
            !s.param.dtype().is_half()
                && slot_tensors(s).all(|t| t.layout().is_contiguous() && uses[&Arc::as_ptr(t.storage())] == 1)
        })
        .collect();
    run_direct::<f32>(rule, slots, &scalars, &direct)?;
    run_direct::<f64>(rule, slots, &scalars, &direct)?;
    for (i, s) in slots.iter().enumerate() {
        if !direct[i] {
            if s.param.dtype().is_half() {
                run_copied::<f32>(rule, s, scalars[i])?;
            } else {
                crate::dispatch_float!(s.param.dtype(), name, T => run_copied::<T>(rule, s, scalars[i])?);
            }
        }
    }
    let location = anomaly::current_location();
    for s in slots {
        s.param.storage().bump_version(Cow::Borrowed(name), location.clone());
        for t in &s.states {
            t.storage().bump_version(Cow::Borrowed(name), location.clone());
        }
    }
    Ok(())
}

fn slot_tensors(s: &Slot) -> impl Iterator<Item = &Tensor> {
    [&s.param, &s.grad].into_iter().chain(&s.states)
}

fn check_slot(rule: &Rule, i: usize, s: &Slot) -> Result<()> {
    let p = &s.param;
    if !p.dtype().is_float() {
        return Err(Error::dtype(format!(
            "{}: parameter {i} has dtype {}; only float parameters can be optimized",
            rule.name(),
            p.dtype()
        )));
    }
    if s.states.len() != rule.n_states() {
        return Err(Error::value(format!(
            "{}: parameter {i} has {} state tensors, expected {}",
            rule.name(),
            s.states.len(),
            rule.n_states()
        )));
    }
    for (what, t) in std::iter::once(("gradient", &s.grad)).chain(s.states.iter().map(|t| ("state tensor", t))) {
        if t.dtype() != p.dtype() || t.shape() != p.shape() {
            return Err(Error::shape(format!(
                "{}: the {what} of parameter {i} is {} {} but the parameter is {} {}",
                rule.name(),
                t.dtype(),
                fmt_shape(t.shape()),
                p.dtype(),
                fmt_shape(p.shape())
            )));
        }
    }
    for t in std::iter::once(p).chain(&s.states) {
        if t.layout().has_internal_overlap() {
            return Err(Error::autograd(format!(
                "{}: more than one element of parameter {i} (or of its state) refers to a single memory \
                 location (an expanded view); it cannot be updated in place",
                rule.name()
            )));
        }
    }
    match (&s.step, rule.counts_steps()) {
        (Some(t), true) if t.numel() == 1 && t.dtype().is_float() && !t.layout().has_internal_overlap() => Ok(()),
        (None, false) => Ok(()),
        (Some(t), true) => Err(Error::value(format!(
            "{}: the step of parameter {i} must be a one-element float tensor, got {} {}",
            rule.name(),
            t.dtype(),
            fmt_shape(t.shape())
        ))),
        _ => Err(Error::value(format!(
            "{}: parameter {i}: a step counter is {}",
            rule.name(),
            if rule.counts_steps() { "required" } else { "not used" }
        ))),
    }
}

/// `step += 1` in the counter's dtype; the new count as f64.
fn increment_step(t: &Tensor, name: &'static str) -> Result<f64> {
    let at = t.layout().offset;
    let value = crate::dispatch_float!(t.dtype(), name, T => {
        let mut guard = t.storage().write();
        T::slice_mut(&mut guard).and_then(|v| v.get_mut(at)).map(|x| {
            *x = T::from_f64(x.to_f64() + 1.0);
            x.to_f64()
        })
    });
    let value = value.ok_or_else(|| Error::index("step counter: tensor layout reaches past the end of its storage"))?;
    t.storage().bump_version(Cow::Borrowed(name), None);
    Ok(value)
}

/// Elements per parallel task, and the group size from which the work is split over threads (the
/// update is memory-bound: a second thread pays off only for large groups, see `kernel.rs`).
const CHUNK: usize = 1 << 16;
const PARALLEL_ELEMENTS: usize = super::kernel::PARALLEL_ELEMENTS;

enum Guard<'a> {
    Read(parking_lot::RwLockReadGuard<'a, Buffer>),
    Write(parking_lot::RwLockWriteGuard<'a, Buffer>),
}

/// One chunk of one parameter's update.
struct Piece<'a, T> {
    scalars: [f64; 2],
    fresh: bool,
    param: &'a mut [T],
    grad: &'a [T],
    states: Vec<&'a mut [T]>,
}

/// Updates the `direct` slots of dtype `T` through slices of their locked storages. The locks are
/// taken in address order (as `kernel::with_dst_src` takes its two), so concurrent callers cannot
/// deadlock.
fn run_direct<T: Float>(rule: &Rule, slots: &[Slot], scalars: &[[f64; 2]], direct: &[bool]) -> Result<()> {
    let chosen: Vec<usize> = (0..slots.len()).filter(|&i| direct[i] && slots[i].param.dtype() == T::DTYPE).collect();
    if chosen.is_empty() {
        return Ok(());
    }
    let mut storages: Vec<(&Arc<crate::tensor::storage::Storage>, bool)> = Vec::new();
    for &i in &chosen {
        let s = &slots[i];
        storages.push((s.param.storage(), true));
        storages.push((s.grad.storage(), false));
        storages.extend(s.states.iter().map(|t| (t.storage(), true)));
    }
    storages.sort_by_key(|(st, _)| Arc::as_ptr(st));
    let mut guards: Vec<(*const crate::tensor::storage::Storage, Guard<'_>)> = storages
        .iter()
        .map(|(st, write)| (Arc::as_ptr(st), if *write { Guard::Write(st.write()) } else { Guard::Read(st.read()) }))
        .collect();
    let mut by_storage: HashMap<*const crate::tensor::storage::Storage, &mut Guard<'_>> =
        guards.iter_mut().map(|(p, g)| (*p, g)).collect();
    let mut pieces: Vec<Piece<'_, T>> = Vec::new();
    let mut total = 0usize;
    for &i in &chosen {
        let s = &slots[i];
        let n = s.param.numel();
        total += n;
        let mut take_mut = |t: &Tensor| -> Result<&mut [T]> {
            let at = if n == 0 { 0 } else { t.layout().offset };
            match by_storage.remove(&Arc::as_ptr(t.storage())) {
                Some(Guard::Write(g)) => T::slice_mut(g).and_then(|v| v.get_mut(at..at + n)),
                _ => None,
            }
            .ok_or_else(|| Error::index("optimizer step: tensor layout reaches past the end of its storage"))
        };
        let param = take_mut(&s.param)?;
        let mut states = Vec::with_capacity(s.states.len());
        for t in &s.states {
            states.push(take_mut(t)?);
        }
        let at = if n == 0 { 0 } else { s.grad.layout().offset };
        let grad = match by_storage.remove(&Arc::as_ptr(s.grad.storage())) {
            Some(Guard::Read(g)) => T::slice(g).and_then(|v| v.get(at..at + n)),
            _ => None,
        }
        .ok_or_else(|| Error::index("optimizer step: tensor layout reaches past the end of its storage"))?;
        // Split into chunks so one large tensor also spreads over the threads.
        let mut state_chunks: Vec<_> = states.into_iter().map(|v| v.chunks_mut(CHUNK)).collect();
        for (param, grad) in param.chunks_mut(CHUNK).zip(grad.chunks(CHUNK)) {
            let states: Vec<&mut [T]> = state_chunks.iter_mut().filter_map(|c| c.next()).collect();
            pieces.push(Piece { scalars: scalars[i], fresh: s.fresh, param, grad, states });
        }
    }
    if total >= PARALLEL_ELEMENTS {
        crate::parallel::install(|| pieces.into_par_iter().for_each(|p| update(rule, p)));
    } else {
        pieces.into_iter().for_each(|p| update(rule, p));
    }
    drop(guards);
    Ok(())
}

/// Updates one slot through copies of its tensors (non-contiguous, or sharing memory with another
/// tensor of the call), writing the results back through the layouts.
fn run_copied<T: Float>(rule: &Rule, s: &Slot, scalars: [f64; 2]) -> Result<()> {
    // In `T`, which is wider than a 16-bit parameter (and its states), written back rounded.
    let read = |t: &Tensor| -> Result<Vec<T>> {
        if t.dtype() == T::DTYPE {
            t.to_vec::<T>()
        } else {
            t.detach().to_dtype(T::DTYPE)?.to_vec::<T>()
        }
    };
    let mut param = read(&s.param)?;
    let grad = read(&s.grad)?;
    let mut states: Vec<Vec<T>> = s.states.iter().map(read).collect::<Result<_>>()?;
    let piece = Piece {
        scalars,
        fresh: s.fresh,
        param: &mut param,
        grad: &grad,
        states: states.iter_mut().map(|v| v.as_mut_slice()).collect(),
    };
    update(rule, piece);
    let shape = s.param.shape();
    super::kernel::write_into(&s.param, &Tensor::from_vec(param, shape)?)?;
    for (t, v) in s.states.iter().zip(states) {
        super::kernel::write_into(t, &Tensor::from_vec(v, shape)?)?;
    }
    Ok(())
}

/// One piece, in the widest vector code this CPU runs (with hardware FMA; see NOTE [Optimizer
/// arithmetic]).
fn update<T: Float>(rule: &Rule, p: Piece<'_, T>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the features were just detected.
        unsafe { update_avx512(rule, p) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the features were just detected.
        unsafe { update_avx2(rule, p) };
        return;
    }
    // Without FMA hardware `mul_add` is a library call: slow, but exact.
    loops(rule, p)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma,avx2")]
unsafe fn update_avx512<T: Float>(rule: &Rule, p: Piece<'_, T>) {
    loops(rule, p)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,avx2")]
unsafe fn update_avx2<T: Float>(rule: &Rule, p: Piece<'_, T>) {
    loops(rule, p)
}

/// `torch.lerp(a, b, w)` as PyTorch's CPU kernel computes it (a fused multiply-add from the nearer end).
#[inline(always)]
fn lerp<T: Float>(a: T, b: T, w: T, w_small: bool) -> T {
    if w_small {
        w.mul_add(b - a, a)
    } else {
        (w - T::one()).mul_add(b - a, b)
    }
}

/// `torch.maximum`: NaN if either is NaN.
#[inline(always)]
fn maximum<T: Float>(a: T, b: T) -> T {
    if b > a || b.is_nan() {
        b
    } else {
        a
    }
}

/// The effective gradient: negated under `maximize`, plus the L2 term (`grad.add(param, alpha=wd)`).
#[inline(always)]
fn effective_grad<T: Float>(g: T, p: T, maximize: bool, wd: Option<T>) -> T {
    let g = if maximize { -g } else { g };
    match wd {
        Some(wd) => p.mul_add(wd, g),
        None => g,
    }
}

/// The element loops, one per rule and state layout, each with its scalars hoisted so it vectorizes.
#[inline(always)]
fn loops<T: Float>(rule: &Rule, piece: Piece<'_, T>) {
    let c = |v: f64| T::from_f64(v);
    let Piece { scalars, fresh, param, grad, mut states } = piece;
    match (*rule, states.as_mut_slice()) {
        (Rule::Sgd { lr, momentum, dampening, nesterov, weight_decay, maximize }, st) => {
            let wd = (weight_decay != 0.0).then(|| c(weight_decay));
            let neg_lr = c(-lr);
            match st {
                [buf] => {
                    let (mom, keep) = (c(momentum), c(1.0 - dampening));
                    for ((p, &g), b) in param.iter_mut().zip(grad).zip(buf.iter_mut()) {
                        let g = effective_grad(g, *p, maximize, wd);
                        *b = if fresh { g } else { g.mul_add(keep, *b * mom) };
                        let d = if nesterov { b.mul_add(mom, g) } else { *b };
                        *p = d.mul_add(neg_lr, *p);
                    }
                }
                _ => {
                    for (p, &g) in param.iter_mut().zip(grad) {
                        let g = effective_grad(g, *p, maximize, wd);
                        *p = g.mul_add(neg_lr, *p);
                    }
                }
            }
        }
        (Rule::Adam { lr, beta1, beta2, eps, weight_decay, maximize, decoupled, .. }, st) => {
            let w1 = c(1.0 - beta1);
            let w1_small = w1.abs() < c(0.5);
            let (b2, w2, eps) = (c(beta2), c(1.0 - beta2), c(eps));
            let (neg_step, bc2_sqrt) = (c(scalars[0]), c(scalars[1]));
            let l2 = (weight_decay != 0.0 && !decoupled).then(|| c(weight_decay));
            let decay = (weight_decay != 0.0 && decoupled).then(|| c(1.0 - lr * weight_decay));
            // NOTE [One store per element]: the parameter is read once and written once per element.
            // Written as `if decay { *p = *p * d }` and then `*p = *p + ...`, the decay became a
            // masked vector store of `p` that the final update read straight back; a load cannot
            // take its value from a masked store in flight (on Zen 5 nor on recent Intel cores), so
            // every vector waited for that store to retire: W7's step ran at 63 GB/s on 16 MiB that
            // sit in L3, 2.5x slower than the same arithmetic in C (bench20, session 8).
            let one = |p: T, g: T, m: &mut T, v: &mut T| -> T {
                let g = effective_grad(g, p, maximize, l2);
                *m = lerp(*m, g, w1, w1_small);
                *v = (w2 * g).mul_add(g, *v * b2);
                match decay {
                    Some(d) => p * d,
                    None => p,
                }
            };
            match st {
                [m, v] => {
                    for (((p, &g), m), v) in param.iter_mut().zip(grad).zip(m.iter_mut()).zip(v.iter_mut()) {
                        let q = one(*p, g, m, v);
                        let denom = v.sqrt() / bc2_sqrt + eps;
                        *p = q + neg_step * *m / denom;
                    }
                }
                [m, v, vmax] => {
                    let it = param.iter_mut().zip(grad).zip(m.iter_mut()).zip(v.iter_mut()).zip(vmax.iter_mut());
                    for ((((p, &g), m), v), vmax) in it {
                        let q = one(*p, g, m, v);
                        *vmax = maximum(*vmax, *v);
                        let denom = vmax.sqrt() / bc2_sqrt + eps;
                        *p = q + neg_step * *m / denom;
                    }
                }
                _ => {}
            }
        }
        (Rule::RmsProp { lr, alpha, eps, weight_decay, momentum, centered, maximize }, st) => {
            let wd = (weight_decay != 0.0).then(|| c(weight_decay));
            let (a, w) = (c(alpha), c(1.0 - alpha));
            let w_small = w.abs() < c(0.5);
            let (eps, neg_lr, mom) = (c(eps), c(-lr), c(momentum));
            // square_avg, then the momentum buffer, then grad_avg (see `Rule::RmsProp`).
            let (sq, rest) = match st.split_first_mut() {
                Some(x) => x,
                None => return,
            };
            let (buf, gavg): (Option<&mut [T]>, Option<&mut [T]>) = match (momentum > 0.0, centered, rest) {
                (true, true, [b, ga]) => (Some(&mut **b), Some(&mut **ga)),
                (true, false, [b]) => (Some(&mut **b), None),
                (false, true, [ga]) => (None, Some(&mut **ga)),
                _ => (None, None),
            };
            let n = param.len();
            let mut buf = buf.map(|b| b.iter_mut());
            let mut gavg = gavg.map(|b| b.iter_mut());
            for ((p, &g), s) in param.iter_mut().zip(grad).zip(sq.iter_mut()).take(n) {
                let g = effective_grad(g, *p, maximize, wd);
                *s = (w * g).mul_add(g, *s * a);
                let avg = match gavg.as_mut().and_then(|it| it.next()) {
                    Some(ga) => {
                        *ga = lerp(*ga, g, w, w_small);
                        (-*ga).mul_add(*ga, *s).sqrt()
                    }
                    None => s.sqrt(),
                } + eps;
                match buf.as_mut().and_then(|it| it.next()) {
                    Some(b) => {
                        *b = *b * mom + g / avg;
                        *p = b.mul_add(neg_lr, *p);
                    }
                    None => *p = *p + neg_lr * g / avg,
                }
            }
        }
        (Rule::Adagrad { weight_decay, eps, maximize, .. }, [sum]) => {
            let wd = (weight_decay != 0.0).then(|| c(weight_decay));
            let (eps, neg_clr) = (c(eps), c(scalars[0]));
            for ((p, &g), s) in param.iter_mut().zip(grad).zip(sum.iter_mut()) {
                let g = effective_grad(g, *p, maximize, wd);
                *s = g.mul_add(g, *s);
                *p = *p + neg_clr * g / (s.sqrt() + eps);
            }
        }
        (Rule::Adagrad { .. }, _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    /// SGD with momentum: the first step copies the gradient into the buffer, later ones decay it.
    #[test]
    fn sgd_momentum_closed_form() {
        let rule =
            Rule::Sgd { lr: 0.5, momentum: 0.9, dampening: 0.0, nesterov: false, weight_decay: 0.0, maximize: false };
        let (p, g, b) = (t(&[1.0, 2.0]), t(&[0.5, -1.0]), t(&[0.0, 0.0]));
        let slot = |fresh| Slot { param: p.clone(), grad: g.clone(), states: vec![b.clone()], step: None, fresh };
        step(&rule, &[slot(true)]).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![0.5, -1.0]);
        assert_eq!(p.to_vec::<f32>().unwrap(), vec![0.75, 2.5]);
        step(&rule, &[slot(false)]).unwrap();
        // buf = 0.9 * buf + g = [0.95, -1.9]; p -= 0.5 * buf
        let pv = p.to_vec::<f32>().unwrap();
        assert!((pv[0] - 0.275).abs() < 1e-6 && (pv[1] - 3.45).abs() < 1e-6, "{pv:?}");
        assert_eq!(p.version(), 2);
    }

    /// A refused call (a state of the wrong shape) writes nothing, not even the step counter.
    #[test]
    fn refused_call_changes_nothing() {
        let rule = Rule::Adagrad { lr: 0.1, lr_decay: 0.0, weight_decay: 0.0, eps: 1e-10, maximize: false };
        let step_t = Tensor::from_vec(vec![0.0f32], &[]).unwrap();
        let bad = Slot {
            param: t(&[1.0]),
            grad: t(&[1.0]),
            states: vec![t(&[0.0, 0.0])],
            step: Some(step_t.clone()),
            fresh: false,
        };
        assert!(step(&rule, &[bad]).is_err());
        assert_eq!(step_t.to_vec::<f32>().unwrap(), vec![0.0]);
    }

    /// Two parameters sharing one storage go through the copying path and still get both updates.
    #[test]
    fn shared_storage_slots() {
        let rule =
            Rule::Sgd { lr: 1.0, momentum: 0.0, dampening: 0.0, nesterov: false, weight_decay: 0.0, maximize: false };
        let base = t(&[1.0, 2.0, 3.0, 4.0]);
        let a = base.narrow(0, 0, 2).unwrap();
        let b = base.narrow(0, 2, 2).unwrap();
        let g = t(&[1.0, 1.0]);
        let slots = [
            Slot { param: a, grad: g.clone(), states: vec![], step: None, fresh: false },
            Slot { param: b, grad: g, states: vec![], step: None, fresh: false },
        ];
        step(&rule, &slots).unwrap();
        assert_eq!(base.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    }

    /// A large group (parallel, chunked) gives the same numbers as one element at a time.
    #[test]
    fn parallel_matches_sequential() {
        let rule = Rule::Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            amsgrad: true,
            maximize: false,
            decoupled: true,
        };
        let n = PARALLEL_ELEMENTS + 12345;
        let pv: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
        let gv: Vec<f32> = (0..n).map(|i| ((i * 104729) % 997) as f32 / 400.0 - 1.2).collect();
        let make = |len: usize| {
            let p = Tensor::from_vec(pv[..len].to_vec(), &[len]).unwrap();
            let g = Tensor::from_vec(gv[..len].to_vec(), &[len]).unwrap();
            let st: Vec<Tensor> = (0..3).map(|_| Tensor::zeros(&[len], DType::Float32).unwrap()).collect();
            (p, g, st)
        };
        let (p, g, st) = make(n);
        let step_t = Tensor::from_vec(vec![0.0f32], &[]).unwrap();
        step(&rule, &[Slot { param: p.clone(), grad: g, states: st, step: Some(step_t), fresh: false }]).unwrap();
        let (q, h, st2) = make(7);
        let step_t = Tensor::from_vec(vec![0.0f32], &[]).unwrap();
        step(&rule, &[Slot { param: q.clone(), grad: h, states: st2, step: Some(step_t), fresh: false }]).unwrap();
        assert_eq!(p.to_vec::<f32>().unwrap()[..7], q.to_vec::<f32>().unwrap()[..]);
    }
}
