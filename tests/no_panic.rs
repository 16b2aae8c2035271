//! "No crash, ever" for the Rust API: random programs over a pool of tensors (shapes with zero-size
//! dimensions and 0-d tensors; float32, float64, int64 and bool; odd values such as NaN, infinities
//! and extreme integers) run random operations, including invalid combinations, in-place writes,
//! views, hooks, custom operations and backward passes. The property is that no call panics: an
//! `Err` is a fine answer, a panic is a bug.

use std::borrow::Cow;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use proptest::prelude::*;
use tapegrad::autograd::{BackwardCtx, ForwardCtx};
use tapegrad::ops::{Cmp, IndexItem};
use tapegrad::{apply_custom, backward, grad, CustomOp, DType, GradModeGuard, Result, Scalar, Tensor};

const DTYPES: [DType; 10] = DType::ALL;

const FLOATS: [f64; 10] = [0.0, 1.0, -1.0, 2.5, -0.5, 1e-300, 1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
const INTS: [i64; 6] = [0, 1, -3, 7, i64::MAX, i64::MIN];

fn scalar(s: u8) -> Scalar {
    let s = s as usize;
    match s % 3 {
        0 => Scalar::Float(FLOATS[s / 3 % FLOATS.len()]),
        1 => Scalar::Int(INTS[s / 3 % INTS.len()]),
        _ => Scalar::Bool(s & 4 != 0),
    }
}

/// One initial tensor: a shape of up to 3 dims of sizes 0..=3, a dtype, value seeds, requires_grad.
#[derive(Clone, Debug)]
struct Init {
    shape: Vec<usize>,
    dtype: u8,
    seed: u8,
    requires_grad: bool,
}

fn make(init: &Init) -> Result<Tensor> {
    let dtype = DTYPES[init.dtype as usize % DTYPES.len()];
    let n: usize = init.shape.iter().product();
    let pick = |i: usize| (init.seed as usize).wrapping_mul(31).wrapping_add(i * 7);
    let t = match dtype {
        DType::Float32 => {
            Tensor::from_vec((0..n).map(|i| FLOATS[pick(i) % FLOATS.len()] as f32).collect(), &init.shape)?
        }
        DType::Float64 => Tensor::from_vec((0..n).map(|i| FLOATS[pick(i) % FLOATS.len()]).collect(), &init.shape)?,
        DType::Int64 => Tensor::from_vec((0..n).map(|i| INTS[pick(i) % INTS.len()]).collect(), &init.shape)?,
        DType::Bool => Tensor::from_vec((0..n).map(|i| pick(i) % 2 == 0).collect(), &init.shape)?,
        // The narrow integers and 16-bit floats, by a cast (which wraps and rounds) of the same values.
        other if other.is_int() => {
            Tensor::from_vec((0..n).map(|i| INTS[pick(i) % INTS.len()]).collect(), &init.shape)?.to_dtype(other)?
        }
        other => {
            Tensor::from_vec((0..n).map(|i| FLOATS[pick(i) % FLOATS.len()]).collect(), &init.shape)?.to_dtype(other)?
        }
    };
    if init.requires_grad {
        // Fails (as it should) for integer and bool tensors.
        let _ = t.set_requires_grad(true);
    }
    Ok(t)
}

/// One step of a program: an operation code and raw operands, interpreted by `run_step`.
#[derive(Clone, Debug)]
struct Step {
    op: u8,
    a: u8,
    b: u8,
    c: u8,
    p: i8,
    q: i8,
    v: Vec<i8>,
    s: u8,
    flag: bool,
}

fn init_strategy() -> impl Strategy<Value = Init> {
    (prop::collection::vec(0usize..=3, 0..=3), any::<u8>(), any::<u8>(), any::<bool>())
        .prop_map(|(shape, dtype, seed, requires_grad)| Init { shape, dtype, seed, requires_grad })
}

fn step_strategy() -> impl Strategy<Value = Step> {
    (
        0u8..N_OPS,
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        -4i8..5,
        -2i8..5,
        prop::collection::vec(-2i8..5, 0..=4),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(|(op, a, b, c, p, q, v, s, flag)| Step { op, a, b, c, p, q, v, s, flag })
}

/// A custom operation that saves its input and its output (y = x * x, dy/dx = 2x).
struct Square;

impl CustomOp for Square {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("Square")
    }
    fn forward(&mut self, ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let y = inputs[0].mul(&inputs[0])?;
        ctx.save_for_backward(&[inputs[0].clone(), y.clone()])?;
        Ok(vec![y])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let s = ctx.saved_tensors()?;
        Ok(vec![Some(g[0].as_ref().unwrap().mul(&s[0])?.mul_scalar(2.0)?)])
    }
}

/// A custom operation whose backward hands back whatever tensor it was built with.
struct ReturnsThis(Tensor);

impl CustomOp for ReturnsThis {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("ReturnsThis")
    }
    fn forward(&mut self, _ctx: &mut ForwardCtx, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(vec![inputs[0].clone_tensor()?])
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>, _g: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(self.0.clone())])
    }
}

