//! The backward scheduler: dependency order, accumulation of several paths into one leaf, very
//! deep graphs (iterative backward and drop), release of saved tensors, grad mode, and accumulation
//! across backward calls.

mod common;
use common::*;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use tapegrad::autograd::{BackwardCtx, ForwardCtx};
use tapegrad::{apply_custom, backward, grad, is_grad_enabled, set_grad_enabled, CustomOp, GradModeGuard, Tensor};

/// An identity operation whose backward writes its name into a shared log: the order in which the
/// engine runs the nodes becomes visible.
struct Logged {
    name: &'static str,
    log: Arc<Mutex<Vec<&'static str>>>,
}

impl CustomOp for Logged {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.name)
    }
    fn forward(&mut self, _ctx: &mut ForwardCtx, inputs: &[Tensor]) -> tapegrad::Result<Vec<Tensor>> {
        Ok(vec![inputs[0].clone_tensor()?])
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> tapegrad::Result<Vec<Option<Tensor>>> {
        self.log.lock().unwrap().push(self.name);
        Ok(g)
    }
}

fn logged(name: &'static str, log: &Arc<Mutex<Vec<&'static str>>>, x: &Tensor) -> Tensor {
    apply_custom(Logged { name, log: log.clone() }, std::slice::from_ref(x)).unwrap().remove(0)
}

fn position(log: &[&'static str], name: &str) -> usize {
    log.iter().position(|n| *n == name).unwrap_or_else(|| panic!("{name} did not run: {log:?}"))
}

#[test]
fn a_node_runs_after_all_its_consumers() {
    // a feeds b (directly) and c (through a long chain created later); a must run last, once.
    let log = Arc::new(Mutex::new(Vec::new()));
    let x = rand_leaf(&[3], 1);
    let a = logged("A", &log, &x);
    let b = logged("B", &log, &a);
    let mut chain = a.clone();
    for _ in 0..20 {
        chain = chain.sin().unwrap();
    }
    let c = logged("C", &log, &chain);
    let d = logged("D", &log, &b.add(&c).unwrap());
    d.sum(None, false).unwrap().backward_default().unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 4, "each node runs exactly once: {log:?}");
    assert_eq!(log[0], "D");
    assert!(position(&log, "A") > position(&log, "B"));
    assert!(position(&log, "A") > position(&log, "C"));
}

#[test]
fn a_consumer_created_before_a_deeper_path_still_waits() {
    // b is created before the chain that also consumes a; sequence numbers alone would run a
    // between them, dependency counts must not.
    let log = Arc::new(Mutex::new(Vec::new()));
    let x = rand_leaf(&[2], 2);
    let a = logged("A", &log, &x);
    let b = logged("B", &log, &a);
    let c1 = logged("C1", &log, &a);
    let c2 = logged("C2", &log, &c1);
    let c3 = logged("C3", &log, &c2);
    let y = b.mul(&c3).unwrap().sum(None, false).unwrap();
    y.backward_default().unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 5, "{log:?}");
    assert_eq!(log.last(), Some(&"A"), "{log:?}");
    assert!(position(&log, "C1") > position(&log, "C2") && position(&log, "C2") > position(&log, "C3"));
    // d/dx sum(x * x) = 2x through two paths of identities.
    let xv = x.to_vec::<f64>().unwrap();
    let g = x.grad().unwrap().to_vec::<f64>().unwrap();
    for (g, x) in g.iter().zip(&xv) {
        assert!((g - 2.0 * x).abs() < 1e-12);
    }
}

#[test]
fn diamond_accumulates_into_one_leaf() {
    // y = 2x; z = exp(y) + sin(y)  =>  dz/dx = 2 (exp(2x) + cos(2x)).
    let x = rand_leaf(&[4], 3);
    let y = x.mul_scalar(2.0).unwrap();
    let z = y.exp().unwrap().add(&y.sin().unwrap()).unwrap();
    // A hook on the leaf sees exactly one, already summed, gradient.
    let calls = Arc::new(Mutex::new(0usize));
    let c = calls.clone();
    x.register_hook(Arc::new(move |_g: &Tensor| {
        *c.lock().unwrap() += 1;
        Ok(None)
    }))
    .unwrap();
    z.sum(None, false).unwrap().backward_default().unwrap();
    assert_eq!(*calls.lock().unwrap(), 1);
    let g = vals(&x.grad().unwrap());
    for (g, x) in g.iter().zip(vals(&x)) {
        let want = 2.0 * ((2.0 * x).exp() + (2.0 * x).cos());
        assert!((g - want).abs() < 1e-12, "{g} vs {want}");
    }
}

