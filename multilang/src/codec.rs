//! The two serializers: Storm's JSON framing (`<json>\nend\n`) and pystorm's msgpack
//! (back-to-back msgpack values, no delimiter), chosen by `topology.multilang.serializer`.

use std::io::{BufRead, ErrorKind};

use serde::de::DeserializeOwned;

use crate::incoming::Incoming;
use crate::node::Node;

/// What a message can be read as: JSON through `serde`, msgpack through its tree.
pub trait Decoded: DeserializeOwned {
    /// The value a msgpack tree stands for.
    fn from_node(n: Node) -> Self;
}

impl Decoded for Node {
    fn from_node(n: Node) -> Node {
        n
    }
}

impl Decoded for Incoming {
    fn from_node(n: Node) -> Incoming {
        Incoming::from_node(n)
    }
}

/// The end of a JSON message: a line `end`.
const END: &[u8] = b"\nend\n";

/// Finds [`END`] (built once: building a finder costs more than a short search).
fn find_end(bytes: &[u8]) -> Option<usize> {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(END));
    FINDER.find(bytes)
}

/// The configuration key that names the serializer (Storm's).
pub const SERIALIZER_KEY: &str = "topology.multilang.serializer";

/// The largest message accepted from a subprocess (64 MiB).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// How messages are framed on the subprocess's pipes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serializer {
    /// One JSON value, a newline and a line `end` (Storm's `JsonSerializer`, the default).
    Json,
    /// One msgpack value after another (pystorm's `MsgpackSerializer`,
    /// `streamparse_run -s msgpack`).
    Msgpack,
}

/// Why a message could not be read or a serializer chosen.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The pipe closed between messages.
    #[error("the subprocess closed its stdout (end of file)")]
    Eof,
    /// The pipe closed in the middle of a message.
    #[error("the subprocess closed its stdout in the middle of a message ({0} bytes read)")]
    EofMidMessage(usize),
    /// A line is not UTF-8.
    #[error("the subprocess wrote a line that is not UTF-8")]
    InvalidUtf8,
    /// The text before `end` is not JSON.
    #[error("the subprocess wrote invalid JSON ({error}): {text:?}")]
    BadJson {
        /// The parser's complaint.
        error: String,
        /// The start of the text.
        text: String,
    },
    /// The bytes are not msgpack, or hold a value the host cannot represent.
    #[error("the subprocess wrote invalid msgpack: {0}")]
    BadMsgpack(String),
    /// A message over [`MAX_MESSAGE_BYTES`].
    #[error("the subprocess wrote a message over {MAX_MESSAGE_BYTES} bytes")]
    TooLarge,
    /// Reading the pipe failed.
    #[error("reading the subprocess's stdout failed: {0}")]
    Io(std::io::Error),
    /// `topology.multilang.serializer` names no serializer this host has.
    #[error(
        "unknown multi-lang serializer {0:?} (topology.multilang.serializer): use \
         org.apache.storm.multilang.JsonSerializer (json) or msgpack"
    )]
    UnknownSerializer(String),
}

impl Serializer {
    /// The serializer `name` (the value of `topology.multilang.serializer`) means: `None`,
    /// `json`, `JsonSerializer` or any `*.JsonSerializer` class name is JSON; `msgpack`,
    /// `MsgpackSerializer`, `pystorm.serializers.msgpack_serializer.MsgpackSerializer` or any
    /// `*.MsgpackSerializer` / `*.MessagePackSerializer` is msgpack (case-insensitive).
    /// Anything else is refused.
    pub fn from_name(name: Option<&str>) -> Result<Serializer, CodecError> {
        let Some(raw) = name.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(Serializer::Json);
        };
        let lower = raw.to_ascii_lowercase();
        let last = lower.rsplit('.').next().unwrap_or(&lower);
        match last {
            "json" | "jsonserializer" => Ok(Serializer::Json),
            "msgpack" | "msgpackserializer" | "messagepackserializer" => Ok(Serializer::Msgpack),
            _ => Err(CodecError::UnknownSerializer(raw.to_owned())),
        }
    }

    /// The name pystorm's `streamparse_run -s` takes.
    pub fn short_name(self) -> &'static str {
        match self {
            Serializer::Json => "json",
            Serializer::Msgpack => "msgpack",
        }
    }

    /// Whether `buffered` (bytes read but not decoded) holds a whole message, so decoding it
    /// cannot wait for more input: JSON looks for an `end` line; msgpack never says yes.
    pub fn has_complete(self, buffered: &[u8]) -> bool {
        match self {
            Serializer::Json => buffered.starts_with(b"end\n") || find_end(buffered).is_some(),
            Serializer::Msgpack => false,
        }
    }

    /// Appends one framed message to `out`.
    pub fn encode(self, msg: &Node, out: &mut Vec<u8>) {
        match self {
            Serializer::Json => {
                serde_json::to_writer(&mut *out, msg).expect("a Vec never fails");
                out.extend_from_slice(b"\nend\n");
            }
            Serializer::Msgpack => {
                rmpv::encode::write_value(out, &msg.to_msgpack()).expect("a Vec never fails");
            }
        }
    }

    /// Reads one message. `Err(Eof)` at a clean end of file.
    pub fn read<T: Decoded>(self, r: &mut impl BufRead) -> Result<T, CodecError> {
        match self {
            Serializer::Json => read_json(r),
            Serializer::Msgpack => read_msgpack(r),
        }
    }
}

