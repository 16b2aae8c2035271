//! Anomaly mode: when on, nodes record where they were created, in-place writes record where they
//! happened, and the engine checks every gradient for NaN.
//!
//! The core cannot see a Python stack, so the binding layer installs a `location hook` that returns
//! the user's current Python location; Rust users get `None`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static ENABLED: AtomicBool = AtomicBool::new(false);
static LOCATION_HOOK: OnceLock<fn() -> Option<String>> = OnceLock::new();

/// Whether anomaly mode is on.
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns anomaly mode on or off; returns the previous value.
pub fn set_enabled(flag: bool) -> bool {
    ENABLED.swap(flag, Ordering::Relaxed)
}

/// Whether anomaly mode also checks gradients for NaN (`detect_anomaly(check_nan=False)` turns
/// only this off; the flag was ignored before, as it is not in PyTorch).
static CHECK_NAN: AtomicBool = AtomicBool::new(true);

/// Turns the NaN check of anomaly mode on or off; returns the previous value.
pub fn set_check_nan(flag: bool) -> bool {
    CHECK_NAN.swap(flag, Ordering::Relaxed)
}

/// Whether the engine checks gradients for NaN: anomaly mode is on with `check_nan`.
pub fn checks_nan() -> bool {
    is_enabled() && CHECK_NAN.load(Ordering::Relaxed)
}

/// Installs the function that tells where the user's code is (once per process).
pub fn set_location_hook(hook: fn() -> Option<String>) {
    let _ = LOCATION_HOOK.set(hook);
}

/// The user's current location, when anomaly mode is on and a hook is installed.
pub fn current_location() -> Option<String> {
    if !is_enabled() {
        return None;
    }
    LOCATION_HOOK.get().and_then(|hook| hook())
}
