//! Grad mode: per thread, as in PyTorch. When off, operations record nothing.

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether operations on this thread record history.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

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
