//! The executor's SIGTERM/SIGINT handling: a flag the supervise loop polls.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// Installs handlers for SIGTERM and SIGINT that set the returned flag.
pub fn termination_flag() -> &'static AtomicBool {
    crate::process::on_termination_signals(on_signal);
    &STOP
}
