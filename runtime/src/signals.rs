//! Ctrl-C for examples: a flag set by SIGINT/SIGTERM, so `main` can stop its loop and kill
//! its topology (through [`crate::LocalTopology`]'s `kill` or `Drop`) instead of dying with
//! the topology still running. A second signal exits at once (code 130).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(_signal: libc::c_int) {
    if let Some(flag) = FLAG.get() {
        if flag.swap(true, Ordering::SeqCst) {
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(130) };
        }
    }
}

/// A flag that becomes `true` on the first SIGINT or SIGTERM. Installs the handlers on the
/// first call; every call returns the same flag.
pub fn ctrl_c_flag() -> Arc<AtomicBool> {
    let mut installed = false;
    let flag = FLAG.get_or_init(|| {
        installed = true;
        Arc::new(AtomicBool::new(false))
    });
    if installed {
        heron_scheduler::process::on_termination_signals(on_signal);
    }
    flag.clone()
}
