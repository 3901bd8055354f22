//! A task's event-time watermark: the minimum over its input tasks of the largest watermark
//! each has sent (Flink's rule). Watermarks travel in-band, on the `__watermark` stream, so a
//! task sees them in the same order as the data they follow.

use std::collections::BTreeMap;

/// The stream that carries watermarks (one field, [`WATERMARK_FIELD`], milliseconds).
pub const WATERMARK_STREAM_ID: &str = "__watermark";
/// The watermark stream's one field.
pub const WATERMARK_FIELD: &str = "watermark";

/// Tracks the watermark of each input task and their minimum.
///
/// ```
/// use heron_api::window::WatermarkTracker;
///
/// let mut w = WatermarkTracker::new([1, 2]);
/// assert_eq!(w.update(1, 50), None);        // task 2 has said nothing yet
/// assert_eq!(w.update(2, 30), Some(30));
/// assert_eq!(w.update(2, 20), None);        // watermarks never go back
/// assert_eq!(w.update(2, 80), Some(50));
/// ```
#[derive(Debug, Clone)]
pub struct WatermarkTracker {
    inputs: BTreeMap<i32, i64>,
    current: i64,
}

impl WatermarkTracker {
    /// A tracker over the tasks that send this task watermarks.
    pub fn new(tasks: impl IntoIterator<Item = i32>) -> WatermarkTracker {
        WatermarkTracker {
            inputs: tasks.into_iter().map(|t| (t, i64::MIN)).collect(),
            current: i64::MIN,
        }
    }

    /// Records `watermark` from `task`; the combined watermark when it advanced.
    pub fn update(&mut self, task: i32, watermark: i64) -> Option<i64> {
        let w = self.inputs.entry(task).or_insert(i64::MIN);
        *w = (*w).max(watermark);
        let min = self.inputs.values().copied().min().unwrap_or(i64::MIN);
        (min > self.current).then(|| {
            self.current = min;
            min
        })
    }

    /// Forgets every watermark heard (a rollback: the inputs send theirs again).
    ///
    /// ```
    /// use heron_api::window::WatermarkTracker;
    /// let mut w = WatermarkTracker::new([1]);
    /// assert_eq!(w.update(1, 50), Some(50));
    /// w.reset();
    /// assert_eq!(w.update(1, 20), Some(20));
    /// ```
    pub fn reset(&mut self) {
        self.inputs.values_mut().for_each(|w| *w = i64::MIN);
        self.current = i64::MIN;
    }

    /// The combined watermark (`i64::MIN` until every input has sent one).
    pub fn current(&self) -> i64 {
        self.current
    }
}
