//! Random factories with one process-wide generator, so `manual_seed` makes runs repeatable.

use std::sync::OnceLock;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

use super::create::check_alloc;
use super::dtype::DType;
use super::Tensor;
use crate::error::{Error, Result};

fn generator() -> &'static Mutex<StdRng> {
    static GEN: OnceLock<Mutex<StdRng>> = OnceLock::new();
    GEN.get_or_init(|| {
        crate::at_fork::register();
        Mutex::new(StdRng::seed_from_u64(0x7a9e_5eed))
    })
}

/// Takes the generator's lock for a fork (NOTE [Locks across fork] in `at_fork.rs`): a child
/// forked while another thread samples would otherwise find it held forever. The child keeps the
/// parent's state, as PyTorch's generator does (a worker that wants other samples reseeds).
pub(crate) fn before_fork() {
    std::mem::forget(generator().lock());
}

/// Releases the lock `before_fork` took.
pub(crate) fn after_fork() {
    // SAFETY: `before_fork` took the lock on this thread and forgot its guard (in a child, this
    // thread is the only one).
    unsafe { generator().force_unlock() };
}

/// Reseeds the generator.
pub fn manual_seed(seed: u64) {
    *generator().lock() = StdRng::seed_from_u64(seed);
}

/// A copy of the generator's state (for recomputing random operations identically: checkpointing).
#[derive(Clone)]
pub struct RngState(StdRng);

/// The generator's current state.
pub fn rng_state() -> RngState {
    RngState(generator().lock().clone())
}

/// Puts the generator back in a state taken by `rng_state`.
pub fn set_rng_state(state: &RngState) {
    *generator().lock() = state.0.clone();
}

fn float_only(dtype: DType, what: &str) -> Result<()> {
    if dtype.is_float() {
        Ok(())
    } else {
        Err(Error::dtype(format!("{what} is only implemented for floating-point dtypes, got {dtype}")))
    }
}

impl Tensor {
    /// Standard normal samples.
    pub fn randn(shape: &[usize], dtype: DType) -> Result<Tensor> {
        float_only(dtype, "randn")?;
        let n = check_alloc(shape, DType::Float64)?; // sampled in f64 first
        let mut g = generator().lock();
        let v: Vec<f64> = (0..n).map(|_| g.sample::<f64, _>(StandardNormal)).collect();
        drop(g);
        Tensor::from_vec(v, shape)?.to_dtype(dtype)
    }

    /// Uniform samples in `[0, 1)`.
    pub fn rand(shape: &[usize], dtype: DType) -> Result<Tensor> {
        float_only(dtype, "rand")?;
        let n = check_alloc(shape, DType::Float64)?; // sampled in f64 first
        let mut g = generator().lock();
        let v: Vec<f64> = (0..n).map(|_| g.random::<f64>()).collect();
        drop(g);
        Tensor::from_vec(v, shape)?.to_dtype(dtype)
    }
}
