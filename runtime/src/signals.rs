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
        let handler: extern "C" fn(libc::c_int) = on_signal;
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction with our handler and an empty mask is valid; the
            // handler only touches an initialized atomic and may call _exit.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = libc::SA_RESTART;
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    }
    flag.clone()
}
