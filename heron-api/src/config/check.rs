//! The checks [`TopologyBuilder::build`](crate::TopologyBuilder::build) makes of the keys the
//! runtime reads: a value that does not parse, or is out of range, is refused naming the key,
//! rather than silently read as the default (an unknown reliability mode would otherwise run
//! the topology at most once).

use super::*;
use crate::TopologyError;

/// A year: the longest message timeout taken (a deadline past it would not fit a clock).
const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;

fn bad(key: &str, value: &str, expected: &'static str) -> TopologyError {
    TopologyError::InvalidConfig {
        key: key.to_owned(),
        value: value.to_owned(),
        expected,
    }
}

fn whole(
    c: &Config,
    key: &str,
    range: std::ops::RangeInclusive<u64>,
    expected: &'static str,
) -> Result<(), TopologyError> {
    match c.get(key) {
        Some(v) if !v.trim().parse::<u64>().is_ok_and(|n| range.contains(&n)) => {
            Err(bad(key, v, expected))
        }
        _ => Ok(()),
    }
}

fn boolean(c: &Config, key: &str) -> Result<(), TopologyError> {
    match c.get(key) {
        Some(v) if c.get_bool(key).is_none() => Err(bad(key, v, "true or false")),
        _ => Ok(()),
    }
}

impl Config {
    /// Checks the values of the keys the runtime reads (see the module docs).
    ///
    /// ```
    /// use heron_api::Config;
    /// let mut c = Config::new();
    /// c.set(Config::TOPOLOGY_RELIABILITY_MODE, "EXACTLY_ONCE");
    /// let e = c.check().unwrap_err().to_string();
    /// assert!(e.contains("topology.reliability.mode") && e.contains("EXACTLY_ONCE"), "{e}");
    /// assert!(Config::new().check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), TopologyError> {
        if let Some(v) = self.get(TOPOLOGY_RELIABILITY_MODE) {
            if v.parse::<ReliabilityMode>().is_err() {
                return Err(bad(
                    TOPOLOGY_RELIABILITY_MODE,
                    v,
                    "ATMOST_ONCE, ATLEAST_ONCE or EFFECTIVELY_ONCE",
                ));
            }
        }
        whole(
            self,
            TOPOLOGY_MESSAGE_TIMEOUT_SECS,
            1..=MAX_TIMEOUT_SECS,
            "whole seconds from 1 to a year (31536000)",
        )?;
        whole(
            self,
            TOPOLOGY_MAX_SPOUT_PENDING,
            0..=u64::MAX,
            "a whole number of tuples (0: no limit)",
        )?;
        whole(
            self,
            TOPOLOGY_STMGRS,
            1..=u64::from(u32::MAX),
            "a whole number of containers, at least 1",
        )?;
        whole(
            self,
            TOPOLOGY_TICK_TUPLE_FREQ_MS,
            0..=MAX_TIMEOUT_SECS * 1000,
            "whole milliseconds up to a year (0: no tick tuples)",
        )?;
        whole(
            self,
            TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS,
            1..=MAX_TIMEOUT_SECS,
            "whole seconds from 1 to a year",
        )?;
        for key in [
            TOPOLOGY_ACKING,
            TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS,
            TOPOLOGY_DEBUG,
            TOPOLOGY_STATEFUL_START_CLEAN,
        ] {
            boolean(self, key)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(key: &str, value: &str) -> Result<(), TopologyError> {
        let mut c = Config::new();
        c.set(key, value);
        c.check()
    }

    #[test]
    fn values_that_do_not_parse_or_are_out_of_range_are_refused_naming_the_key() {
        for (key, value) in [
            (TOPOLOGY_RELIABILITY_MODE, "EXACTLY_ONCE"),
            (TOPOLOGY_MESSAGE_TIMEOUT_SECS, "ten"),
            (TOPOLOGY_MESSAGE_TIMEOUT_SECS, "0"),
            (TOPOLOGY_MESSAGE_TIMEOUT_SECS, "18446744073709551615"),
            (TOPOLOGY_MAX_SPOUT_PENDING, "-1"),
            (TOPOLOGY_STMGRS, "0"),
            (TOPOLOGY_TICK_TUPLE_FREQ_MS, "soon"),
            (TOPOLOGY_STATEFUL_CHECKPOINT_INTERVAL_SECONDS, "0"),
            (TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, "yes"),
            (TOPOLOGY_DEBUG, "1"),
        ] {
            let e = with(key, value).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(value), "{e}");
        }
    }

    #[test]
    fn good_values_pass() {
        for (key, value) in [
            (TOPOLOGY_RELIABILITY_MODE, "effectively_once"),
            (TOPOLOGY_MESSAGE_TIMEOUT_SECS, " 30 "),
            (TOPOLOGY_MAX_SPOUT_PENDING, "0"),
            (TOPOLOGY_STMGRS, "3"),
            (TOPOLOGY_TICK_TUPLE_FREQ_MS, "0"),
            (TOPOLOGY_ENABLE_MESSAGE_TIMEOUTS, "FALSE"),
            (TOPOLOGY_DEBUG, "true"),
            ("topology.anything.else", "whatever"),
        ] {
            assert_eq!(with(key, value), Ok(()), "{key}={value}");
        }
    }
}
