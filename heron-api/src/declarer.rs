//! Declaring a component's output streams.

use crate::tuple::DEFAULT_STREAM_ID;
use crate::Fields;

/// One declared output stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDecl {
    /// The stream id.
    pub id: String,
    /// The field names.
    pub fields: Fields,
    /// `true` when tuples are sent with `emit_direct` only and consumed with a direct grouping.
    pub direct: bool,
}

/// Collects the streams a component declares in `declare_output_fields`.
///
/// ```
/// use heron_api::{Fields, OutputFieldsDeclarer};
/// let mut d = OutputFieldsDeclarer::new();
/// d.declare(Fields::new(["word"]));
/// d.declare_direct_stream("control", Fields::new(["cmd"]));
/// assert_eq!(d.streams()[0].id, "default");
/// assert!(d.streams()[1].direct);
/// assert_eq!(d.get("control").unwrap().fields.len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct OutputFieldsDeclarer {
    streams: Vec<StreamDecl>,
}

impl OutputFieldsDeclarer {
    /// An empty declarer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares the `default` stream.
    pub fn declare(&mut self, fields: impl Into<Fields>) {
        self.push(DEFAULT_STREAM_ID, fields.into(), false);
    }

    /// Declares a named stream.
    pub fn declare_stream(&mut self, stream: &str, fields: impl Into<Fields>) {
        self.push(stream, fields.into(), false);
    }

    /// Declares the `default` stream as direct.
    pub fn declare_direct(&mut self, fields: impl Into<Fields>) {
        self.push(DEFAULT_STREAM_ID, fields.into(), true);
    }

    /// Declares a named direct stream.
    pub fn declare_direct_stream(&mut self, stream: &str, fields: impl Into<Fields>) {
        self.push(stream, fields.into(), true);
    }

    fn push(&mut self, id: &str, fields: Fields, direct: bool) {
        // Duplicates are kept so that `TopologyBuilder::build` can name them.
        self.streams.push(StreamDecl {
            id: id.to_owned(),
            fields,
            direct,
        });
    }

    /// The declared streams, in declaration order.
    pub fn streams(&self) -> &[StreamDecl] {
        &self.streams
    }

    /// The first declaration of `stream`.
    pub fn get(&self, stream: &str) -> Option<&StreamDecl> {
        self.streams.iter().find(|s| s.id == stream)
    }

    /// Takes the declared streams.
    pub fn into_streams(self) -> Vec<StreamDecl> {
        self.streams
    }
}
