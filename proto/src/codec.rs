//! Heron's packet framing as a [`tokio_util::codec`] codec.
//!
//! One packet on a TCP stream (all integers big-endian):
//!
//! | size | field |
//! |---|---|
//! | u32 | `data_size`: the number of bytes that follow |
//! | i32 | `L`: length of the type name |
//! | L | fully qualified protobuf type name, e.g. `heron.proto.stmgr.TupleStreamMessage` |
//! | 32 | REQID: all zero for one-way messages, random for requests, echoed in responses |
//! | i32 | `P`: payload length |
//! | P | proto2 payload |
//!
//! so `data_size = 4 + L + 32 + 4 + P`. A packet whose `data_size` exceeds the configured
//! maximum (0 = unlimited) is refused with [`CodecError::TooLarge`] before its body is read;
//! the caller closes the connection.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::{Message, Name};
use tokio_util::codec::{Decoder, Encoder};

/// Length of a REQID in bytes.
pub const REQID_LEN: usize = 32;
/// Bytes of a packet's header that are not counted in `data_size` (the size field itself).
const SIZE_FIELD: usize = 4;
/// Longest type name we accept; Heron's are well under 100 bytes.
const MAX_TYPE_NAME: usize = 1024;

/// A request id: 32 opaque bytes, all zero for one-way messages.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ReqId(pub [u8; REQID_LEN]);

impl ReqId {
    /// The all-zero id that one-way messages carry.
    pub const ZERO: ReqId = ReqId([0; REQID_LEN]);

    /// A fresh random id for a request.
    pub fn random() -> ReqId {
        let mut id = [0u8; REQID_LEN];
        rand::fill(&mut id[..]);
        ReqId(id)
    }

    /// `true` for the all-zero id of a one-way message.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; REQID_LEN]
    }
}

impl std::fmt::Debug for ReqId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in &self.0[..8] {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// One decoded packet: the type name, the request id and the still-encoded payload.
///
/// The payload is a slice of the read buffer; decoding it with prost keeps `bytes` fields as
/// slices of the same buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    type_name: Bytes,
    /// The request id (zero for one-way messages).
    pub reqid: ReqId,
    /// The proto2 payload.
    pub payload: Bytes,
}

impl Packet {
    /// A packet from its parts. `type_name` must be a fully qualified protobuf name.
    pub fn new(type_name: impl Into<Bytes>, reqid: ReqId, payload: Bytes) -> Packet {
        Packet {
            type_name: type_name.into(),
            reqid,
            payload,
        }
    }

    /// Encodes `msg` into a packet of its own type name.
    pub fn from_message<M: Message + Name>(reqid: ReqId, msg: &M) -> Packet {
        Packet::new(M::full_name(), reqid, msg.encode_to_vec().into())
    }

    /// The fully qualified protobuf type name.
    pub fn type_name(&self) -> &str {
        // Checked to be ASCII when the packet was decoded or built from a `String`.
        std::str::from_utf8(&self.type_name).unwrap_or("<invalid>")
    }

    /// `true` when this packet carries an `M`.
    pub fn is<M: Name>(&self) -> bool {
        self.type_name() == M::full_name()
    }

    /// Decodes the payload as an `M`, refusing a packet of another type.
    pub fn decode<M: Message + Name + Default>(&self) -> Result<M, CodecError> {
        if !self.is::<M>() {
            return Err(CodecError::UnexpectedType {
                expected: M::full_name(),
                got: self.type_name().to_string(),
            });
        }
        M::decode(self.payload.clone()).map_err(|e| CodecError::Payload {
            type_name: self.type_name().to_string(),
            source: e,
        })
    }

    /// The number of bytes this packet takes on the wire.
    pub fn wire_len(&self) -> usize {
        SIZE_FIELD + 4 + self.type_name.len() + REQID_LEN + 4 + self.payload.len()
    }

    /// Appends this packet's wire form to `dst`.
    pub fn encode_into(&self, dst: &mut BytesMut) {
        put_header(dst, &self.type_name, &self.reqid, self.payload.len());
        dst.put_slice(&self.payload);
    }
}

fn put_header(dst: &mut BytesMut, type_name: &[u8], reqid: &ReqId, payload_len: usize) {
    let data_size = 4 + type_name.len() + REQID_LEN + 4 + payload_len;
    dst.reserve(SIZE_FIELD + data_size);
    dst.put_u32(data_size as u32);
    dst.put_i32(type_name.len() as i32);
    dst.put_slice(type_name);
    dst.put_slice(&reqid.0);
    dst.put_i32(payload_len as i32);
}

/// Appends the wire form of `msg` to `dst` without an intermediate buffer.
pub fn encode_message<M: Message + Name>(dst: &mut BytesMut, reqid: &ReqId, msg: &M) {
    let name = M::full_name();
    let len = msg.encoded_len();
    put_header(dst, name.as_bytes(), reqid, len);
    msg.encode(dst).expect("reserved enough room");
}

/// `msg` as one whole packet (a control message; the data path appends to its buffers with
/// [`encode_message`] instead).
pub fn frame<M: Message + Name>(reqid: &ReqId, msg: &M) -> Bytes {
    let mut b = BytesMut::new();
    encode_message(&mut b, reqid, msg);
    b.freeze()
}

