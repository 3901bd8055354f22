//! The processes a peer run starts (`timely_peer`, `relay_peer`): each dies with the bench,
//! and the set is killed and reaped when the driver is done with it.

use std::process::{Child, Command};

/// Started processes, killed (if still running) and reaped on drop.
#[derive(Default)]
pub struct Children(pub Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// Makes the process `cmd` starts receive SIGKILL when the bench dies.
pub fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl is async-signal-safe, and the closure touches nothing else.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

/// A loopback port free right now.
pub fn free_loopback_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
