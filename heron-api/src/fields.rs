//! The names of a stream's values.

use std::fmt;

/// The ordered field names of a stream, as declared in
/// [`declare_output_fields`](crate::Bolt::declare_output_fields).
///
/// ```
/// use heron_api::Fields;
/// let f = Fields::new(["word", "count"]);
/// assert_eq!(f.len(), 2);
/// assert_eq!(f.index_of("count"), Some(1));
/// assert_eq!(f.get(0), Some("word"));
/// assert_eq!(f.iter().collect::<Vec<_>>(), ["word", "count"]);
/// assert_eq!(Fields::from(vec!["a"]).len(), 1);
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Fields {
    names: Vec<String>,
}

impl Fields {
    /// Fields with these names, in order.
    pub fn new<I, S>(names: I) -> Fields
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Fields {
            names: names.into_iter().map(Into::into).collect(),
        }
    }

    /// No fields.
    pub fn empty() -> Fields {
        Fields::default()
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// `true` when there are no fields.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The position of `name`, if it is one of the fields.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// `true` when `name` is one of the fields.
    pub fn contains(&self, name: &str) -> bool {
        self.index_of(name).is_some()
    }

    /// The name at position `i`.
    pub fn get(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }

    /// The names, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.names.iter().map(String::as_str)
    }

    /// The names as a slice.
    pub fn as_slice(&self) -> &[String] {
        &self.names
    }
}

impl fmt::Debug for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names.iter()).finish()
    }
}

impl fmt::Display for Fields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.names.join(", "))
    }
}

impl From<Vec<&str>> for Fields {
    fn from(v: Vec<&str>) -> Fields {
        Fields::new(v)
    }
}

impl From<Vec<String>> for Fields {
    fn from(names: Vec<String>) -> Fields {
        Fields { names }
    }
}

impl From<&[&str]> for Fields {
    fn from(v: &[&str]) -> Fields {
        Fields::new(v.iter().copied())
    }
}

impl<const N: usize> From<[&str; N]> for Fields {
    fn from(v: [&str; N]) -> Fields {
        Fields::new(v)
    }
}

impl<'a> IntoIterator for &'a Fields {
    type Item = &'a str;
    type IntoIter = std::iter::Map<std::slice::Iter<'a, String>, fn(&String) -> &str>;
    fn into_iter(self) -> Self::IntoIter {
        self.names.iter().map(String::as_str as fn(&String) -> &str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup() {
        let f = Fields::new(["a", "b", "c"]);
        assert_eq!(f.index_of("a"), Some(0));
        assert_eq!(f.index_of("c"), Some(2));
        assert_eq!(f.index_of("d"), None);
        assert!(f.contains("b"));
        assert_eq!(f.get(3), None);
        assert!(!f.is_empty());
        assert!(Fields::empty().is_empty());
        assert_eq!(f.to_string(), "[a, b, c]");
        let names: Vec<&str> = (&f).into_iter().collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(
            Fields::from(&["x"][..]),
            Fields::from(vec![String::from("x")])
        );
    }
}
