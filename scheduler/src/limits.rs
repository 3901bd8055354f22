//! The largest packet each daemon accepts on its connections, from the topology's config
//! with Heron's keys and defaults (`shared/reference/heron.md` §1.1). A packet over the limit
//! closes the connection it came on, and only that one. Heron reads 0 as "unlimited"; that is
//! refused here, as is anything that is not a whole number: no peer may make a daemon buffer
//! without bound.

/// The stream manager's limit, MiB (Heron's default 10).
pub const STMGR_KEY: &str = "heron.streammgr.network.options.maximum.packet.mb";
/// The tmaster's server port limit, MiB (Heron's default 16).
pub const TMASTER_KEY: &str = "heron.tmanager.network.server.options.maximum.packet.mb";
/// The instance's limit on what its stream manager sends, bytes (Heron's default 10485760).
pub const INSTANCE_KEY: &str = "heron.instance.network.options.maximum.packetsize.bytes";
/// The checkpoint manager's limit, bytes (ours; Heron's checkpoint manager takes 10 MiB).
pub const CKPTMGR_KEY: &str = "heron.ckptmgr.network.options.maximum.packetsize.bytes";

const MIB: usize = 1024 * 1024;
/// The largest limit taken: 1 GiB (a packet's size is a 32-bit field).
const MAX_LIMIT: usize = 1024 * MIB;
/// The smallest: 1 KiB (a registration must fit).
const MIN_LIMIT: usize = 1024;

/// The largest packet, in bytes, each daemon accepts.
///
/// ```
/// use heron_scheduler::limits::{PacketLimits, STMGR_KEY};
/// let defaults = PacketLimits::from_config(|_| None).unwrap();
/// assert_eq!(defaults.stmgr, 10 * 1024 * 1024);
/// assert_eq!(defaults.tmaster, 16 * 1024 * 1024);
/// let small = PacketLimits::from_config(|k| (k == STMGR_KEY).then_some("2")).unwrap();
/// assert_eq!(small.stmgr, 2 * 1024 * 1024);
/// let e = PacketLimits::from_config(|k| (k == STMGR_KEY).then_some("0")).unwrap_err();
/// assert!(e.contains(STMGR_KEY), "{e}");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketLimits {
    /// The stream manager: from instances and from other stream managers.
    pub stmgr: usize,
    /// The tmaster's server port: from stream managers.
    pub tmaster: usize,
    /// An instance: from its stream manager.
    pub instance: usize,
    /// The checkpoint manager: from the tmaster and the stream manager.
    pub ckptmgr: usize,
}

impl Default for PacketLimits {
    fn default() -> PacketLimits {
        PacketLimits {
            stmgr: 10 * MIB,
            tmaster: 16 * MIB,
            instance: 10 * MIB,
            ckptmgr: 10 * MIB,
        }
    }
}

impl PacketLimits {
    /// The limits a config gives (`get` looks a key up), Heron's defaults for keys it lacks;
    /// the error names the key and the value refused.
    pub fn from_config<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<PacketLimits, String> {
        let d = PacketLimits::default();
        let read = |key: &str, unit: usize, default: usize| -> Result<usize, String> {
            let Some(v) = get(key) else {
                return Ok(default);
            };
            let bytes = v
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_mul(unit))
                .filter(|b| (MIN_LIMIT..=MAX_LIMIT).contains(b));
            bytes.ok_or_else(|| {
                let what = if unit == MIB { "MiB" } else { "bytes" };
                format!(
                    "{key} must be a whole number of {what} from 1 KiB to 1 GiB (0, unlimited, \
                     is not offered), not {v:?}"
                )
            })
        };
        Ok(PacketLimits {
            stmgr: read(STMGR_KEY, MIB, d.stmgr)?,
            tmaster: read(TMASTER_KEY, MIB, d.tmaster)?,
            instance: read(INSTANCE_KEY, 1, d.instance)?,
            ckptmgr: read(CKPTMGR_KEY, 1, d.ckptmgr)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(key: &'static str, v: &'static str) -> Result<PacketLimits, String> {
        PacketLimits::from_config(move |k| (k == key).then_some(v))
    }

    #[test]
    fn each_key_sets_its_daemon_in_its_unit() {
        assert_eq!(with(STMGR_KEY, "3").unwrap().stmgr, 3 * MIB);
        assert_eq!(with(TMASTER_KEY, " 4 ").unwrap().tmaster, 4 * MIB);
        assert_eq!(with(INSTANCE_KEY, "65536").unwrap().instance, 65536);
        assert_eq!(with(CKPTMGR_KEY, "2048").unwrap().ckptmgr, 2048);
        assert_eq!(
            with(STMGR_KEY, "3").unwrap().tmaster,
            16 * MIB,
            "others keep defaults"
        );
    }

    #[test]
    fn unlimited_tiny_huge_and_garbage_are_refused_naming_the_key() {
        for (key, v) in [
            (STMGR_KEY, "0"),
            (STMGR_KEY, "1025"),
            (STMGR_KEY, "-1"),
            (TMASTER_KEY, "ten"),
            (INSTANCE_KEY, "100"),
            (CKPTMGR_KEY, "0"),
            (INSTANCE_KEY, "99999999999999999999999"),
        ] {
            let e = with(key, v).unwrap_err();
            assert!(e.contains(key) && e.contains(v), "{e}");
        }
    }
}