fn dims(v: &[i8]) -> Vec<isize> {
    v.iter().map(|&d| d as isize).collect()
}

fn sizes(v: &[i8]) -> Vec<usize> {
    v.iter().map(|&d| d.rem_euclid(5) as usize).collect()
}

fn index_items(v: &[i8], p: i8, mask: &Tensor) -> Vec<IndexItem> {
    v.iter()
        .map(|&code| match code.rem_euclid(5) {
            0 => IndexItem::Int(code as isize - 1),
            1 => IndexItem::Slice {
                start: if code > 2 { Some(code as isize - 4) } else { None },
                stop: if p > 0 { Some(p as isize) } else { None },
                step: (p as isize).rem_euclid(4) - 1,
            },
            2 => IndexItem::NewAxis,
            3 => IndexItem::Ellipsis,
            _ => IndexItem::Mask(mask.clone()),
        })
        .collect()
}

const N_OPS: u8 = 48;

/// Interprets one step. Every result is pushed to the pool so later steps can use it.
fn run_step(pool: &mut Vec<Tensor>, st: &Step) -> Result<()> {
    let n = pool.len();
    let a = pool[st.a as usize % n].clone();
    let b = pool[st.b as usize % n].clone();
    let c = pool[st.c as usize % n].clone();
    let (p, q) = (st.p as isize, st.q as isize);
    let s = scalar(st.s);
    let dt = DTYPES[st.s as usize % DTYPES.len()];
    let mut out: Vec<Tensor> = Vec::new();
    match st.op {
        0 => out.push([Tensor::neg, Tensor::exp, Tensor::log, Tensor::sqrt][st.s as usize % 4](&a)?),
        1 => out.push([Tensor::sin, Tensor::cos, Tensor::tanh, Tensor::sigmoid][st.s as usize % 4](&a)?),
        2 => out.push([Tensor::relu, Tensor::abs, Tensor::sign, Tensor::clone_tensor][st.s as usize % 4](&a)?),
        3 => out.push([Tensor::add, Tensor::sub, Tensor::mul, Tensor::div, Tensor::pow][st.s as usize % 5](&a, &b)?),
        4 => out.push(match st.c % 8 {
            0 => a.add_scalar(s)?,
            1 => a.sub_scalar(s)?,
            2 => a.rsub_scalar(s)?,
            3 => a.mul_scalar(s)?,
            4 => a.div_scalar(s)?,
            5 => a.rdiv_scalar(s)?,
            6 => a.pow_scalar(s)?,
            _ => a.rpow_scalar(s)?,
        }),
        5 => {
            let ops = [Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge, Cmp::Eq, Cmp::Ne];
            out.push(a.compare(&b, ops[st.c as usize % 6])?);
            out.push(a.compare_scalar(s, ops[st.c as usize % 6])?);
        }
        6 => {
            let lo = if st.flag { Some(FLOATS[st.c as usize % FLOATS.len()]) } else { None };
            let hi = if p > 0 { Some(q as f64) } else { None };
            out.push(a.clamp(lo, hi)?);
        }
        7 => out.push(a.matmul(&b)?),
        8 => out.push(a.mm(&b)?),
        9 => out.push(a.bmm(&b)?),
        10 => out.push(a.t()?),
        11 => out.push(a.transpose(p, q)?),
        12 => out.push(a.permute(&dims(&st.v))?),
        13 => out.push(a.reshape(&dims(&st.v))?),
        14 => out.push(a.view(&dims(&st.v))?),
        15 => out.push(a.flatten(p, q)?),
        16 => out.push(a.unsqueeze(p)?),
        17 => out.push(if st.flag { a.squeeze()? } else { a.squeeze_dim(p)? }),
        18 => out.push(a.expand(&sizes(&st.v))?),
        19 => out.push(a.expand_signed(&dims(&st.v))?),
        20 => out.push(a.narrow(p, st.q.max(0) as usize, st.c as usize % 4)?),
        21 => {
            let d = dims(&st.v);
            let d = if st.c.is_multiple_of(3) { None } else { Some(d.as_slice()) };
            out.push(if st.c.is_multiple_of(2) { a.sum(d, st.flag)? } else { a.mean(d, st.flag)? });
        }
        22 => out.push(a.max_all()?),
        23 => {
            let (v, i) = a.max_dim(p, st.flag)?;
            out.extend([v, i]);
        }
        24 => out.push(a.argmax(if st.c.is_multiple_of(2) { None } else { Some(p) }, st.flag)?),
        25 => out.push(a.gather(p, &b)?),
        26 => {
            let parts = [a, b, c];
            let k = 1 + st.s as usize % 3;
            out.push(if st.flag { Tensor::cat(&parts[..k], p)? } else { Tensor::stack(&parts[..k], p)? });
        }
        27 => out.push(a.index(&index_items(&st.v, st.p, &b))?),
        28 => out.push(a.masked_select(&b)?),
        29 => out.push(a.masked_scatter(&b, &c)?),
        30 => out.push(Tensor::where_(&a, &b, &c)?),
        31 => out.push(a.to_dtype(dt)?),
        32 => out.push(if st.flag { a.contiguous()? } else { a.detach() }),
        // In-place writes.
        33 => [Tensor::add_, Tensor::sub_, Tensor::mul_, Tensor::div_][st.s as usize % 4](&a, &b)?,
        34 => match st.c % 6 {
            0 => a.add_scalar_(s)?,
            1 => a.sub_scalar_(s)?,
            2 => a.mul_scalar_(s)?,
            3 => a.div_scalar_(s)?,
            4 => a.fill_(s)?,
            _ => a.zero_()?,
        },
        35 => a.clamp_(if st.flag { Some(p as f64) } else { None }, Some(q as f64))?,
        36 => a.copy_(&b)?,
        37 => a.index_put_(&index_items(&st.v, st.p, &c), &b)?,
        38 => a.masked_fill_(&b, s)?,
        // Autograd.
        39 => a.set_requires_grad(st.flag)?,
        40 => {
            let g = match st.c % 3 {
                0 => None,
                1 => Some(b.clone()),
                _ => Some(Tensor::ones(a.shape(), a.dtype())?),
            };
            backward(std::slice::from_ref(&a), &[g], st.flag, p > 2, None)?;
        }
        41 => {
            let gs = grad(std::slice::from_ref(&a), std::slice::from_ref(&b), &[None], st.flag, p > 2, q > 0)?;
            out.extend(gs.into_iter().flatten());
        }
        42 => {
            let _g = GradModeGuard::new(st.flag);
            out.push(a.mul(&b)?.sum(None, false)?);
        }
        43 => a.set_grad(Some(b.clone()))?,
        44 => {
            // A hook that replaces the gradient with whatever `c` is (shape and dtype unchecked here).
            let r = c.clone();
            let h = a.register_hook(Arc::new(move |_g: &Tensor| Ok(Some(r.clone()))))?;
            if st.flag {
                h.remove();
            }
        }
        45 => {
            a.retain_grad()?;
            if let Some(g) = a.grad() {
                out.push(g);
            }
        }
        46 => out.extend(apply_custom(Square, std::slice::from_ref(&a))?),
        _ => out.extend(apply_custom(ReturnsThis(c.clone()), std::slice::from_ref(&a))?),
    }
    for t in out {
        if t.numel() <= 4096 {
            pool.push(t);
        }
    }
    if pool.len() > 24 {
        pool.remove(0);
    }
    Ok(())
}

