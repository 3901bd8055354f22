//! The relay's frames, its count's report and its node arguments.

use super::*;

#[test]
fn frames_cross_a_socket_whole_however_the_reads_split_them() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut tx = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut rx, _) = listener.accept().unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut bytes = Vec::new();
    let mut sent = Vec::new();
    for (i, len) in [0usize, 1, 300, 70_000, 5].into_iter().enumerate() {
        let at = begin_frame(&mut bytes, Role::Count.byte(), i as u32);
        bytes.extend((0..len).map(|b| b as u8));
        end_frame(&mut bytes, at);
        sent.push((Role::Count.byte(), i as u32, bytes[at..].to_vec()));
    }
    // written in uneven pieces, so frames straddle reads
    let writer = std::thread::spawn(move || {
        for piece in bytes.chunks(777) {
            tx.write_all(piece).unwrap();
            tx.flush().unwrap();
        }
    });
    let mut reader = FrameReader::new();
    let mut got = Vec::new();
    while reader
        .read(&mut rx, |k, t, f| got.push((k, t, f.to_vec())))
        .unwrap()
    {}
    writer.join().unwrap();
    assert_eq!(got, sent);
}

/// The CI failure of stop 43: the stream manager left just after the deadline while the
/// count waited in a read, and the count exited without its report.
#[test]
fn a_count_whose_stream_ends_after_the_deadline_still_reports() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let duration = Duration::from_millis(250);
    let node = Node {
        role: Role::Count,
        container: 0,
        ports: vec![port, port],
        start_ns: now_ns(),
        warmup: Duration::ZERO,
        duration,
        vocabulary: 10,
        window: 0,
        cpu: None,
    };
    let stmgr = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut hello = [0u8; 5];
        s.read_exact(&mut hello).unwrap();
        // words for the count, then silence until just past the deadline, then leave
        let mut frame = Vec::new();
        let at = begin_frame(&mut frame, Role::Count.byte(), 0);
        for word in ["a", "bb", "a"] {
            frame.push(word.len() as u8);
            frame.extend_from_slice(word.as_bytes());
            frame.extend_from_slice(&7u64.to_le_bytes());
        }
        end_frame(&mut frame, at);
        s.write_all(&frame).unwrap();
        std::thread::sleep(duration + POLL / 10);
    });
    // the count is in a `POLL` long read when the deadline passes; the stream ends in it
    let result = count(&node, &mut Timestamps);
    stmgr.join().unwrap();
    assert!(result.is_ok(), "{result:?}");
}

#[test]
fn node_arguments_are_checked_and_reports_parse() {
    let args = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
    let ok = Node::parse(&args(
        "--role split --container 1 --ports 5,6 --start-ns 7 --warmup-ms 1 --duration-ms 2",
    ))
    .unwrap();
    assert_eq!(
        (ok.role, ok.container, ok.ports),
        (Role::Split, 1, vec![5, 6])
    );
    for bad in [
        "--role sink --container 0 --ports 5,6 --start-ns 7 --warmup-ms 1 --duration-ms 2",
        "--role split --container 2 --ports 5,6 --start-ns 7 --warmup-ms 1 --duration-ms 2",
        "--role split --container 0 --ports 5 --start-ns 7 --warmup-ms 1 --duration-ms 2",
    ] {
        assert!(Node::parse(&args(bad)).is_err(), "{bad}");
    }
    assert_eq!(
        parse_report("relay-node words 10 secs 1.5 total 12"),
        Some((10, 1.5, 12))
    );
    assert_eq!(parse_report("relay-node words 10"), None);
}
