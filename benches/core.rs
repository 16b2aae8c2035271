//! Criterion benches of the core: scheduler overhead per node, node creation, the saved-tensor
//! check, element-wise kernels by size, and matrix multiplies.
//!
//! Run: `cargo bench --bench core` (add a filter, e.g. `cargo bench --bench core -- matmul`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tapegrad::{DType, GradModeGuard, Tensor};

fn leaf(shape: &[usize]) -> Tensor {
    Tensor::randn(shape, DType::Float32).unwrap().requires_grad_(true).unwrap()
}

/// Backward through a chain of `n` scalar multiplies: the per-node cost of the engine.
fn scheduler(c: &mut Criterion) {
    let mut g = c.benchmark_group("scheduler");
    for &n in &[1_000usize, 100_000] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("chain_backward", n), &n, |b, &n| {
            b.iter_batched(
                || {
                    let x = leaf(&[1]);
                    let mut y = x.clone();
                    for _ in 0..n {
                        y = y.mul_scalar(1.0001).unwrap();
                    }
                    (x, y.sum(None, false).unwrap())
                },
                |(x, y)| {
                    y.backward_default().unwrap();
                    black_box(x.grad());
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// Recording cost: forward through `n` multiplies with and without grad mode.
fn node_creation(c: &mut Criterion) {
    let mut g = c.benchmark_group("node_creation");
    let n = 10_000usize;
    g.throughput(Throughput::Elements(n as u64));
    let x = leaf(&[16]);
    g.bench_function("record_10k", |b| {
        b.iter(|| {
            let mut y = x.clone();
            for _ in 0..n {
                y = y.mul_scalar(1.0001).unwrap();
            }
            black_box(y)
        })
    });
    g.bench_function("no_grad_10k", |b| {
        let _off = GradModeGuard::no_grad();
        b.iter(|| {
            let mut y = x.clone();
            for _ in 0..n {
                y = y.mul_scalar(1.0001).unwrap();
            }
            black_box(y)
        })
    });
    g.finish();
}

/// Unpacking saved tensors (the version check) of one node.
fn saved_check(c: &mut Criterion) {
    let x = leaf(&[16]);
    let w = leaf(&[16]);
    let y = x.mul(&w).unwrap();
    let node = y.grad_fn().unwrap();
    c.bench_function("saved_tensor_unpack_2", |b| b.iter(|| black_box(node.unpack_saved().unwrap())));
}

fn elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("elementwise");
    for &n in &[16usize, 10_000, 1_000_000] {
        let a = Tensor::randn(&[n], DType::Float32).unwrap();
        let b2 = Tensor::randn(&[n], DType::Float32).unwrap();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::new("mul", n), &n, |b, _| b.iter(|| black_box(a.mul(&b2).unwrap())));
        g.bench_with_input(BenchmarkId::new("exp", n), &n, |b, _| b.iter(|| black_box(a.exp().unwrap())));
        g.bench_with_input(BenchmarkId::new("mul_scalar", n), &n, |b, _| {
            b.iter(|| black_box(a.mul_scalar(1.5).unwrap()))
        });
    }
    g.finish();
}

fn matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_f32");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    for &(m, k, n) in &[(64usize, 1000usize, 100usize), (256, 1024, 4096), (4096, 4096, 4096)] {
        let a = Tensor::randn(&[m, k], DType::Float32).unwrap();
        let b2 = Tensor::randn(&[k, n], DType::Float32).unwrap();
        g.throughput(Throughput::Elements((2 * m * k * n) as u64));
        g.bench_function(format!("{m}x{k}x{n}"), |b| b.iter(|| black_box(a.mm(&b2).unwrap())));
    }
    g.finish();
}

criterion_group!(benches, scheduler, node_creation, saved_check, elementwise, matmul);
criterion_main!(benches);
