//! Allocator settings for the long-running roles.
//!
//! The data path hands `Bytes` buffers of 32–128 KiB between threads and tasks. With glibc's
//! defaults such buffers come from the heap once the dynamic mmap threshold has grown, and a
//! daemon's resident size then creeps up to several times what it holds (measured: a stream
//! manager holding about 30 MB of backlog at 190 MB RSS). A fixed mmap threshold returns big
//! buffers to the system when they are freed, and two arenas keep per-thread heaps from
//! multiplying; with both a stream manager stays within 25–50 MB under the same load.

/// Buffers at least this large are mapped and unmapped on their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 64 * 1024;

/// Most malloc arenas (glibc's default is 8 per core).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENA_MAX: libc::c_int = 2;

/// Applies the settings above, unless the user set glibc's own environment variables for
/// them (which then win). A no-op on other platforms.
pub(crate) fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            // SAFETY: mallopt only changes allocator parameters; called before other threads start.
            unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
        }
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            // SAFETY: as above.
            unsafe { libc::mallopt(libc::M_ARENA_MAX, ARENA_MAX) };
        }
    }
}
