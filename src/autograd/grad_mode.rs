//! Grad mode and inference mode: per thread, as in PyTorch. When grad mode is off, or inference
//! mode on, operations record nothing; tensors whose memory is made under inference mode are
//! inference tensors (`Storage::is_inference`), refused by autograd outside it.

use std::cell::Cell;

// Both flags in one thread-local: every operation asks `is_grad_enabled`, and the extension is a
// shared object, where each thread-local access is a call to `__tls_get_addr` (issue 19).
thread_local! {
    static MODES: Cell<u8> = const { Cell::new(GRAD) };
}

/// `MODES`: grad mode on.
const GRAD: u8 = 1;
/// `MODES`: inference mode on.
const INFERENCE: u8 = 2;

/// Sets `bit` of this thread's modes to `flag`; returns its previous value.
fn set_mode(bit: u8, flag: bool) -> bool {
    MODES.with(|m| {
        let old = m.get();
        m.set(if flag { old | bit } else { old & !bit });
        old & bit != 0
    })
}

/// Whether operations on this thread record history: grad mode on and inference mode off (under
/// inference mode, `enable_grad` turns the flag on but nothing is recorded, as in PyTorch).
pub fn is_grad_enabled() -> bool {
    MODES.with(Cell::get) == GRAD
}

/// The grad-mode flag itself, as `tg.is_grad_enabled()` reports it.
pub fn grad_mode_flag() -> bool {
    MODES.with(Cell::get) & GRAD != 0
}

/// Whether inference mode is on on this thread.
pub fn is_inference_mode_enabled() -> bool {
    MODES.with(Cell::get) & INFERENCE != 0
}

/// Sets inference mode on this thread; returns the previous value.
pub fn set_inference_mode(flag: bool) -> bool {
    set_mode(INFERENCE, flag)
}

/// The message for an inference tensor written in place outside inference mode.
pub const INFERENCE_INPLACE: &str = "Inplace update to inference tensor outside InferenceMode is not allowed. You can \
    make a clone to get a normal tensor before doing inplace update.";

/// The message for an inference tensor saved for backward.
pub const INFERENCE_SAVED: &str = "Inference tensors cannot be saved for backward. Please do not use Tensors created \
    in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal \
    tensor and use it in autograd, or use `tapegrad.no_grad()` instead of `tapegrad.inference_mode()`.";

/// Sets grad mode on this thread; returns the previous value.
pub fn set_grad_enabled(flag: bool) -> bool {
    set_mode(GRAD, flag)
}

/// Sets grad mode for a scope and restores the previous value on drop (also on error or panic).
pub struct GradModeGuard {
    prev: bool,
}

impl GradModeGuard {
    /// Enters a scope with grad mode `flag`.
    pub fn new(flag: bool) -> Self {
        GradModeGuard { prev: set_grad_enabled(flag) }
    }
    /// `no_grad`.
    pub fn no_grad() -> Self {
        Self::new(false)
    }
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.prev);
    }
}
