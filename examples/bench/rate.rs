//! A cheap token bucket for `--rate`: a spout task emits only while it has a token.

/// Tokens refill continuously at `per_sec`; at most `burst` accumulate (a few ms' worth), so
/// a spout that was held back does not catch up in one big burst.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    per_ns: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    /// A bucket for `per_sec` tokens a second, starting full.
    pub fn new(per_sec: f64, now_ns: u64) -> TokenBucket {
        let burst = (per_sec * 0.005).max(1.0);
        TokenBucket {
            per_ns: per_sec / 1e9,
            burst,
            tokens: burst,
            last_ns: now_ns,
        }
    }

    /// Takes a token if there is one.
    pub fn take(&mut self, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = now_ns;
        self.tokens = (self.tokens + dt as f64 * self.per_ns).min(self.burst);
        if self.tokens < 1.0 {
            return false;
        }
        self.tokens -= 1.0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_capped() {
        let mut b = TokenBucket::new(1000.0, 0);
        // one simulated second, polled every 10 µs
        let taken = (0..100_000u64).filter(|i| b.take(i * 10_000)).count();
        assert!((990..=1010).contains(&taken), "{taken}");
    }
}
