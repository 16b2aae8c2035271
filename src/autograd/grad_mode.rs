//! Grad mode and inference mode: per thread, as in PyTorch. When grad mode is off, or inference
//! mode on, operations record nothing; tensors whose memory is made under inference mode are
//! inference tensors (`Storage::is_inference`), refused by autograd outside it.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Whether operations on this thread record history: grad mode on and inference mode off (under
/// inference mode, `enable_grad` turns the flag on but nothing is recorded, as in PyTorch).
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get()) && !is_inference_mode_enabled()
}

/// The grad-mode flag itself, as `tg.is_grad_enabled()` reports it.
pub fn grad_mode_flag() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Whether inference mode is on on this thread.
pub fn is_inference_mode_enabled() -> bool {
    INFERENCE.with(|g| g.get())
}

/// Sets inference mode on this thread; returns the previous value.
pub fn set_inference_mode(flag: bool) -> bool {
    INFERENCE.with(|g| g.replace(flag))
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
    GRAD_ENABLED.with(|g| g.replace(flag))
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