/// Runs a program; returns the step at which something panicked, with its message.
fn run_program(inits: &[Init], steps: &[Step]) -> std::result::Result<usize, (usize, String)> {
    let mut pool: Vec<Tensor> = Vec::new();
    for init in inits {
        match catch_unwind(|| make(init)) {
            Ok(Ok(t)) => pool.push(t),
            Ok(Err(_)) => {}
            Err(e) => return Err((0, panic_message(e))),
        }
    }
    if pool.is_empty() {
        pool.push(Tensor::zeros(&[], DType::Float32).unwrap());
    }
    let mut errors = 0;
    for (i, st) in steps.iter().enumerate() {
        match catch_unwind(AssertUnwindSafe(|| run_step(&mut pool, st))) {
            Ok(Ok(())) => {}
            Ok(Err(_)) => errors += 1,
            Err(e) => return Err((i, panic_message(e))),
        }
    }
    // Dropping the pool (and every graph it holds) must not panic either.
    catch_unwind(AssertUnwindSafe(move || drop(pool))).map_err(|e| (steps.len(), panic_message(e)))?;
    Ok(errors)
}

fn panic_message(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a non-string panic".into())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 4000,
        max_shrink_iters: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_never_panic(
        inits in prop::collection::vec(init_strategy(), 1..=4),
        steps in prop::collection::vec(step_strategy(), 1..=32),
    ) {
        if let Err((step, msg)) = run_program(&inits, &steps) {
            prop_assert!(false, "step {} ({:?}) panicked: {}", step, steps.get(step), msg);
        }
    }
}