#[test]
fn one_leaf_used_many_times() {
    // d/dx sum(x*x + x + x*3) = 2x + 4, all uses summed into one .grad.
    let x = rand_leaf(&[3], 4);
    let y = x.mul(&x).unwrap().add(&x).unwrap().add(&x.mul_scalar(3.0).unwrap()).unwrap();
    y.sum(None, false).unwrap().backward_default().unwrap();
    for (g, x) in vals(&x.grad().unwrap()).iter().zip(vals(&x)) {
        assert!((g - (2.0 * x + 4.0)).abs() < 1e-12);
    }
    check_fd("diamond with fan-in", |t| t[0].mul(&t[0])?.add(&t[0].exp()?)?.mul(&t[0].sin()?), &[x]);
}

/// Runs `f` on a thread with a small stack, so that recursion proportional to the graph's depth
/// would overflow at once instead of passing on a generous main-thread stack.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(512 * 1024).spawn(f).unwrap().join().expect("thread finished");
}

const DEEP: usize = 200_000;

#[test]
fn a_200k_node_chain_runs_backward_and_drops() {
    on_small_stack(|| {
        // y = x + 1 + 1 + ... ; dy/dx = 1. Then the graph is released by dropping the output.
        let x = leaf(&[0.5], &[1]);
        let mut y = x.clone();
        for _ in 0..DEEP {
            y = y.add_scalar(1.0).unwrap();
        }
        assert!((y.item().unwrap() - (0.5 + DEEP as f64)).abs() < 1e-6);
        y.sum(None, false).unwrap().backward_default().unwrap();
        assert_eq!(vals(&x.grad().unwrap()), vec![1.0]);
        drop(y);
    });
}

#[test]
fn a_200k_node_chain_drops_without_backward() {
    on_small_stack(|| {
        // A chain that saves tensors (mul saves both inputs) and is never run: dropping it must
        // not recurse either.
        let x = leaf(&[1.0], &[1]);
        let one = leaf(&[1.0], &[1]);
        let mut y = x.clone();
        for _ in 0..DEEP {
            y = y.mul(&one).unwrap();
        }
        assert_eq!(vals(&y), vec![1.0]);
        drop(y);
    });
}

#[test]
fn without_retain_graph_saved_tensors_are_released() {
    // y = x * 1 (not saved by anyone but sin); z = sin(y) saves y. After backward, dropping our
    // handle to y frees its storage: the graph no longer holds it.
    let x = rand_leaf(&[3], 5);
    let y = x.mul_scalar(1.0).unwrap();
    let z = y.sin().unwrap();
    let node = z.grad_fn().unwrap();
    assert_eq!(node.name(), "SinBackward");
    assert!(!node.is_released());
    let y_storage = Arc::downgrade(y.storage());
    drop(y);
    assert!(y_storage.upgrade().is_some(), "SinBackward keeps y for backward");
    backward(&[z.sum(None, false).unwrap()], &[None], false, false, None).unwrap();
    assert!(node.is_released());
    assert!(y_storage.upgrade().is_none(), "released with the graph");
    // A second backward through the freed graph names the problem.
    let msg = err_msg(z.sum(None, false).unwrap().backward_default());
    assert!(msg.contains("backward through the graph a second time"), "{msg}");
    // Reading the saved values directly says the same.
    let msg = err_msg(node.unpack_saved());
    assert!(msg.contains("backward through the graph a second time"), "{msg}");
}

#[test]
fn retain_graph_allows_a_second_backward() {
    // d/dx sum(sin(x) * x) = cos(x) x + sin(x), twice accumulated.
    let x = rand_leaf(&[3], 6);
    let loss = x.sin().unwrap().mul(&x).unwrap().sum(None, false).unwrap();
    backward(std::slice::from_ref(&loss), &[None], true, false, None).unwrap();
    let first = vals(&x.grad().unwrap());
    assert!(!loss.grad_fn().unwrap().is_released());
    backward(std::slice::from_ref(&loss), &[None], false, false, None).unwrap();
    let second = vals(&x.grad().unwrap());
    for ((a, b), x) in first.iter().zip(&second).zip(vals(&x)) {
        let want = x.cos() * x + x.sin();
        assert!((a - want).abs() < 1e-12);
        assert!((b - 2.0 * want).abs() < 1e-12);
    }
    // Now freed: a third one fails.
    assert!(err_msg(loss.backward_default()).contains("backward through the graph a second time"));
}

