//! [`FileSource`]: text files, one record a line, split across a spout's tasks.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use heron_api::TopologyContext;

use crate::{Offsets, Record, Source, SourceError};

/// The read buffer of a [`FileSource`], in bytes, unless
/// [`with_buffer_capacity`](FileSource::with_buffer_capacity) says otherwise.
pub const DEFAULT_BUFFER_CAPACITY: usize = 64 << 10;

/// Text files read one record a line, replayably.
///
/// A record is a line without its line ending (`\n`, or `\r\n`); a last line without a
/// newline is a record too, and an empty line is an empty record. The offset of a
/// partition is a byte position in its file: where the next line starts.
///
/// **Which task reads what.** Every task of the spout is given the same list of files and
/// its own index and parallelism:
///
/// - with at least as many files as tasks, task `i` reads the whole files `j` with
///   `j % parallelism == i`, in list order, one partition each, named `file:<path>`;
/// - with fewer files than tasks, each file is read by the tasks `t` with
///   `t % files == j`, split into that many byte ranges of about equal size. A line
///   belongs to the range that holds its first byte, so every line is read by exactly one
///   task, however lines and ranges fall. Range `r` of `k` is named `file:<path>#r/k`.
///
/// A file is read as it is when the source is built: lines starting at or after its length
/// then are not read (a file that is still being written is not followed), and a file that
/// shrank is an error. Reads go through one buffer per open file
/// ([`DEFAULT_BUFFER_CAPACITY`]), and only the file being read is open.
///
/// ```
/// use heron_sources::{FileSource, Source};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("a.txt");
/// std::fs::write(&path, "one\ntwo\n\nfour").unwrap();
///
/// // Two tasks share the file: each line goes to exactly one of them.
/// let mut lines = Vec::new();
/// for task in 0..2 {
///     let mut source = FileSource::new([&path], task, 2).unwrap();
///     while let Some(record) = source.next().unwrap() {
///         lines.push(String::from_utf8(record.value).unwrap());
///     }
///     assert!(source.exhausted());
/// }
/// assert_eq!(lines, ["one", "two", "", "four"]);
///
/// // Replay from a saved position.
/// let mut source = FileSource::new([&path], 0, 1).unwrap();
/// source.next().unwrap();
/// let saved = source.offsets();
/// assert_eq!(saved.get(&format!("file:{}", path.display())), Some(4));
/// let rest: Vec<_> = std::iter::from_fn(|| source.next().unwrap()).collect();
/// source.seek(&saved).unwrap();
/// let again: Vec<_> = std::iter::from_fn(|| source.next().unwrap()).collect();
/// assert_eq!(rest, again);
/// ```
#[derive(Debug)]
pub struct FileSource {
    parts: Vec<Part>,
    /// The partition `next` reads from; the ones before it are exhausted.
    current: usize,
    buffer_capacity: usize,
}

/// One partition: a whole file or one byte range of it.
#[derive(Debug)]
struct Part {
    name: String,
    path: PathBuf,
    /// Where the partition's first line starts.
    start: u64,
    /// Lines starting here or later are not this partition's.
    end: u64,
    /// Where the next line starts.
    pos: u64,
    /// The open file, positioned at `pos`.
    reader: Option<BufReader<File>>,
}

impl FileSource {
    /// The source of task `task_index` of `parallelism` tasks that share `paths` (see the
    /// type's docs for the split). Every task must be given the same paths in the same order.
    ///
    /// # Errors
    /// [`SourceError::BadTask`] if `task_index >= parallelism`; [`SourceError::Io`] if a file
    /// this task reads cannot be read.
    pub fn new<P: Into<PathBuf>>(
        paths: impl IntoIterator<Item = P>,
        task_index: usize,
        parallelism: usize,
    ) -> Result<FileSource, SourceError> {
        if task_index >= parallelism {
            return Err(SourceError::BadTask {
                index: task_index,
                parallelism,
            });
        }
        let paths: Vec<PathBuf> = paths.into_iter().map(Into::into).collect();
        let files = paths.len();
        let mut parts = Vec::new();
        if files >= parallelism {
            for path in paths.into_iter().skip(task_index).step_by(parallelism) {
                let len = file_len(&path)?;
                parts.push(Part::new(path, 0, len, None));
            }
        } else if files > 0 {
            let j = task_index % files;
            let pieces = (parallelism - j).div_ceil(files) as u64;
            let piece = (task_index / files) as u64;
            let path = paths.into_iter().nth(j).expect("j < files");
            let len = file_len(&path)?;
            let cut = |r: u64| (u128::from(len) * u128::from(r) / u128::from(pieces)) as u64;
            let (from, end) = (cut(piece), cut(piece + 1));
            let mut part = Part::new(path, from, end, (pieces > 1).then_some((piece, pieces)));
            part.find_first_line(DEFAULT_BUFFER_CAPACITY)?;
            parts.push(part);
        }
        Ok(FileSource {
            parts,
            current: 0,
            buffer_capacity: DEFAULT_BUFFER_CAPACITY,
        })
    }