/// Reads lines until a line `end`; blank lines are skipped, the others joined with `\n`.
///
/// A message already whole in the buffer is parsed where it lies (no copy); when that text
/// does not parse (blank lines of other whitespace, `\r\n` line ends, bad input) the line by
/// line reading below decides, so both give the same result.
fn read_json<T: Decoded>(r: &mut impl BufRead) -> Result<T, CodecError> {
    let buf = r.fill_buf().map_err(CodecError::Io)?;
    if let Some(end) = find_end(buf) {
        if let Ok(v) = serde_json::from_slice::<T>(&buf[..end]) {
            r.consume(end + END.len());
            return Ok(v);
        }
    }
    let mut text = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = r.read_until(b'\n', &mut line).map_err(CodecError::Io)?;
        if n == 0 {
            return Err(if text.is_empty() {
                CodecError::Eof
            } else {
                CodecError::EofMidMessage(text.len())
            });
        }
        let mut content: &[u8] = &line;
        if let Some(c) = content.strip_suffix(b"\n") {
            content = c;
        }
        if let Some(c) = content.strip_suffix(b"\r") {
            content = c;
        }
        if content == b"end" {
            break;
        }
        if content.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if std::str::from_utf8(content).is_err() {
            return Err(CodecError::InvalidUtf8);
        }
        if !text.is_empty() {
            text.push(b'\n');
        }
        text.extend_from_slice(content);
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(CodecError::TooLarge);
        }
    }
    match serde_json::from_slice::<T>(&text) {
        Ok(v) => Ok(v),
        Err(e) => Err(CodecError::BadJson {
            error: e.to_string(),
            text: String::from_utf8_lossy(&text[..text.len().min(200)]).into_owned(),
        }),
    }
}

