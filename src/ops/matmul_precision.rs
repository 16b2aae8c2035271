//! The process-wide precision of float32 matrix products (`tg.set_float32_matmul_precision`).
//!
//! - `Highest` (the default): exact float32 products and float32 sums.
//! - `High`: the same as `Highest` here. PyTorch's "high" allows TensorFloat-32 or a
//!   three-product bfloat16 split; CPUs have no TF32 unit, and the split costs three bfloat16
//!   products per float32 product, slower than the float32 kernel, so "high" keeps the exact one
//!   (as PyTorch does on a CPU: "high" leaves its CPU results bit for bit unchanged).
//! - `Medium`: bfloat16 products with float32 sums (`vdpbf16ps`, see `gemm/bf16.rs`) where the
//!   CPU has AVX512_BF16, and the exact kernel where it has not.
//!
//! The setting is one atomic, read at the entry of every float32 GEMM; changing it while another
//! thread multiplies is safe (that multiply runs wholly at the precision it read first).

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::error::{Error, Result};

/// The precision of float32 matrix products; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatmulPrecision {
    /// Exact float32 (the default).
    Highest,
    /// Exact float32 on CPUs (no TensorFloat-32 unit).
    High,
    /// bfloat16 products, float32 sums, where the CPU has AVX512_BF16.
    Medium,
}

impl MatmulPrecision {
    /// The name PyTorch uses: "highest", "high" or "medium".
    pub fn name(self) -> &'static str {
        match self {
            Self::Highest => "highest",
            Self::High => "high",
            Self::Medium => "medium",
        }
    }

    /// Parses one of the three names (exactly, lower case, as PyTorch accepts them).
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "highest" => Ok(Self::Highest),
            "high" => Ok(Self::High),
            "medium" => Ok(Self::Medium),
            _ => Err(Error::InvalidArgument(format!(
                "set_float32_matmul_precision: {name:?} is not one of 'highest', 'high' or 'medium'"
            ))),
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::Highest => 0,
            Self::High => 1,
            Self::Medium => 2,
        }
    }
}

static PRECISION: AtomicU8 = AtomicU8::new(0);

/// The current process-wide setting.
pub fn float32_matmul_precision() -> MatmulPrecision {
    match PRECISION.load(Ordering::Relaxed) {
        1 => MatmulPrecision::High,
        2 => MatmulPrecision::Medium,
        _ => MatmulPrecision::Highest,
    }
}

/// Sets the process-wide setting (every thread sees it from its next float32 product on).
pub fn set_float32_matmul_precision(p: MatmulPrecision) {
    PRECISION.store(p.code(), Ordering::Relaxed);
}

/// Whether this CPU runs "medium" with bfloat16 products: on AMX tiles where it has AMX-BF16
/// (`gemm/amx.rs`), else with `vdpbf16ps` on an AMD CPU with AVX512_BF16 (`gemm/bf16.rs`); where
/// neither, "medium" multiplies exactly. Intel's AVX-512 cores issue `vdpbf16ps` at half the rate
/// of AMD's, no faster than float32 FMAs (NOTE [Why AMX for "medium"]), so an Intel CPU with
/// AVX512_BF16 and no AMX (Cooper Lake) multiplies exactly.
pub fn bf16_products_available() -> bool {
    bf16_kernel_name().is_some()
}

/// The kernel "medium" runs: "amx" or "avx512_bf16", or `None` (exact float32). Decided once per
/// process: every float32 product at "medium" asks, and the vendor check is a CPUID.
pub fn bf16_kernel_name() -> Option<&'static str> {
    static KERNEL: std::sync::OnceLock<Option<&'static str>> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::ops::gemm::amx_available() {
                Some("amx")
            } else if vdpbf16ps_available() && crate::ops::gemm::cpu_vendor() == *b"AuthenticAMD" {
                Some("avx512_bf16")
            } else {
                None
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    })
}

/// Whether the CPU has what the `vdpbf16ps` kernel needs: AVX512_BF16 and the AVX-512F and BW it
/// builds on.
#[cfg(target_arch = "x86_64")]
pub fn vdpbf16ps_available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512bf16")
}

thread_local! {
    /// Depth of `ExactScope`s open on this thread.
    static EXACT: Cell<u32> = const { Cell::new(0) };
}

/// While alive, float32 products started on this thread are exact whatever the setting: the
/// float16 products that compute in float32 use it, since PyTorch's setting concerns float32
/// operands only and bfloat16 products would drop three of float16's bits.
pub struct ExactScope(());

impl ExactScope {
    /// Opens a scope (scopes nest).
    pub fn new() -> Self {
        EXACT.with(|d| d.set(d.get() + 1));
        ExactScope(())
    }
}

impl Default for ExactScope {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ExactScope {
    fn drop(&mut self) {
        EXACT.with(|d| d.set(d.get() - 1));
    }
}

/// Whether a float32 product starting now on this thread should use bfloat16 products: the
/// setting is "medium", no `ExactScope` is open, and the CPU has AVX512_BF16.
pub fn use_bf16_products() -> bool {
    float32_matmul_precision() == MatmulPrecision::Medium && EXACT.with(|d| d.get()) == 0 && bf16_products_available()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for p in [MatmulPrecision::Highest, MatmulPrecision::High, MatmulPrecision::Medium] {
            assert_eq!(MatmulPrecision::parse(p.name()).unwrap(), p);
        }
        for bad in ["low", "HIGH", "", "medium "] {
            assert!(matches!(MatmulPrecision::parse(bad), Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    }
}
