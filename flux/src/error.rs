//! [`FluxError`]: every problem found in a Flux file, each with its file, line and column.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where something is in a Flux file: the file, the line and the column (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file (as given to [`load`](crate::load), or an included file).
    pub file: PathBuf,
    /// The line, from 1 (0 when the problem concerns the whole file).
    pub line: usize,
    /// The column, from 1 (0 when unknown).
    pub column: usize,
}

impl Location {
    /// A location in `file` at `line`, `column` (1-based; 0 for unknown).
    pub fn new(file: &Path, line: usize, column: usize) -> Location {
        Location {
            file: file.to_path_buf(),
            line,
            column,
        }
    }

    /// The whole of `file` (no line).
    pub fn file(file: &Path) -> Location {
        Location::new(file, 0, 0)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
            if self.column > 0 {
                write!(f, ":{}", self.column)?;
            }
        }
        Ok(())
    }
}

/// One thing wrong with a Flux file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where it is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl Problem {
    /// A problem at `location`.
    pub fn new(location: Location, message: impl Into<String>) -> Problem {
        Problem {
            location,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// A Flux file that failed to load: one or more [`Problem`]s, each naming the file, the line
/// (and the column where known) and what is wrong.
///
/// Its `Display` is one `file:line:column: message` line per problem, e.g.
///
/// ```text
/// topology.yaml:12:5: bolt "count" is the Java class com.example.CountBolt: heron-rs runs only multi-lang components (org.apache.storm.flux.wrappers.bolts.FluxShellBolt)
/// topology.yaml:30:9: unknown grouping type "PARTIAL_KEY" (expected one of SHUFFLE, FIELDS, ALL, GLOBAL, NONE, LOCAL_OR_SHUFFLE, DIRECT)
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FluxError {
    problems: Vec<Problem>,
}

impl FluxError {
    /// An error of these problems (at least one).
    pub(crate) fn new(problems: Vec<Problem>) -> FluxError {
        debug_assert!(!problems.is_empty());
        FluxError { problems }
    }

    /// An error of one problem.
    pub(crate) fn one(location: Location, message: impl Into<String>) -> FluxError {
        FluxError::new(vec![Problem::new(location, message)])
    }

    /// Every problem found, in file order.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }
}

/// Sorts problems by file, line and column.
pub(crate) fn sort(problems: &mut [Problem]) {
    problems.sort_by(|a, b| {
        let key = |p: &Problem| (p.location.file.clone(), p.location.line, p.location.column);
        key(a).cmp(&key(b))
    });
}

impl From<Vec<Problem>> for FluxError {
    fn from(problems: Vec<Problem>) -> Self {
        FluxError::new(problems)
    }
}

impl fmt::Display for FluxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line_per_problem() {
        let f = Path::new("t.yaml");
        let e = FluxError::new(vec![
            Problem::new(Location::new(f, 3, 7), "first"),
            Problem::new(Location::new(f, 9, 0), "second"),
            Problem::new(Location::file(f), "third"),
        ]);
        assert_eq!(
            e.to_string(),
            "t.yaml:3:7: first\nt.yaml:9: second\nt.yaml: third"
        );
        assert_eq!(e.problems().len(), 3);
    }
}