fn read_msgpack<T: Decoded>(r: &mut impl BufRead) -> Result<T, CodecError> {
    // Tell a clean end of file from one inside a value.
    match r.fill_buf() {
        Ok([]) => return Err(CodecError::Eof),
        // 0xc1 is msgpack's one unused marker (rmpv would read it as nil)
        Ok([0xc1, ..]) => return Err(CodecError::BadMsgpack("reserved marker 0xc1".into())),
        Ok(_) => {}
        Err(e) => return Err(CodecError::Io(e)),
    }
    match rmpv::decode::read_value(r) {
        Ok(v) => Node::from_msgpack(v)
            .map(T::from_node)
            .map_err(CodecError::BadMsgpack),
        Err(e) => {
            let io = match &e {
                rmpv::decode::Error::InvalidMarkerRead(io)
                | rmpv::decode::Error::InvalidDataRead(io) => Some(io.kind()),
                _ => None,
            };
            if io == Some(ErrorKind::UnexpectedEof) {
                Err(CodecError::EofMidMessage(0))
            } else {
                Err(CodecError::BadMsgpack(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_json_message_is_told_from_a_partial_one() {
        let j = Serializer::Json;
        assert!(j.has_complete(b"{\"a\":1}\nend\n"));
        assert!(
            j.has_complete(b"end\n"),
            "the rest of a message whose JSON was read"
        );
        assert!(!j.has_complete(b"{\"a\":1}\nen"));
        assert!(!j.has_complete(b"{\"end\":1}"));
        assert!(!j.has_complete(b""));
        assert!(!Serializer::Msgpack.has_complete(b"\x01"));
    }

    fn read_all(ser: Serializer, bytes: &[u8]) -> Vec<Result<Node, String>> {
        let mut r = std::io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            match ser.read(&mut r) {
                Err(CodecError::Eof) => return out,
                Ok(n) => out.push(Ok(n)),
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    #[test]
    fn json_single_and_multi_line_with_blank_lines() {
        let input = b"{\"command\": \"sync\"}\nend\n\n\n{\"a\":\n [1,\n 2]}\nend\r\n[3]\nend\n";
        let got = read_all(Serializer::Json, input);
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0].as_ref().unwrap().get("command").unwrap().as_str(),
            Some("sync")
        );
        assert_eq!(
            got[1].as_ref().unwrap().get("a"),
            Some(&Node::List(vec![Node::Int(1), Node::Int(2)]))
        );
        assert_eq!(got[2].as_ref().unwrap(), &Node::List(vec![Node::Int(3)]));
    }

    #[test]
    fn json_eof_mid_message_bad_json_and_bad_utf8() {
        let got = read_all(Serializer::Json, b"{\"a\": 1}\n");
        assert!(
            got[0].as_ref().unwrap_err().contains("middle of a message"),
            "{got:?}"
        );
        let got = read_all(Serializer::Json, b"hello world\nend\n");
        assert!(
            got[0].as_ref().unwrap_err().contains("invalid JSON"),
            "{got:?}"
        );
        let got = read_all(Serializer::Json, b"\"\xff\xfe\"\nend\n");
        assert!(
            got[0].as_ref().unwrap_err().contains("not UTF-8"),
            "{got:?}"
        );
        assert!(read_all(Serializer::Json, b"").is_empty(), "clean EOF");
        assert!(
            read_all(Serializer::Json, b"\n\n").is_empty(),
            "blank lines then EOF"
        );
    }

    #[test]
    fn json_encoding_is_one_line_then_end() {
        let mut out = Vec::new();
        Serializer::Json.encode(
            &Node::map([("command", Node::str("next")), ("id", Node::str(""))]),
            &mut out,
        );
        assert_eq!(out, b"{\"command\":\"next\",\"id\":\"\"}\nend\n");
    }

    #[test]
    fn msgpack_round_trip_partial_and_garbage() {
        let msg = Node::map([
            ("command", Node::str("emit")),
            (
                "tuple",
                Node::List(vec![Node::Bytes(vec![1]), Node::Int(-3), Node::Float(0.5)]),
            ),
        ]);
        let mut out = Vec::new();
        Serializer::Msgpack.encode(&msg, &mut out);
        Serializer::Msgpack.encode(&Node::Null, &mut out);
        let got = read_all(Serializer::Msgpack, &out);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().unwrap(), &msg);
        let cut = &out[..out.len() - 3];
        let got = read_all(Serializer::Msgpack, cut);
        assert!(
            got.last().unwrap().as_ref().unwrap_err().contains("middle"),
            "{got:?}"
        );
        let got = read_all(Serializer::Msgpack, &[0xd4, 0x01, 0x00]);
        assert!(
            got[0].as_ref().unwrap_err().contains("extension"),
            "{got:?}"
        );
        let got = read_all(Serializer::Msgpack, &[0xc1]);
        assert!(
            got[0].as_ref().unwrap_err().contains("invalid msgpack"),
            "{got:?}"
        );
    }

    #[test]
    fn serializer_names() {
        use Serializer::*;
        assert_eq!(Serializer::from_name(None).unwrap(), Json);
        assert_eq!(
            Serializer::from_name(Some("org.apache.storm.multilang.JsonSerializer")).unwrap(),
            Json
        );
        assert_eq!(Serializer::from_name(Some("msgpack")).unwrap(), Msgpack);
        assert_eq!(
            Serializer::from_name(Some(
                "pystorm.serializers.msgpack_serializer.MsgpackSerializer"
            ))
            .unwrap(),
            Msgpack
        );
        let e = Serializer::from_name(Some("protobuf"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("protobuf") && e.contains("unknown"), "{e}");
    }
}
