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

/// Makes sentences of [`WORDS_PER_SENTENCE`] words drawn from [`WORDS`] with a xorshift
/// generator: cheap and deterministic for a given seed.
#[derive(Clone, Debug)]
pub struct Sentences {
    state: u64,
}

impl Sentences {
    /// A generator for this seed (any value; zero is replaced, xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Sentences {
        Sentences {
            state: 0x9E37_79B9_7F4A_7C15 ^ seed,
        }
        .nonzero()
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

    fn next_word(&mut self) -> &'static str {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        WORDS[(self.state % WORDS.len() as u64) as usize]
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
}