/// Appends a packet of type `type_name` whose payload is `payload` (already encoded).
pub fn encode_raw(dst: &mut BytesMut, type_name: &str, reqid: &ReqId, payload: &[u8]) {
    put_header(dst, type_name.as_bytes(), reqid, payload.len());
    dst.put_slice(payload);
}

/// Why a stream of packets could not be read. Every variant means "close the connection".
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The packet is larger than the configured maximum.
    #[error("packet of {size} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The announced `data_size`.
        size: usize,
        /// The configured maximum.
        max: usize,
    },
    /// The packet's inner lengths do not add up.
    #[error("malformed packet header: {0}")]
    Malformed(String),
    /// The stream ended in the middle of a packet.
    #[error("connection closed in the middle of a packet ({0} bytes buffered)")]
    Truncated(usize),
    /// The packet is well formed but is not the message the caller expected.
    #[error("expected a {expected}, got a {got}")]
    UnexpectedType {
        /// The expected type name.
        expected: String,
        /// The received type name.
        got: String,
    },
    /// The payload does not decode as its type.
    #[error("payload of {type_name} does not decode: {source}")]
    Payload {
        /// The packet's type name.
        type_name: String,
        /// prost's error.
        source: prost::DecodeError,
    },
}

/// Heron's framing. `max_packet_size` bounds `data_size` (0 = unlimited).
#[derive(Clone, Copy, Debug)]
pub struct HeronCodec {
    max_packet_size: usize,
}

impl HeronCodec {
    /// A codec that refuses packets whose `data_size` exceeds `max_packet_size` (0 = unlimited).
    pub fn new(max_packet_size: usize) -> HeronCodec {
        HeronCodec { max_packet_size }
    }

    /// The configured maximum.
    pub fn max_packet_size(&self) -> usize {
        self.max_packet_size
    }

    /// Splits one packet off the front of `src`, if a whole one is there.
    ///
    /// This is the decoder's logic without the `tokio_util` trait, for blocking readers.
    pub fn decode_packet(&self, src: &mut BytesMut) -> Result<Option<Packet>, CodecError> {
        if src.len() < SIZE_FIELD {
            return Ok(None);
        }
        let data_size = u32::from_be_bytes([src[0], src[1], src[2], src[3]]) as usize;
        if self.max_packet_size != 0 && data_size > self.max_packet_size {
            return Err(CodecError::TooLarge {
                size: data_size,
                max: self.max_packet_size,
            });
        }
        if data_size < 4 + REQID_LEN + 4 {
            return Err(CodecError::Malformed(format!(
                "data size {data_size} is smaller than the fixed header"
            )));
        }
        // Check the type-name length as soon as it is there, so garbage is refused early.
        if src.len() >= SIZE_FIELD + 4 {
            let name_len = i32::from_be_bytes([src[4], src[5], src[6], src[7]]);
            if name_len <= 0
                || name_len as usize > MAX_TYPE_NAME
                || 4 + name_len as usize + REQID_LEN + 4 > data_size
            {
                return Err(CodecError::Malformed(format!(
                    "type name length {name_len} does not fit a packet of {data_size} bytes"
                )));
            }
        }
        if src.len() < SIZE_FIELD + data_size {
            src.reserve(SIZE_FIELD + data_size - src.len());
            return Ok(None);
        }
        let mut frame = src.split_to(SIZE_FIELD + data_size).freeze();
        frame.advance(SIZE_FIELD);
        let name_len = frame.get_i32() as usize;
        let type_name = frame.split_to(name_len);
        if !type_name.iter().all(|b| b.is_ascii_graphic()) {
            return Err(CodecError::Malformed(
                "type name is not printable ASCII".to_string(),
            ));
        }
        let mut reqid = [0u8; REQID_LEN];
        frame.copy_to_slice(&mut reqid);
        let payload_len = frame.get_i32();
        if payload_len < 0 || payload_len as usize != frame.len() {
            return Err(CodecError::Malformed(format!(
                "payload length {payload_len} but {} bytes remain",
                frame.len()
            )));
        }
        Ok(Some(Packet {
            type_name,
            reqid: ReqId(reqid),
            payload: frame,
        }))
    }
}

impl Default for HeronCodec {
    /// Heron's stream-manager maximum: 10 MB.
    fn default() -> Self {
        HeronCodec::new(10 * 1024 * 1024)
    }
}

impl Decoder for HeronCodec {
    type Item = Packet;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Packet>, CodecError> {
        self.decode_packet(src)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Packet>, CodecError> {
        match self.decode(buf)? {
            Some(p) => Ok(Some(p)),
            None if buf.is_empty() => Ok(None),
            None => Err(CodecError::Truncated(buf.len())),
        }
    }
}

impl Encoder<Packet> for HeronCodec {
    type Error = CodecError;

    fn encode(&mut self, item: Packet, dst: &mut BytesMut) -> Result<(), CodecError> {
        item.encode_into(dst);
        Ok(())
    }
}

impl Encoder<&Packet> for HeronCodec {
    type Error = CodecError;

    fn encode(&mut self, item: &Packet, dst: &mut BytesMut) -> Result<(), CodecError> {
        item.encode_into(dst);
        Ok(())
    }
}

/// Already-framed bytes (one or more whole packets), written as they are.
impl Encoder<Bytes> for HeronCodec {
    type Error = CodecError;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&item);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
