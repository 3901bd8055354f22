//! Heron's Streamlet API: topologies as chains of functional operations on typed streams,
//! compiled to ordinary spouts and bolts (one component per operation, visible as such in the
//! physical plan and the tracker).
//!
//! ```
//! use heron_api::window::{Length, WindowConfig};
//! use heron_api::Config;
//! use heron_streamlet::Builder;
//!
//! let builder = Builder::new();
//! builder
//!     .new_source(|| "to be or not to be".to_string())
//!     .flat_map(|line: String| line.split(' ').map(str::to_owned).collect::<Vec<_>>())
//!     .set_num_partitions(2)
//!     .count_by_key_and_window(|w: &String| w.clone(), WindowConfig::tumbling(Length::count(500)))
//!     .set_num_partitions(2)
//!     .consume(|kv| println!("{} {}", kv.key.key, kv.value));
//! let topology = builder.build("WordCount", Config::new()).unwrap();
//! # let _ = topology;
//! ```
//!
//! - Sources: [`Builder::new_source`] (a supplier called for each element) and
//!   [`Builder::new_source_spout`] (any spout; its tuples' first values are the elements).
//! - Element-wise: [`map`](Streamlet::map), [`filter`](Streamlet::filter),
//!   [`flat_map`](Streamlet::flat_map), [`key_by`](Streamlet::key_by),
//!   [`transform`](Streamlet::transform), [`union`](Streamlet::union),
//!   [`clone_into`](Streamlet::clone_into), [`repartition`](Streamlet::repartition).
//! - Windowed, partitioned by key (a hash the producing stage computes, carried in a `key`
//!   field and read with a fields grouping): [`reduce_by_key_and_window`](Streamlet::reduce_by_key_and_window),
//!   [`count_by_key_and_window`](Streamlet::count_by_key_and_window),
//!   [`join`](Streamlet::join) (inner, outer left, outer right, outer) over
//!   [`heron_api::window::WindowConfig`] windows.
//! - Ends: [`to_sink`](Streamlet::to_sink), [`consume`](Streamlet::consume),
//!   [`log`](Streamlet::log).
//! - Per stage: [`set_name`](Streamlet::set_name) (the component's name; default
//!   `<operation><index>`) and [`set_num_partitions`](Streamlet::set_num_partitions) (its
//!   parallelism; default 1).
//! - Elements travel as one tuple field each, encoded as [`element`] describes. In
//!   ATLEAST_ONCE every stage anchors what it emits to its input and acks it; supplier
//!   sources track their elements (a failed one is not replayed: a supplier has no position).

pub mod element;
mod graph;
mod ops;
mod tumbling;
mod window_ops;
pub mod wire;

pub use graph::{Builder, Element, Key, Streamlet, WINDOW_RESULTS_LINGER_MS};
pub use ops::{Sink, Transformer, ELEMENT_FIELD};
pub use window_ops::{JoinType, KeyValue, KeyedWindow, WindowInfo};

#[cfg(test)]
mod graph_tests;