    /// [`FileSource::new`] for the task `ctx` describes: its
    /// [component index](TopologyContext::component_index) among its component's
    /// [tasks](TopologyContext::this_component_tasks).
    ///
    /// ```
    /// use heron_api::TopologyContext;
    /// use heron_sources::{FileSource, Source};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let files: Vec<_> = (0..3).map(|i| dir.path().join(format!("{i}.txt"))).collect();
    /// for f in &files {
    ///     std::fs::write(f, "x\n").unwrap();
    /// }
    /// let ctx = TopologyContext::builder("t", "lines", 5).component_tasks("lines", [4, 5]).build();
    /// let source = FileSource::for_task(&files, &ctx).unwrap();
    /// // task 5 is index 1 of 2: it reads file 1
    /// assert_eq!(source.partitions(), [format!("file:{}", files[1].display())]);
    /// ```
    pub fn for_task<P: Into<PathBuf>>(
        paths: impl IntoIterator<Item = P>,
        ctx: &TopologyContext,
    ) -> Result<FileSource, SourceError> {
        let parallelism = ctx.this_component_tasks().len();
        let index = usize::try_from(ctx.component_index()).map_err(|_| SourceError::BadTask {
            index: usize::MAX,
            parallelism,
        })?;
        FileSource::new(paths, index, parallelism)
    }

    /// Sets the read buffer of each file to `bytes` (at least 1).
    pub fn with_buffer_capacity(mut self, bytes: usize) -> FileSource {
        self.buffer_capacity = bytes.max(1);
        self
    }

    /// The files this task reads, one per partition.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.parts.iter().map(|p| p.path.as_path())
    }
}

impl Source for FileSource {
    fn partitions(&self) -> Vec<String> {
        self.parts.iter().map(|p| p.name.clone()).collect()
    }

    fn next(&mut self) -> Result<Option<Record>, SourceError> {
        while let Some(part) = self.parts.get_mut(self.current) {
            if let Some((value, offset)) = part.next_line(self.buffer_capacity)? {
                return Ok(Some(Record {
                    partition: self.current,
                    offset,
                    value,
                }));
            }
            self.current += 1;
        }
        Ok(None)
    }

    /// Moves each partition to its offset, which must lie between the partition's first
    /// line and the end of its file; on an error no partition moves.
    fn seek(&mut self, offsets: &Offsets) -> Result<(), SourceError> {
        let mut targets = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            let target = offsets.get(&part.name).unwrap_or(part.start);
            let bad = |reason| SourceError::BadOffset {
                partition: part.name.clone(),
                offset: target,
                reason,
            };
            if target < part.start {
                return Err(bad("it is before the partition's first line"));
            }
            if target > file_len(&part.path)? {
                return Err(bad("it is past the end of the file"));
            }
            targets.push(target);
        }
        for (part, target) in self.parts.iter_mut().zip(targets) {
            if part.pos != target {
                part.pos = target;
                part.reader = None;
            }
        }
        self.current = 0;
        Ok(())
    }

    fn offsets(&self) -> Offsets {
        self.parts.iter().map(|p| (p.name.clone(), p.pos)).collect()
    }

    fn exhausted(&self) -> bool {
        self.parts.iter().all(|p| p.pos >= p.end)
    }
}

impl Part {
    /// A partition of `path` for the lines starting in `from..end`, piece `r` of `k` when
    /// the file is split. Its first line starts at `from` until
    /// [`find_first_line`](Self::find_first_line) says otherwise.
    fn new(path: PathBuf, from: u64, end: u64, piece: Option<(u64, u64)>) -> Part {
        let name = match piece {
            Some((r, k)) => format!("file:{}#{r}/{k}", path.display()),
            None => format!("file:{}", path.display()),
        };
        Part {
            name,
            path,
            start: from,
            end,
            pos: from,
            reader: None,
        }
    }

    /// Moves `start` (and `pos`) to the first line starting at or after it: a line starts
    /// at 0 or after a newline.
    fn find_first_line(&mut self, capacity: usize) -> Result<(), SourceError> {
        if self.start == 0 {
            return Ok(());
        }
        let mut reader = self.open(self.start - 1, capacity)?;
        let skipped = reader.skip_until(b'\n').map_err(|e| self.io(e))?;
        self.start = self.start - 1 + skipped as u64;
        self.pos = self.start;
        self.reader = Some(reader);
        Ok(())
    }

    /// The next line and the offset after it; `None` past the partition's end.
    fn next_line(&mut self, capacity: usize) -> Result<Option<(Vec<u8>, u64)>, SourceError> {
        if self.pos >= self.end {
            self.reader = None;
            return Ok(None);
        }
        let mut reader = match self.reader.take() {
            Some(r) => r,
            None => self.open(self.pos, capacity)?,
        };
        let mut line = Vec::new();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| self.io(e))?;
        if n == 0 {
            let msg = format!(
                "the file ends at byte {}, before byte {} where it ended when it was opened",
                self.pos, self.end
            );
            return Err(self.io(io::Error::new(io::ErrorKind::UnexpectedEof, msg)));
        }
        self.pos += n as u64;
        if self.pos < self.end {
            self.reader = Some(reader);
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        Ok(Some((line, self.pos)))
    }

    fn open(&self, at: u64, capacity: usize) -> Result<BufReader<File>, SourceError> {
        let file = File::open(&self.path).map_err(|e| self.io(e))?;
        let mut reader = BufReader::with_capacity(capacity, file);
        if at > 0 {
            reader.seek(SeekFrom::Start(at)).map_err(|e| self.io(e))?;
        }
        Ok(reader)
    }

    fn io(&self, source: io::Error) -> SourceError {
        SourceError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

fn file_len(path: &Path) -> Result<u64, SourceError> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| SourceError::Io {
            path: path.to_owned(),
            source,
        })
}
