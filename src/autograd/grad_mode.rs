//! Grad mode and inference mode: per thread, as in PyTorch. When grad mode is off, or inference
//! mode on, operations record nothing; tensors whose memory is made under inference mode are
//! inference tensors (`Storage::is_inference`), refused by autograd outside it.

use std::cell::Cell;

// Both flags in one thread-local: every operation asks `is_grad_enabled` (and every new storage
// whether inference mode is on), and the extension is a shared object, where each thread-local
// access is a call to `__tls_get_addr` (issue 19). Better still, `NOT_DEFAULT` counts the threads
// whose modes are not the default (grad mode on, inference mode off): while it is zero, as in a
// forward pass outside `no_grad`, the answer needs no thread-local at all. A thread's own changes
// reach the count before it next reads it (one atomic, program order), so a thread that left the
// default always finds the count above zero; other threads' only send it to its thread-local.
thread_local! {
    static MODES: Cell<u8> = const { Cell::new(GRAD) };
}

/// How many threads have modes other than the default.
static NOT_DEFAULT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// True when no thread has left the default modes (then this one has not either).
fn all_default() -> bool {
    NOT_DEFAULT.load(std::sync::atomic::Ordering::Relaxed) == 0
}

/// `MODES`: grad mode on.
const GRAD: u8 = 1;
/// `MODES`: inference mode on.
const INFERENCE: u8 = 2;

/// Sets `bit` of this thread's modes to `flag`; returns its previous value.
fn set_mode(bit: u8, flag: bool) -> bool {
    MODES.with(|m| {
        let old = m.get();
        let new = if flag { old | bit } else { old & !bit };
        m.set(new);
        match (old == GRAD, new == GRAD) {
            (true, false) => _ = NOT_DEFAULT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            (false, true) => _ = NOT_DEFAULT.fetch_sub(1, std::sync::atomic::Ordering::Relaxed),
            _ => {}
        }
        old & bit != 0
    })
}

/// Whether operations on this thread record history: grad mode on and inference mode off (under
/// inference mode, `enable_grad` turns the flag on but nothing is recorded, as in PyTorch).
pub fn is_grad_enabled() -> bool {
    all_default() || MODES.with(Cell::get) == GRAD
}

/// The grad-mode flag itself, as `tg.is_grad_enabled()` reports it.
pub fn grad_mode_flag() -> bool {
    all_default() || MODES.with(Cell::get) & GRAD != 0
}

/// Whether inference mode is on on this thread.
pub fn is_inference_mode_enabled() -> bool {
    !all_default() && MODES.with(Cell::get) & INFERENCE != 0
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
