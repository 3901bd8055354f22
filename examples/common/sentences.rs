//! The word-count workload: one vocabulary and one sentence generator, shared by
//! `examples/word_count.rs`, the bench's word-count topology and its timely peer, so their
//! figures count the same words.
#![allow(dead_code)] // each example uses a part

/// The vocabulary sentences are drawn from.
pub const WORDS: &[&str] = &[
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
    "four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs", "i", "am", "at",
    "two", "with", "nature", "stream", "bolt", "spout", "heron", "storm",
];

/// Words per sentence.
pub const WORDS_PER_SENTENCE: usize = 8;

/// The first `n` words of the vocabulary of size `n`: [`WORDS`] for `n` up to its length;
/// beyond it, [`WORDS`] again with numeric suffixes (`cow1`, `moon1`, ..., `cow2`, ...), so
/// a larger vocabulary keeps the same word lengths.
pub fn vocabulary(n: usize) -> Vec<String> {
    (0..n.max(1))
        .map(|i| {
            let base = WORDS[i % WORDS.len()];
            match i / WORDS.len() {
                0 => base.to_string(),
                k => format!("{base}{k}"),
            }
        })
        .collect()
}

/// Makes sentences of [`WORDS_PER_SENTENCE`] words drawn from a vocabulary ([`WORDS`] unless
/// [`Sentences::with_vocabulary`] says otherwise) with a xorshift generator: cheap and
/// deterministic for a given seed.
#[derive(Clone, Debug)]
pub struct Sentences {
    state: u64,
    /// `None`: [`WORDS`].
    words: Option<Vec<String>>,
}

impl Sentences {
    /// A generator for this seed (any value; zero is replaced, xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Sentences {
        Sentences {
            state: 0x9E37_79B9_7F4A_7C15 ^ seed,
            words: None,
        }
        .nonzero()
    }

    /// A generator for this seed drawing from [`vocabulary`]`(n)`.
    pub fn with_vocabulary(seed: u64, n: usize) -> Sentences {
        let mut s = Sentences::new(seed);
        if n != WORDS.len() {
            s.words = Some(vocabulary(n));
        }
        s
    }

    /// A generator seeded from this process's id, so every task draws its own sentences.
    pub fn per_process() -> Sentences {
        Sentences::new(u64::from(std::process::id()))
    }

    fn nonzero(mut self) -> Sentences {
        if self.state == 0 {
            self.state = 0x2545_F491_4F6C_DD1D;
        }
        self
    }

    fn next_word(&mut self) -> &str {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        match &self.words {
            None => WORDS[(self.state % WORDS.len() as u64) as usize],
            Some(words) => &words[(self.state % words.len() as u64) as usize],
        }
    }

    /// The next sentence.
    pub fn next_sentence(&mut self) -> String {
        let mut sentence = String::with_capacity(64);
        self.next_into(&mut sentence);
        sentence
    }

    /// Appends the next sentence (words separated by single spaces) to `out`.
    pub fn next_into(&mut self, out: &mut String) {
        for i in 0..WORDS_PER_SENTENCE {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(self.next_word());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_have_eight_vocabulary_words() {
        let mut s = Sentences::new(7);
        for _ in 0..100 {
            let sentence = s.next_sentence();
            let words: Vec<&str> = sentence.split(' ').collect();
            assert_eq!(words.len(), WORDS_PER_SENTENCE);
            assert!(words.iter().all(|w| WORDS.contains(w)));
        }
        assert_eq!(
            Sentences::new(7).next_sentence(),
            Sentences::new(7).next_sentence()
        );
    }

    #[test]
    fn a_larger_vocabulary_is_drawn_from_evenly() {
        let v = vocabulary(10_000);
        assert_eq!(v.len(), 10_000);
        assert_eq!(v[0], "the");
        assert_eq!(v[WORDS.len()], "the1");
        let distinct: std::collections::HashSet<&String> = v.iter().collect();
        assert_eq!(distinct.len(), 10_000, "no duplicates");
        let mut s = Sentences::with_vocabulary(3, 10_000);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..20_000 {
            for w in s.next_sentence().split(' ') {
                assert!(distinct.contains(&w.to_string()));
                seen.insert(w.to_string());
            }
        }
        assert!(seen.len() > 9_000, "{} distinct words drawn", seen.len());
        assert_eq!(
            vocabulary(32),
            WORDS.iter().map(|w| w.to_string()).collect::<Vec<_>>()
        );
    }
}