#[test]
fn graph_without_saved_tensors_can_run_twice() {
    // add and sum save nothing: nothing was freed, so a second backward works (as in PyTorch).
    let x = rand_leaf(&[2], 7);
    let loss = x.add_scalar(1.0).unwrap().sum(None, false).unwrap();
    loss.backward_default().unwrap();
    loss.backward_default().unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0, 2.0]);
}

#[test]
fn grad_mode_controls_recording() {
    let x = rand_leaf(&[2], 8);
    assert!(is_grad_enabled());
    {
        let _g = GradModeGuard::no_grad();
        assert!(!is_grad_enabled());
        let y = x.exp().unwrap();
        assert!(y.grad_fn().is_none() && !y.requires_grad());
        {
            let _on = GradModeGuard::new(true);
            let z = x.exp().unwrap();
            assert_eq!(z.grad_fn().unwrap().name(), "ExpBackward");
        }
        assert!(!is_grad_enabled(), "the inner guard restores the outer mode");
        let msg = err_msg(y.sum(None, false).unwrap().backward_default());
        assert!(msg.contains("does not require grad"), "{msg}");
    }
    assert!(is_grad_enabled());
    let prev = set_grad_enabled(false);
    assert!(prev);
    assert!(x.mul(&x).unwrap().grad_fn().is_none());
    set_grad_enabled(true);
    assert!(x.mul(&x).unwrap().grad_fn().is_some());
    // A guard restores the mode even when the scope unwinds.
    let r = std::panic::catch_unwind(|| {
        let _g = GradModeGuard::no_grad();
        panic!("unwinding through a guard");
    });
    assert!(r.is_err());
    assert!(is_grad_enabled());
}

#[test]
fn grad_mode_is_per_thread() {
    let _off = GradModeGuard::no_grad();
    let other = std::thread::spawn(is_grad_enabled).join().unwrap();
    assert!(other, "another thread keeps its own default");
    assert!(!is_grad_enabled());
}

#[test]
fn gradients_accumulate_across_backward_calls() {
    // Three backward passes over fresh graphs: .grad = 3 * d/dx sum(x^2) = 6x; set_grad(None) resets.
    let x = rand_leaf(&[3], 9);
    for _ in 0..3 {
        x.pow_scalar(2.0).unwrap().sum(None, false).unwrap().backward_default().unwrap();
    }
    for (g, x) in vals(&x.grad().unwrap()).iter().zip(vals(&x)) {
        assert!((g - 6.0 * x).abs() < 1e-12);
    }
    x.set_grad(None).unwrap();
    x.pow_scalar(2.0).unwrap().sum(None, false).unwrap().backward_default().unwrap();
    for (g, x) in vals(&x.grad().unwrap()).iter().zip(vals(&x)) {
        assert!((g - 2.0 * x).abs() < 1e-12);
    }
}

#[test]
fn grad_returns_without_touching_dot_grad() {
    // autograd::grad: d/dx sum(x*y) = y, d/dy = x; .grad stays None. Unused inputs are refused
    // unless allowed.
    let x = rand_leaf(&[3], 10);
    let y = rand_leaf(&[3], 11);
    let unused = rand_leaf(&[1], 12);
    let loss = x.mul(&y).unwrap().sum(None, false).unwrap();
    let gs = grad(std::slice::from_ref(&loss), &[x.clone(), y.clone()], &[None], true, false, false).unwrap();
    assert_eq!(vals(gs[0].as_ref().unwrap()), vals(&y));
    assert_eq!(vals(gs[1].as_ref().unwrap()), vals(&x));
    assert!(x.grad().is_none() && y.grad().is_none());
    let msg = err_msg(grad(std::slice::from_ref(&loss), &[x.clone(), unused.clone()], &[None], true, false, false));
    assert!(msg.contains("not have been used"), "{msg}");
    let gs = grad(&[loss], &[x, unused], &[None], false, false, true).unwrap();
    assert!(gs[0].is_some() && gs[1].is_none());
}

