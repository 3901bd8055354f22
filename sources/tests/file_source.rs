//! FileSource: every line read by exactly one task, whatever the split; replay from saved
//! offsets.

use std::path::{Path, PathBuf};

use heron_api::State;
use heron_sources::{FileSource, Offsets, Record, Source, SourceError};

/// One expected line: where it starts, its text, the offset after it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Line {
    file: usize,
    start: u64,
    value: Vec<u8>,
    after: u64,
}

/// The lines of `content` as the documented rules say: a line starts at 0 or after a `\n`
/// (before the end); it ends at the next `\n` (dropped, with a `\r` before it) or the end.
fn expected(file: usize, content: &[u8]) -> Vec<Line> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < content.len() {
        let (end, after) = match content[start..].iter().position(|&b| b == b'\n') {
            Some(i) => (start + i, start + i + 1),
            None => (content.len(), content.len()),
        };
        let mut value = content[start..end].to_vec();
        if after > end && value.last() == Some(&b'\r') {
            value.pop();
        }
        out.push(Line {
            file,
            start: start as u64,
            value,
            after: after as u64,
        });
        start = after;
    }
    out
}

/// Reads `source` to the end; each record with the index of its file in `paths`.
fn drain(source: &mut FileSource, paths: &[PathBuf]) -> Vec<Line> {
    let part_paths: Vec<PathBuf> = source.paths().map(Path::to_owned).collect();
    let mut last = source.offsets();
    let names = source.partitions();
    let mut out = Vec::new();
    while let Some(Record {
        partition,
        offset,
        value,
    }) = source.next().unwrap()
    {
        let name = &names[partition];
        let start = last.get(name).expect("every partition has an offset");
        assert!(offset > start, "a line is at least one byte");
        last.set(name.clone(), offset);
        assert_eq!(source.offsets(), last, "offsets move by one record");
        let file = paths
            .iter()
            .position(|p| *p == part_paths[partition])
            .unwrap();
        out.push(Line {
            file,
            start,
            value,
            after: offset,
        });
    }
    assert!(source.exhausted());
    assert_eq!(source.next().unwrap(), None, "stays exhausted");
    out
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn random_content(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let lines = rng.below(40);
    for _ in 0..lines {
        let len = match rng.below(10) {
            0 => 0,
            1 => 50 + rng.below(300),
            _ => rng.below(12),
        };
        out.extend((0..len).map(|i| b'a' + (i % 26) as u8));
        if rng.below(8) == 0 {
            out.push(b'\r');
        }
        out.push(b'\n');
    }
    if rng.below(2) == 0 {
        out.extend_from_slice(b"no newline at the end");
    }
    out
}

fn fixed_contents() -> Vec<Vec<u8>> {
    let mut growing = Vec::new();
    for n in 0..50 {
        growing.extend(std::iter::repeat_n(b'x', n));
        growing.push(b'\n');
    }
    let mut long = vec![b'x'; 1000];
    long.extend_from_slice(b"\nb\n");
    vec![
        b"".to_vec(),
        b"\n".to_vec(),
        b"\n\n\n".to_vec(),
        b"a".to_vec(),
        b"a\n".to_vec(),
        b"abc\ndef\nghi".to_vec(),
        b"one\n\ntwo\n\n\nthree\n".to_vec(),
        b"x\r\ny\r\n\r\nz\r".to_vec(),
        long,
        growing,
        "héllo\nwörld\n".as_bytes().to_vec(),
    ]
}

fn write(dir: &Path, name: &str, content: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

#[test]
fn one_file_split_across_tasks_reads_every_line_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut contents = fixed_contents();
    contents.extend((0..30).map(|_| random_content(&mut rng)));
    for (i, content) in contents.iter().enumerate() {
        let path = write(dir.path(), &format!("{i}.txt"), content);
        let paths = [path.clone()];
        let want = expected(0, content);
        for parallelism in 1..=6 {
            for capacity in [1, 3, 64 << 10] {
                let mut got = Vec::new();
                for task in 0..parallelism {
                    let mut source = FileSource::new([&path], task, parallelism)
                        .unwrap()
                        .with_buffer_capacity(capacity);
                    assert_eq!(source.partitions().len(), 1);
                    got.extend(drain(&mut source, &paths));
                }
                assert_eq!(
                    got,
                    want,
                    "file {i} ({:?}) over {parallelism} tasks, buffer {capacity}",
                    String::from_utf8_lossy(content)
                );
            }
        }
    }
}

#[test]
fn range_partitions_are_named_by_piece() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.txt", b"1\n2\n3\n4\n");
    let whole = FileSource::new([&path], 0, 1).unwrap();
    assert_eq!(whole.partitions(), [format!("file:{}", path.display())]);
    let piece = FileSource::new([&path], 2, 3).unwrap();
    assert_eq!(piece.partitions(), [format!("file:{}#2/3", path.display())]);
}