/// Every operation code at least once on every pair of a fixed, varied pool, so each arm of the
/// interpreter runs whatever the random draw (the random test adds the combinations).
#[test]
fn every_op_on_a_fixed_pool_never_panics() {
    let inits: Vec<Init> = [
        (vec![], 0, true),
        (vec![2, 3], 1, true),
        (vec![0, 3], 1, false),
        (vec![3], 2, false),
        (vec![2, 1, 3], 0, true),
        (vec![2, 3], 3, false),
        (vec![3, 0], 2, false),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (shape, dtype, requires_grad))| Init { shape, dtype, seed: i as u8, requires_grad })
    .collect();
    let mut steps = Vec::new();
    for op in 0..N_OPS {
        for a in 0..7u8 {
            for (b, p) in [(1u8, 0i8), (5, 1), (2, -1), (4, 3)] {
                steps.push(Step {
                    op,
                    a,
                    b,
                    c: a + b,
                    p,
                    q: p.max(0),
                    v: vec![p, 1, -1],
                    s: a * 7 + b,
                    flag: a % 2 == 0,
                });
            }
        }
    }
    for chunk in steps.chunks(12) {
        if let Err((step, msg)) = run_program(&inits, chunk) {
            panic!("step {:?} panicked: {msg}", chunk.get(step));
        }
    }
}
