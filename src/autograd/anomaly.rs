//! Anomaly mode: when on, nodes record where they were created, in-place writes record where they
//! happened, and the engine checks every gradient for NaN.
//!
//! A node created while another node's backward runs remembers that node's lineage, and a failing
//! backward is reported, through a warning hook, with where the node and its ancestors were created.
//!
//! The core cannot see a Python stack, so the binding layer installs a `location hook` that returns
//! the user's current Python location and a `warning hook` that shows a warning; Rust users get
//! `None` and no warnings.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

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

/// Where a node came from, under anomaly mode: its name, where the user's code created it, and,
/// when it was created while another node's backward ran (a double backward, a custom backward
/// that records), that node's own lineage.
#[derive(Debug)]
pub struct Lineage {
    /// The node's name (`MulBackward`).
    pub name: String,
    /// The user's location when the node was created.
    pub created_at: Option<String>,
    /// The lineage of the node whose backward was running when this one was created.
    pub parent: Option<Arc<Lineage>>,
}

thread_local! {
    /// The lineages of the nodes whose backward runs on this thread, innermost last.
    static RUNNING: RefCell<Vec<Arc<Lineage>>> = const { RefCell::new(Vec::new()) };
}

/// Marks a node's backward as running on this thread until dropped.
pub(crate) struct RunningNode(());

impl Drop for RunningNode {
    fn drop(&mut self) {
        RUNNING.with(|r| r.borrow_mut().pop());
    }
}

/// Under anomaly mode, records that the backward of the node described by `lineage` runs on this
/// thread, so that nodes created meanwhile know their parent.
pub(crate) fn enter(lineage: Arc<Lineage>) -> RunningNode {
    RUNNING.with(|r| r.borrow_mut().push(lineage));
    RunningNode(())
}

/// The lineage of the node whose backward runs on this thread, when anomaly mode is on.
pub(crate) fn current_parent() -> Option<Arc<Lineage>> {
    if !is_enabled() {
        return None;
    }
    RUNNING.with(|r| r.borrow().last().cloned())
}

static WARNING_HOOK: OnceLock<fn(&str)> = OnceLock::new();

/// Installs the function that shows a warning to the user (once per process); without one,
/// warnings go nowhere.
pub fn set_warning_hook(hook: fn(&str)) {
    let _ = WARNING_HOOK.set(hook);
}

const NO_FORWARD_INFO: &str =
    "No forward pass information available. Enable detect anomaly during forward pass for more information.";

/// The warnings that report a failure in the backward of the node `name` (created at
/// `created_at`, below `parent`): one for the node, then one for each node whose backward created
/// the previous one.
pub fn failure_report(name: &str, created_at: Option<&str>, parent: Option<&Arc<Lineage>>) -> Vec<String> {
    let mut out = vec![match created_at {
        Some(at) => format!("Error detected in {name}. Traceback of forward call that caused the error:\n{at}"),
        None => format!("Error detected in {name}. {NO_FORWARD_INFO}"),
    }];
    let mut next = parent;
    while let Some(p) = next {
        out.push(match &p.created_at {
            Some(at) => format!(
                "\n\nPrevious calculation was induced by {}. Traceback of forward call that induced the previous \
                 calculation:\n{at}",
                p.name
            ),
            None => format!("\n\nPrevious calculation was induced by {}. {NO_FORWARD_INFO}", p.name),
        });
        next = p.parent.as_ref();
    }
    out
}

/// Under anomaly mode, warns the user that the backward of the node `name` failed, with where it
/// and its ancestors were created (see `failure_report`).
pub(crate) fn warn_failure(name: &str, created_at: Option<&str>, parent: Option<&Arc<Lineage>>) {
    if !is_enabled() {
        return;
    }
    if let Some(hook) = WARNING_HOOK.get() {
        for message in failure_report(name, created_at, parent) {
            hook(&message);
        }
    }
}