#[test]
fn backward_with_explicit_gradient_and_errors() {
    // A non-scalar root needs a gradient of its shape.
    let x = rand_leaf(&[2, 2], 13);
    let y = x.mul_scalar(3.0).unwrap();
    let msg = err_msg(y.backward_default());
    assert!(msg.contains("grad can be implicitly created only for scalar outputs"), "{msg}");
    let bad = Tensor::ones(&[3], tapegrad::DType::Float64).unwrap();
    assert!(backward(std::slice::from_ref(&y), &[Some(bad)], true, false, None).is_err());
    let g = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    backward(std::slice::from_ref(&y), &[Some(g)], false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![3.0, 6.0, 9.0, 12.0]);
    // A root with no history and no requires_grad.
    let c = Tensor::ones(&[], tapegrad::DType::Float64).unwrap();
    assert!(err_msg(c.backward_default()).contains("does not require grad"));
}

#[test]
fn backward_restricted_to_inputs() {
    // backward(inputs=[x]) accumulates into x only.
    let x = rand_leaf(&[2], 14);
    let y = rand_leaf(&[2], 15);
    let loss = x.mul(&y).unwrap().sum(None, false).unwrap();
    backward(&[loss], &[None], false, false, Some(std::slice::from_ref(&x))).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vals(&y));
    assert!(y.grad().is_none());
}

#[test]
fn create_graph_gives_second_derivatives() {
    // d/dx x^3 = 3x^2, d2/dx2 = 6x.
    let x = rand_leaf(&[3], 16);
    let y = x.pow_scalar(3.0).unwrap().sum(None, false).unwrap();
    let g = grad(&[y], std::slice::from_ref(&x), &[None], true, true, false).unwrap().remove(0).unwrap();
    assert!(g.requires_grad());
    let g2 = grad(&[g.sum(None, false).unwrap()], std::slice::from_ref(&x), &[None], false, false, false)
        .unwrap()
        .remove(0)
        .unwrap();
    for (a, x) in vals(&g2).iter().zip(vals(&x)) {
        assert!((a - 6.0 * x).abs() < 1e-12);
    }
}

#[test]
fn many_independent_wide_branches_give_deterministic_results() {
    // Wide branches are batched in parallel; the result must not depend on it.
    let x = leaf_in(&[64, 512], 17, -1.0, 1.0);
    let run = || {
        x.set_grad(None).unwrap();
        let mut total = x.sin().unwrap();
        for k in 0..8 {
            total = total.add(&x.mul_scalar(k as f64).unwrap().tanh().unwrap()).unwrap();
        }
        total.sum(None, false).unwrap().backward_default().unwrap();
        vals(&x.grad().unwrap())
    };
    let a = run();
    let prev = tapegrad::autograd::set_parallel_backward(false);
    let b = run();
    tapegrad::autograd::set_parallel_backward(prev);
    assert_eq!(a, b, "parallel and serial backward agree bit for bit");
}

/// An identity operation whose backward counts how many of its kind run at once.
struct Overlap {
    running: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
}

impl CustomOp for Overlap {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("Overlap")
    }
    fn forward(&mut self, _ctx: &mut ForwardCtx, inputs: &[Tensor]) -> tapegrad::Result<Vec<Tensor>> {
        Ok(vec![inputs[0].clone_tensor()?])
    }
    fn backward(&self, _ctx: &BackwardCtx<'_>, g: Vec<Option<Tensor>>) -> tapegrad::Result<Vec<Option<Tensor>>> {
        use std::sync::atomic::Ordering::SeqCst;
        let now = self.running.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(30));
        self.running.fetch_sub(1, SeqCst);
        Ok(g)
    }
}

#[test]
fn branches_joined_by_a_chain_of_small_sums_run_together() {
    // W6's shape: each branch ends in a scalar sum and the sums are added in a chain, so the heap
    // holds one branch's large node beside the chain's next small `add`. The small nodes run ahead
    // while the batch fills, and the branches' large nodes run in one parallel batch.
    if rayon::current_num_threads() < 2 {
        return; // one thread: nothing runs at once
    }
    let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let x = leaf_in(&[128, 160], 3, -1.0, 1.0);
    let mut total: Option<Tensor> = None;
    for k in 0..6 {
        let op = Overlap { running: running.clone(), most: most.clone() };
        let h = apply_custom(op, &[x.mul_scalar(k as f64 + 1.0).unwrap()]).unwrap().remove(0);
        let s = h.sum(None, false).unwrap();
        total = Some(match total {
            None => s,
            Some(t) => t.add(&s).unwrap(),
        });
    }
    total.unwrap().backward_default().unwrap();
    assert!(most.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the branches ran one at a time");
    // d/dx sum_k (k + 1) x = 21 everywhere
    assert!(vals(&x.grad().unwrap()).iter().all(|&v| (v - 21.0).abs() < 1e-12));
}
