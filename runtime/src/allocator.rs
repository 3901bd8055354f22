//! Allocator settings for the long-running roles.
//!
//! The data path hands `Bytes` buffers between threads and tasks, from 32–128 KiB reads up to
//! rounds of several MB. With glibc's defaults the dynamic mmap threshold grows up to 32 MB,
//! the large buffers then come from the heap, and a daemon's resident size creeps up to
//! several times what it holds (measured: a stream manager holding about 30 MB of backlog at
//! 190 MB RSS). A fixed 1 MiB threshold returns the large buffers to the system when they are
//! freed while read-sized buffers stay on the heap (a 64 KiB threshold cost a page-faulting
//! mmap per socket read), and two arenas keep per-thread heaps from multiplying.

/// Buffers at least this large are mapped and unmapped on their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 1024 * 1024;

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