#[test]
fn several_files_are_shared_out_whole_or_split() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(42);
    let mut contents = fixed_contents();
    contents.truncate(5);
    contents.push(random_content(&mut rng));
    contents.push(random_content(&mut rng));
    let paths: Vec<PathBuf> = contents
        .iter()
        .enumerate()
        .map(|(i, c)| write(dir.path(), &format!("f{i}.txt"), c))
        .collect();
    let want: Vec<Line> = contents
        .iter()
        .enumerate()
        .flat_map(|(i, c)| expected(i, c))
        .collect();
    let files = paths.len();
    for parallelism in 1..=2 * files + 1 {
        let mut got = Vec::new();
        for task in 0..parallelism {
            let mut source = FileSource::new(&paths, task, parallelism).unwrap();
            if files >= parallelism {
                let mine: Vec<String> = (task..files)
                    .step_by(parallelism)
                    .map(|j| format!("file:{}", paths[j].display()))
                    .collect();
                assert_eq!(source.partitions(), mine, "task {task} of {parallelism}");
            } else {
                assert_eq!(source.partitions().len(), 1);
            }
            got.extend(drain(&mut source, &paths));
        }
        got.sort();
        assert_eq!(got, want, "{files} files over {parallelism} tasks");
    }
}

#[test]
fn no_files_is_exhausted_from_the_start() {
    let mut source = FileSource::new(Vec::<PathBuf>::new(), 0, 3).unwrap();
    assert!(source.partitions().is_empty());
    assert!(source.exhausted());
    assert_eq!(source.next().unwrap(), None);
    assert!(source.offsets().is_empty());
}

/// Reads `n` records, saves the offsets (through an encoded State), reads the rest; a
/// fresh source seeked to the saved offsets reads exactly the rest, and so does the first
/// one seeked back.
fn check_replay(make: &dyn Fn() -> FileSource, paths: &[PathBuf]) {
    let total = drain(&mut make(), paths).len();
    for n in 0..=total {
        let mut source = make();
        for _ in 0..n {
            source.next().unwrap().unwrap();
        }
        let mut state = State::new();
        source.offsets().to_state("o.", &mut state);
        let saved = Offsets::from_state(&State::decode(&state.encode()).unwrap(), "o.").unwrap();
        assert_eq!(saved, source.offsets());
        let rest = drain(&mut source, paths);
        assert_eq!(rest.len(), total - n);

        let mut fresh = make();
        fresh.seek(&saved).unwrap();
        assert_eq!(drain(&mut fresh, paths), rest, "replay after {n} records");
        source.seek(&saved).unwrap();
        assert_eq!(
            drain(&mut source, paths),
            rest,
            "seek back after {n} records"
        );
    }
    // Empty offsets: everything again.
    let mut source = make();
    drain(&mut source, paths);
    source.seek(&Offsets::new()).unwrap();
    assert_eq!(drain(&mut source, paths).len(), total);
}

#[test]
fn seeking_to_saved_offsets_replays_exactly_the_lines_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let contents: [&[u8]; 4] = [b"a\nbb\n\nccc", b"", b"\n\nd\n", b"one line"];
    let paths: Vec<PathBuf> = contents
        .iter()
        .enumerate()
        .map(|(i, c)| write(dir.path(), &format!("{i}.txt"), c))
        .collect();
    // whole files, one task and two
    check_replay(&|| FileSource::new(&paths, 0, 1).unwrap(), &paths);
    check_replay(&|| FileSource::new(&paths, 1, 2).unwrap(), &paths);
    // a split file
    let mut rng = Rng(7);
    let big = write(dir.path(), "big.txt", &random_content(&mut rng));
    let one = [big.clone()];
    for task in 0..3 {
        check_replay(
            &|| {
                FileSource::new([&big], task, 3)
                    .unwrap()
                    .with_buffer_capacity(5)
            },
            &one,
        );
    }
}

#[test]
fn seek_ignores_other_partitions_and_refuses_offsets_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.txt", b"0123456789\nabc\nxyz\n");
    // task 1 of 2: the range starts at byte 9, inside the first line; its first line is "abc"
    let mut source = FileSource::new([&path], 1, 2).unwrap();
    let name = source.partitions().remove(0);
    assert_eq!(source.offsets().get(&name), Some(11));

    let mut other: Offsets = [("file:/elsewhere", 3)].into_iter().collect();
    source.seek(&other).unwrap();
    assert_eq!(source.next().unwrap().unwrap().value, b"abc");

    other.set(name.clone(), 5);
    let err = source.seek(&other).unwrap_err();
    assert!(
        matches!(err, SourceError::BadOffset { offset: 5, .. }),
        "{err}"
    );
    other.set(name.clone(), 100);
    let err = source.seek(&other).unwrap_err();
    assert!(err.to_string().contains("past the end"), "{err}");
    // a refused seek moves nothing
    assert_eq!(source.next().unwrap().unwrap().value, b"xyz");
}

#[test]
fn bad_tasks_and_missing_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.txt", b"a\nb\nc\n");
    assert!(matches!(
        FileSource::new([&path], 2, 2),
        Err(SourceError::BadTask {
            index: 2,
            parallelism: 2
        })
    ));
    assert!(matches!(
        FileSource::new([&path], 0, 0),
        Err(SourceError::BadTask { .. })
    ));
    let missing = dir.path().join("missing.txt");
    let err = FileSource::new([&missing], 0, 1).unwrap_err();
    assert!(matches!(err, SourceError::Io { .. }), "{err}");
    assert!(err.to_string().contains("missing.txt"), "{err}");
}

#[test]
fn a_file_that_shrinks_while_read_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a.txt", &b"line\n".repeat(10));
    let mut source = FileSource::new([&path], 0, 1).unwrap();
    std::fs::write(&path, b"line\n").unwrap();
    assert_eq!(source.next().unwrap().unwrap().value, b"line");
    let err = source.next().unwrap_err();
    assert!(err.to_string().contains("ends at byte 5"), "{err}");
}
